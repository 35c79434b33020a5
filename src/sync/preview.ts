import type { DatasetConfig } from '../config/schema.js';
import type { LinkPolicy } from '../sources/open-file.js';
import type { ExecContext } from './context.js';
import { diffOptionsOf, diffSource } from './diff.js';
import { planSync, type SyncPlan } from './plan.js';
import { reconcile } from './reconcile.js';
import { decideStaging, keyShownFor, stagingNote, syncPlanFacts } from './key-staging.js';
import { planSource, readSource, type SourceRead } from './source-read.js';
import { WorkDir } from './work-dir.js';

/** What `plan` prints: the plan, plus the source facts. */
export interface PlanPreview {
  file: string;
  rows: number;
  rowErrors: number;
  rejected: string | null;
  /** The code of the refusal (TRUNCATED, ROW_ERRORS…), when rejected. */
  rejectedCode: string | null;
  plan: SyncPlan | null;
}

/** Read the export, bring the snapshot up to the server (reads only), diff and plan; send nothing. */
export async function previewPlan(ctx: ExecContext, ds: DatasetConfig, file: string, links?: LinkPolicy): Promise<PlanPreview> {
  return previewFrom(ctx, ds, (dir) => readSource(file, ds.source, ds.mapping, dir, { links }));
}

/** The plan of a source `produce` makes in the work folder (an export, or a restore's target); sends nothing. */
export async function previewFrom(ctx: ExecContext, ds: DatasetConfig, produce: (workDir: string) => Promise<SourceRead>): Promise<PlanPreview> {
  const work = WorkDir.open(ctx.planDir, ctx.dataset);
  try {
    const src = await produce(work.dir);
    const file = src.file;
    if (src.rejected) return { file, rows: src.rows, rowErrors: src.rowErrors.length, rejected: src.rejected.message, rejectedCode: src.rejected.code, plan: null };
    await reconcile(ctx);
    const changeset = await diffSource(src.sorted!, ctx.store.reader(), diffOptionsOf(ctx.policy), work.changesetDir());
    const plan = planSync(changeset, ctx.store.info(), ['read', 'write', 'replace', 'publish'], ctx.policy, { ratePerMinute: ds.api.rate_per_minute }, { source: planSource(src) });
    // The same rule a sync applies before sending (issue 11): what the key has shown about staging.
    if (plan.path !== 'none') plan.reason += stagingNote(decideStaging(syncPlanFacts(plan, false), keyShownFor(ctx, plan.path)));
    return { file, rows: src.rows, rowErrors: src.rowErrors.length, rejected: null, rejectedCode: null, plan };
  } finally {
    work.remove();
  }
}
