import type { StateDb } from '../../snapshot/db.js';
import { loadPlan, planDir } from './plan-files.js';
import type { DraftCounts } from '../core/plan.js';
import type { GuardResult } from '../core/guards.js';
import { sampleLines } from '../core/value-guards.js';

/** How many records of each kind approve shows before it asks. */
const SAMPLE = 5;

/** What approve would publish: the held change's counts, why it is held, the flags it needs and a few records. */
export interface HeldPreview {
  dataset: string;
  kind: 'guard' | 'publish_required' | 'staged' | 'foreign_draft';
  version: number | null;
  reason: string;
  since: number;
  file: string | null;
  /** Records before and after, and what the draft adds, changes and deletes. */
  before: number | null;
  after: number | null;
  counts: DraftCounts | null;
  requiredFlags: Record<string, boolean>;
  /** The first few records of each kind (record ids; changed field names). */
  sample: { adds: string[]; changes: Array<{ record_id: string; fields: string[] }>; deletes: string[] };
  /** The guards that hold it; a value guard with its field, numbers and samples old → new (issue 14). */
  guards: GuardResult[];
}

/** The held change of `dataset` from the state db and its plan file, or null when nothing is held. No network. */
export function heldPreview(db: StateDb, dataset: string): HeldPreview | null {
  const held = db.snapshot(dataset).held();
  if (!held) return null;
  const plan = held.planId ? (loadPlan(planDir(db.path), held.planId)?.plan ?? null) : null;
  const summary = (held.summary ?? {}) as { requiredFlags?: Record<string, boolean> | null; expected?: DraftCounts; guards?: GuardResult[] };
  const flags: Record<string, boolean | undefined> = { ...(plan?.requiredFlags ?? summary.requiredFlags ?? {}) };
  return {
    dataset,
    kind: held.kind,
    version: held.version,
    reason: held.reason,
    since: held.since,
    file: plan?.file ?? null,
    before: plan?.baseCount ?? null,
    after: plan?.resultCount ?? null,
    // What was sent (writes the server refused left out), as recorded when the change was held.
    counts: summary.expected ?? plan?.expected ?? null,
    guards: (summary.guards ?? plan?.guards.results ?? []).filter((g) => g.holds),
    requiredFlags: Object.fromEntries(Object.entries(flags).flatMap(([k, v]) => (v === true ? [[k, true] as const] : []))),
    sample: {
      // The changeset's head (the first operations of each kind, kept in the plan file): no read of its lists on disk.
      adds: (plan?.changeset.head.adds ?? []).slice(0, SAMPLE).map((r) => r.record_id),
      changes: (plan?.changeset.head.changes ?? []).slice(0, SAMPLE).map((c) => ({ record_id: c.record_id, fields: [...c.fields] })),
      deletes: (plan?.changeset.head.deletes ?? []).slice(0, SAMPLE).map((d) => d.record_id),
    },
  };
}

/** The preview as lines for a person (approve on a terminal). */
export function heldPreviewLines(p: HeldPreview): string[] {
  const out: string[] = [];
  const what = p.version === null ? 'a change kept unsent' : `draft version ${p.version}`;
  out.push(`${p.dataset}: ${what}, held since ${new Date(p.since).toISOString()}${p.file ? ` (from ${p.file})` : ''}`);
  out.push(`  why: ${p.reason}`);
  if (p.counts) {
    const c = p.counts;
    out.push(`  publishes: ${c.added} added, ${c.changed} changed, ${c.deleted} deleted${p.before !== null && p.after !== null ? ` (${p.before} records now, ${p.after} after)` : ''}`);
  }
  const flags = Object.keys(p.requiredFlags);
  if (flags.length) out.push(`  sent with: ${flags.join(', ')}`);
  for (const g of p.guards.filter((x) => x.samples?.length)) out.push(`  ${g.guard} ${g.field}: ${g.message}`, ...sampleLines(g));
  const s = p.sample;
  if (s.adds.length) out.push(`  add:    ${s.adds.join(', ')}${more(p.counts?.added, s.adds.length)}`);
  if (s.changes.length) out.push(`  change: ${s.changes.map((c) => `${c.record_id} (${c.fields.join(', ')})`).join(', ')}${more(p.counts?.changed, s.changes.length)}`);
  if (s.deletes.length) out.push(`  delete: ${s.deletes.join(', ')}${more(p.counts?.deleted, s.deletes.length)}`);
  return out;
}

function more(total: number | undefined, shown: number): string {
  return total !== undefined && total > shown ? ` … and ${total - shown} more` : '';
}
