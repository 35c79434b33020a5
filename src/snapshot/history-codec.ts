import { canonicalJson } from '../model/canonical.js';
import type { DatasetRecord } from '../model/record.js';

/**
 * One record's history entries as compact text (pure). An entry is a line:
 *
 *   seq \t line \t op \t payload        (seq and line in base 36; line empty when unknown)
 *
 * op a: the record was added (payload empty: its values are the later entries' old values, or the snapshot's);
 * op c: fields changed, payload `field=<old JSON>` per field, tab-separated, a bare `field` when it had none;
 * op d: the record was deleted, payload the whole record as it was.
 * Attributes are leaf fields, `.key`; the top fields go by name. JSON never holds a raw tab or line break.
 */

/** A field as history names it: display_name, api_value, aliases, active, or attributes.<key>. */
export type LeafField = string;

/** One decoded entry. */
export type HistoryEntry =
  | { seq: number; line: number | null; op: 'add' }
  | { seq: number; line: number | null; op: 'change'; old: Map<LeafField, unknown> }
  | { seq: number; line: number | null; op: 'delete'; record: DatasetRecord };

/** The value a field had not: absent before the change. */
export const ABSENT: unique symbol = Symbol('absent');

const TOP = ['display_name', 'api_value', 'aliases', 'active'] as const;

/** Every leaf field of a record with its value. */
export function leaves(r: DatasetRecord): Map<LeafField, unknown> {
  const out = new Map<LeafField, unknown>();
  for (const f of TOP) if (r[f] !== undefined) out.set(f, r[f]);
  for (const [k, v] of Object.entries(r.attributes ?? {})) out.set(`attributes.${k}`, v);
  return out;
}

/** The entry text of a change from `before` to `after` (both canonical record JSON), or null when no leaf differs. */
export function changeEntry(seq: number, line: number | null, before: DatasetRecord, after: DatasetRecord): string | null {
  const a = leaves(before);
  const b = leaves(after);
  const parts: string[] = [];
  for (const f of new Set([...a.keys(), ...b.keys()])) {
    const old = a.get(f);
    const now = b.get(f);
    if (old === undefined ? now === undefined : now !== undefined && canonicalJson(old) === canonicalJson(now)) continue;
    const name = short(f);
    parts.push(old === undefined ? name : `${name}=${canonicalJson(old)}`);
  }
  return parts.length ? `${head(seq, line)}c\t${parts.join('\t')}` : null;
}

export function addEntry(seq: number, line: number | null): string {
  return `${head(seq, line)}a\t`;
}

export function deleteEntry(seq: number, line: number | null, oldJson: string): string {
  return `${head(seq, line)}d\t${oldJson}`;
}

/** Decode a chunk's text into entries, oldest first. */
export function decodeEntries(text: string): HistoryEntry[] {
  const out: HistoryEntry[] = [];
  for (const row of text.split('\n')) {
    if (row === '') continue;
    const t1 = row.indexOf('\t');
    const t2 = row.indexOf('\t', t1 + 1);
    const t3 = row.indexOf('\t', t2 + 1);
    const seq = parseInt(row.slice(0, t1), 36);
    const lineText = row.slice(t1 + 1, t2);
    const line = lineText === '' ? null : parseInt(lineText, 36);
    const op = row.slice(t2 + 1, t3);
    const payload = row.slice(t3 + 1);
    if (op === 'a') out.push({ seq, line, op: 'add' });
    else if (op === 'd') out.push({ seq, line, op: 'delete', record: JSON.parse(payload) as DatasetRecord });
    else {
      const old = new Map<LeafField, unknown>();
      for (const part of payload.split('\t')) {
        const eq = part.indexOf('=');
        if (eq < 0) old.set(long(part), ABSENT);
        else old.set(long(part.slice(0, eq)), JSON.parse(part.slice(eq + 1)) as unknown);
      }
      out.push({ seq, line, op: 'change', old });
    }
  }
  return out;
}

/** Undo one entry on a record (null: absent): what it was just before the entry. */
export function undo(rec: DatasetRecord | null, e: HistoryEntry, recordId: string): DatasetRecord | null {
  if (e.op === 'add') return null;
  if (e.op === 'delete') return e.record;
  const r: DatasetRecord = rec
    ? { ...rec, attributes: { ...rec.attributes }, aliases: [...rec.aliases] }
    : { record_id: recordId, display_name: '', api_value: '', aliases: [], attributes: {}, active: true };
  for (const [f, v] of e.old) {
    if (f.startsWith('attributes.')) {
      const k = f.slice('attributes.'.length);
      if (v === ABSENT) delete r.attributes[k];
      else r.attributes[k] = v as DatasetRecord['attributes'][string];
    } else if (v !== ABSENT) (r as unknown as Record<string, unknown>)[f] = v;
  }
  return r;
}

function head(seq: number, line: number | null): string {
  return `${seq.toString(36)}\t${line === null || line <= 0 ? '' : line.toString(36)}\t`;
}

function short(f: LeafField): string {
  return f.startsWith('attributes.') ? f.slice('attributes'.length) : f;
}

function long(f: string): LeafField {
  return f.startsWith('.') ? `attributes${f}` : f;
}
