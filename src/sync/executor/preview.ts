import type { FeedSummary, RowErrorBrief } from '../outcome.js';
import type { DatasetConfig } from '../../config/schema.js';
import type { LinkPolicy } from '../../sources/open-file.js';
import type { ExecContext } from './context.js';
import type { Produced } from './run-sync.js';
import { openPlanMessage, type GateStop } from '../core/gate.js';
import { heldGateVerdict, discardedByRestore } from './held-gate.js';
import { makePlan } from './make-plan.js';
import type { SyncPlan } from '../core/plan.js';
import { reconcile } from './reconcile.js';
import * as ledger from './ledger.js';
import { journaledDraft } from './resume.js';
import { readSource } from './source-read.js';
import { desiredOf, diffDesired, diffsAsRead, feedRead, feedRowVerdict, feedWarnings, gateFileOf, withFieldsChanged } from './feed-desired.js';
import { readerMapping } from '../../feeds/view.js';
import { WorkDir } from './work-dir.js';
import { pausedFeeds, pauseOf, resumeCommand, resumeFeedCommand } from './paused.js';

/** What `plan` prints: the plan, plus the source facts. */
export interface PlanPreview {
  file: string;
  rows: number;
  rowErrors: number;
  rejected: string | null;
  /** The code of the refusal (TRUNCATED, ROW_ERRORS…), when rejected. */
  rejectedCode: string | null;
  /** A held change or a pending draft a sync would stop at before planning (then no plan). */
  stopped: GateStop | null;
  /** The connector's own open plan a sync would finish first (resumeOpenPlan), before its gate and its plan (then no plan: what it leaves is not known without sending). */
  resumes: OpenPlanAhead | null;
  /** The plan a sync would run now (the same planner, with the same inputs: what the key has shown, the held gate, the upload). */
  plan: SyncPlan | null;
  /** The dataset is paused (issue 14): a sync would publish nothing until resume; a restore still would. */
  paused: { since: string; by: string; resume: string; feed?: string } | null;
  /** A restore's plan: the held change it would discard (a newer change replaces a held one), said for the person. */
  discardsHeld?: string;
  /** The first row errors of the read (line, column, code), for a rejection's message; the reject file has them all. */
  firstRowErrors?: RowErrorBrief[];
  /** Where the read's reject file was written, when it was. */
  rejectFile?: string | null;
  /** What the sync's summary would warn of (a feed's empty cells, delete rows of records not owned…). */
  warnings?: string[];
  /** A feed's file: what its rows would match (the rows matching no record among them). */
  feed?: FeedSummary;
}

/** An open plan of ours that a sync finishes before it plans this export. */
export interface OpenPlanAhead {
  planId: string;
  /** The draft its journal says it staged into, or null (not staged yet). */
  draftVersion: number | null;
  message: string;
}

/** Row errors a rejected plan names (the reject file lists them all). */
const FIRST_ROW_ERRORS = 5;

/** Read the export, bring the snapshot up to the server (reads only), diff and plan as a sync would; send nothing. */
export async function previewPlan(ctx: ExecContext, ds: DatasetConfig, file: string, opts: { stageOnly: boolean; links?: LinkPolicy }): Promise<PlanPreview> {
  return previewFrom(ctx, ds, async (dir) => ({ src: feedRead(ds, await readSource(file, ds.source, readerMapping(ds, (id) => ctx.store.get(id) !== null), dir, { links: opts.links, valueFlags: diffsAsRead(ds) }), ctx.clock.now()) }), opts);
}

/** The plan of what `produce` makes in the work folder (an export read, or a restore's target, issue 14); sends nothing. */
export async function previewFrom(ctx: ExecContext, ds: DatasetConfig, produce: (workDir: string) => Promise<Produced>, opts: { stageOnly: boolean }): Promise<PlanPreview> {
  const work = WorkDir.open(ctx.planDir, ctx.dataset);
  try {
    const { src, restore } = await produce(work.dir);
    const file = src.file;
    const p = pauseOf(ctx);
    // Else the feed whose file it is (`plan --feed F`): a sync of it would stop at FEED_PAUSED.
    const [fp] = p || restore ? [] : pausedFeeds(ctx, [ds.feed]);
    const paused = p
      ? { since: new Date(p.at).toISOString(), by: p.by, resume: resumeCommand(ctx.dataset) }
      : fp
        ? { since: new Date(fp.pause.at).toISOString(), by: fp.pause.by, resume: resumeFeedCommand(ctx.dataset, fp.feed), feed: fp.feed }
        : null;
    const firstRowErrors = src.rowErrors.slice(0, FIRST_ROW_ERRORS).map((e) => ({ line: e.line, column: e.column, code: e.code }));
    const facts = { file, rows: src.rows, rowErrors: src.rowErrors.length, paused, firstRowErrors, rejectFile: src.rejectFile };
    if (src.rejected) return { ...facts, rejected: src.rejected.message, rejectedCode: src.rejected.code, stopped: null, resumes: null, plan: null };
    // As a sync: the open plan is resumed before the gate (run-sync.ts), so its draft is never met as someone else's.
    const resumes = openPlanAhead(ctx);
    if (resumes) return { ...facts, rejected: null, rejectedCode: null, stopped: null, resumes, plan: null };
    const stopped = await heldGateVerdict(ctx, gateFileOf(ds, src));
    if (stopped) return { ...facts, rejected: null, rejectedCode: null, stopped, resumes: null, plan: null };
    // The gate let the plan go ahead past a held change: a sync would discard it (replace_held).
    const held = restore ? ctx.store.held() : null;
    const discards = held ? { discardsHeld: discardedByRestore(held) } : {};
    const view = await reconcile(ctx);
    const desired = restore ? null : desiredOf(ctx, ds, src, work.changesetDir());
    const badRows = desired ? feedRowVerdict(ds, src, desired) : null;
    if (badRows) return { ...facts, rowErrors: facts.rowErrors + desired!.rowErrors, rejected: badRows.message, rejectedCode: badRows.code, stopped: null, resumes: null, plan: null };
    const changeset = await diffDesired(ctx, desired ?? { sorted: src.sorted! }, work.changesetDir());
    const plan = makePlan(ctx, ds, src, changeset, view.dataset.active_version, { stageOnly: opts.stageOnly, ...(restore ? { restore } : {}), merged: desired?.feed ?? null });
    const warnings = [...(src.rowsNote ? [src.rowsNote] : []), ...(desired?.feed ? feedWarnings(file, desired.feed) : [])];
    return { ...facts, ...discards, ...(warnings.length > 0 ? { warnings } : {}), ...(desired?.feed ? { feed: withFieldsChanged(ds, desired, changeset).feed ?? desired.feed } : {}), rejected: null, rejectedCode: null, stopped: null, resumes: null, plan };
  } finally {
    work.remove();
  }
}

/** The dataset's open plan, as resumeOpenPlan would find it (read only). */
function openPlanAhead(ctx: ExecContext): OpenPlanAhead | null {
  const open = ledger.openPlan(ctx);
  if (!open) return null;
  const draftVersion = journaledDraft(ledger.stepsOf(ctx, open.planId));
  return { planId: open.planId, draftVersion, message: openPlanMessage(open.planId, draftVersion) };
}
