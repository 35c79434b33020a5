import type { DatasetConfig } from '../../config/schema.js';
import type { Changeset } from '../core/changeset.js';
import type { ExecContext } from './context.js';
import type { Importability } from '../core/importable.js';
import { keyOf } from './key-knowledge.js';
import { KNOWN_ROLES, planSync, type PlanBatchFile, type PlanFeed, type PlanRestore, type SyncPlan } from '../core/plan.js';
import { planSource, type SourceRead } from './source-read.js';
import { planFeedOf } from './feed-desired.js';
import type { FeedSummary } from '../outcome.js';

/** What a sync (and `plan`, which must print what a sync would run) decides besides the export. */
export interface PlanChoices {
  /** Stage only, never publish (`sync --no-publish`). */
  stageOnly: boolean;
  /** The read's importability, or what this sync learnt since (the upload refused, the export changed). */
  importable?: Importability;
  /** The plan a fall-back replaces. */
  supersedes?: string | null;
  /** The source is a history point (issue 14): the plan is a restore's. */
  restore?: PlanRestore;
  /** What the merge stage found of a feed's file (issue 13): the missing strategy's count is guarded. */
  merged?: FeedSummary | null;
  /** Several files make the plan (issue 13): their lead feed and each file. */
  batch?: { lead: PlanFeed; files: PlanBatchFile[] } | null;
}

/**
 * The one place a plan is made of a read export: planSync with every input
 * gathered from the state database (snapshot, what the key has shown), the
 * dataset's settings and the clock. `sync` and `plan` both call it, so the
 * plan printed is the plan run.
 */
export function makePlan(ctx: ExecContext, ds: DatasetConfig, src: SourceRead, changeset: Changeset, activeVersion: number, choices: PlanChoices): SyncPlan {
  const feed = choices.restore ? null : (choices.batch?.lead ?? planFeedOf(ds, src, choices.merged));
  return planSync({
    dataset: ctx.dataset,
    changeset,
    // The snapshot as just reconciled; the base is the server's active version (If-Match). An update feed's
    // file is no catalogue: the row-drop guard compares catalogues only (issue 13).
    snapshot: { ...ctx.store.state(), activeVersion, ...(feed && feed.role !== 'full' ? { lastSource: null } : {}) },
    // A key that refused its last publish is planned without the role, so `plan` says a person publishes.
    key: keyOf(ctx, ctx.store.publishDenied(ctx.client.keyId) ? KNOWN_ROLES.filter((r) => r !== 'publish') : KNOWN_ROLES),
    policy: ctx.policy,
    rateBudget: { ratePerMinute: ds.api.rate_per_minute },
    source: planSource(src, choices.importable ?? src.importability, headerLineOf(ds)),
    stageOnly: choices.stageOnly,
    planDir: ctx.planDir,
    now: ctx.clock.now(),
    supersedes: choices.supersedes ?? null,
    ...(choices.restore ? { restore: choices.restore } : {}),
    ...(feed ? { feed } : {}),
    ...(choices.batch ? { batch: choices.batch.files } : {}),
  });
}

/** Where the header is in an upload (importable.ts allows only a fixed line: no header.match). */
function headerLineOf(ds: DatasetConfig): number {
  return ((ds.source as { header?: { skip_lines?: number } } | undefined)?.header?.skip_lines ?? 0) + 1;
}
