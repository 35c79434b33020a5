import type Database from 'better-sqlite3';
import { canonicalJson } from '../model/canonical.js';
import type { DatasetRecord } from '../model/record.js';
import { ABSENT, leaves, type HistoryEntry, type LeafField } from '../snapshot/history-codec.js';
import { HistoryReader, type HistoryVersion } from './reader.js';

/** How many earlier values of a field `why` lists. */
export const PREVIOUS_VALUES = 5;

/** Where a value came from: the change (version row) and the export line. */
export interface Origin {
  version: number | null;
  seq: number;
  at: string;
  /** sync: from an export; restore; server: found on the server by a reconcile (not the connector's); base: before history began. */
  kind: HistoryVersion['kind'];
  sync: string | null;
  file: string | null;
  fileHash: string | null;
  line: number | null;
  /** The feed whose file it was (issue 13); null for a dataset of one full feed. */
  feed: string | null;
}

/** One field of the record as published: its value, where it was set, and the values before. */
export interface FieldWhy {
  field: LeafField;
  value: unknown;
  /** null: set before the history kept begins. */
  set: Origin | null;
  previous: Array<{ value: unknown; set: Origin | null }>;
}

/** What `why` answers for one record (offline). */
export interface WhyReport {
  dataset: string;
  record_id: string;
  /** published (owned), not_owned (made or changed outside the connector), deleted, unknown. */
  status: 'published' | 'not_owned' | 'deleted' | 'unknown';
  record: DatasetRecord | null;
  fields: FieldWhy[];
  /** A deleted record: when, by which export and under which delete ratio. */
  deleted: (Origin & { deleteRatio: number | null; deletable: number | null; approved: boolean; record: DatasetRecord }) | null;
  /** The oldest kept version of the history (what `why` can look back to). */
  historyFrom: { version: number | null; at: string } | null;
}

/** Answer `why <dataset> <record_id>` from the state database alone. */
export function why(conn: Database.Database, dataset: string, recordId: string): WhyReport {
  const h = new HistoryReader(conn, dataset);
  const row = conn.prepare('SELECT json, owned FROM records WHERE dataset = ? AND record_id = ?').get(dataset, recordId) as { json: string; owned: number } | undefined;
  const entries = h.entries(recordId);
  const oldest = h.oldest();
  const versions = new Map<number, HistoryVersion | null>();
  const origin = (e: HistoryEntry): Origin => {
    if (!versions.has(e.seq)) versions.set(e.seq, h.version(e.seq));
    const v = versions.get(e.seq) ?? null;
    return {
      version: v?.version ?? null,
      seq: e.seq,
      at: new Date(v?.at ?? 0).toISOString(),
      kind: v?.kind ?? 'sync',
      sync: v?.planId ?? null,
      file: v?.file ?? null,
      fileHash: v?.fileHash ?? null,
      line: e.line,
      feed: typeof v?.detail?.feed === 'string' ? v.detail.feed : null,
    };
  };
  const report: WhyReport = {
    dataset,
    record_id: recordId,
    status: 'unknown',
    record: null,
    fields: [],
    deleted: null,
    historyFrom: oldest ? { version: oldest.version, at: new Date(oldest.at).toISOString() } : null,
  };
  if (!row) {
    const last = entries.at(-1);
    if (last?.op !== 'delete') return report;
    const o = origin(last);
    const d = versions.get(last.seq)?.detail ?? null;
    report.status = 'deleted';
    report.record = last.record;
    report.deleted = {
      ...o,
      deleteRatio: typeof d?.delete_ratio === 'number' ? d.delete_ratio : null,
      deletable: typeof d?.deletable === 'number' ? d.deletable : null,
      approved: d?.approved === true,
      record: last.record,
    };
    report.fields = fieldsOf(last.record, entries.slice(0, -1), origin);
    return report;
  }
  const record = JSON.parse(row.json) as DatasetRecord;
  report.status = row.owned === 1 ? 'published' : 'not_owned';
  report.record = record;
  report.fields = fieldsOf(record, entries, origin);
  return report;
}

/** Per leaf field of `record`: the newest entry that set it, and the values it had before (newest first). */
function fieldsOf(record: DatasetRecord, entries: HistoryEntry[], origin: (e: HistoryEntry) => Origin): FieldWhy[] {
  // Only the entries since the record last came into being: an add or a delete ends the walk back.
  const out: FieldWhy[] = [];
  for (const [field, value] of leaves(record)) {
    const f: FieldWhy = { field, value, set: null, previous: [] };
    let pending: { value: unknown } | null = null; // a previous value whose origin is the next older entry touching the field
    for (let k = entries.length - 1; k >= 0; k--) {
      const e = entries[k]!;
      if (e.op === 'delete') break;
      const touches = e.op === 'add' || e.old.has(field);
      if (!touches) continue;
      const o = origin(e);
      if (f.set === null && pending === null) f.set = o;
      else if (pending) {
        f.previous.push({ value: pending.value, set: o });
        pending = null;
      }
      if (e.op === 'add') break;
      const old = e.old.get(field);
      if (f.previous.length >= PREVIOUS_VALUES) break;
      if (old === ABSENT) break;
      pending = { value: old };
    }
    if (pending) f.previous.push({ value: pending.value, set: null });
    out.push(f);
  }
  return out;
}

/** The report as lines for a person. */
export function whyLines(r: WhyReport): string[] {
  const out: string[] = [];
  const where = (o: Origin | null): string => {
    if (!o) return 'before the history kept';
    const from = o.kind === 'server' ? 'found on the server by a reconcile (not set by the connector)' : o.kind === 'base' ? 'before history began' : o.file ? `${o.feed ? `feed ${o.feed}: ` : ''}${o.file}${o.line ? ` line ${o.line}` : ''} (sha256 ${o.fileHash?.slice(0, 12) ?? '?'}…)` : o.kind;
    return `version ${o.version ?? '-'} at ${o.at}, ${o.kind === 'restore' ? 'restore' : 'sync'} ${o.sync ?? '-'}: ${from}`;
  };
  const id = `${r.dataset} ${r.record_id}`;
  if (r.status === 'unknown') {
    out.push(`${id}: not in the published dataset and not in the history kept${r.historyFrom ? ` (since version ${r.historyFrom.version ?? '-'}, ${r.historyFrom.at})` : ''}`);
    return out;
  }
  if (r.status === 'not_owned') out.push(`${id}: not owned by the connector (made or edited outside it, e.g. in the portal); the connector never changes or deletes it`);
  if (r.status === 'deleted') {
    const d = r.deleted!;
    out.push(`${id}: deleted in ${where(d)}`);
    out.push(`  delete guard: ${d.deleteRatio === null ? 'ratio unknown' : `${(d.deleteRatio * 100).toFixed(1)}% of ${d.deletable ?? '?'} deletable records deleted`}${d.approved ? ', approved by a person' : ''}`);
    out.push('  as it was:');
  }
  if (r.status === 'published') out.push(`${id}: published, owned by the connector`);
  for (const f of r.fields) {
    out.push(`  ${f.field} = ${canonicalJson(f.value)}: ${where(f.set)}`);
    for (const p of f.previous) out.push(`      was ${canonicalJson(p.value)}: ${where(p.set)}`);
  }
  return out;
}
