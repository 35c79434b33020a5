import type { DatasetRecord } from './record.js';
import { NONZERO, RecordValues, TOP_FIELDS, ZEROABLE } from './record-values.js';

/**
 * What the value guards (sync/core/value-guards.ts) count a field's value as, and the counts of a set of
 * records by it: pure record semantics, used by the diff's tally and by the snapshot's kept bases (tallies.ts).
 */

/** A field's base counts: records whose value could be zeroed, and could jump. */
interface Base {
  zeroable: number;
  nonzero: number;
}

/** What a value counts for in the bases: ZEROABLE when not zero or empty, NONZERO when a non-zero number. */
export function baseFlags(v: unknown): number {
  const n = numeric(v);
  return (isZeroOrEmpty(v) ? 0 : ZEROABLE) | (n !== null && n !== 0 ? NONZERO : 0);
}

/**
 * Zero, an empty string, null, absent, or an empty list. A text value counts
 * as zero when it reads as the number zero after NFKC normalisation (a
 * Japanese POS may export full-width "０"); only this test normalises, the
 * value sent is never changed.
 */
export function isZeroOrEmpty(v: unknown): boolean {
  if (v === undefined || v === null || v === 0 || v === '') return true;
  if (typeof v === 'string') return v.trim() === '' || numeric(v.normalize('NFKC')) === 0;
  return Array.isArray(v) && v.length === 0;
}

/** A number, or a string that is one (an export may keep prices as text); null otherwise. */
export function numeric(v: unknown): number | null {
  if (typeof v === 'number') return Number.isFinite(v) ? v : null;
  if (typeof v !== 'string' || v.trim() === '') return null;
  const n = Number(v);
  return Number.isFinite(n) ? n : null;
}

/**
 * The value-guard bases (baseFlags) of every field of a set of records, TOP_FIELDS and each `attributes.<key>`, as
 * records are added (+1) and taken away (-1), read from their canonical JSON as ValueTallier.comparedJson reads it.
 * The snapshot keeps these of its owned records (value-bases.ts); an indexed diff takes away the records it read.
 */
export class FieldBaseCounts {
  readonly #bases = new Map<string, Base>();
  readonly #values = new RecordValues(baseFlags);
  readonly #attrField = attributeFieldNames();

  add(json: string, sign: 1 | -1 = 1): void {
    const r = this.#values;
    if (!r.read(json)) {
      this.addRecord(JSON.parse(json) as DatasetRecord, sign);
      return;
    }
    for (let i = 0; i < r.topCount; i++) {
      const k = r.topKeys[i]!;
      if ((TOP_FIELDS as readonly string[]).includes(k)) this.#count(k, r.topFlags[i]!, sign);
    }
    for (let i = 0; i < r.attrCount; i++) this.#count(this.#attrField(r.attrKeys[i]!), r.attrFlags[i]!, sign);
  }

  /** add() of a record parsed already. */
  addRecord(rec: DatasetRecord, sign: 1 | -1 = 1): void {
    for (const f of TOP_FIELDS) this.#count(f, baseFlags(rec[f]), sign);
    for (const [k, v] of Object.entries(rec.attributes ?? {})) this.#count(this.#attrField(k), baseFlags(v), sign);
  }

  /** The fields whose counts are not both zero. */
  bases(): Record<string, Base> {
    const out: Record<string, Base> = {};
    for (const [f, b] of this.#bases) if (b.zeroable !== 0 || b.nonzero !== 0) out[f] = { ...b };
    return out;
  }

  #count(field: string, flags: number, sign: number): void {
    if (flags === 0) return;
    const b = this.#bases.get(field) ?? { zeroable: 0, nonzero: 0 };
    this.#bases.set(field, b);
    if (flags & ZEROABLE) b.zeroable += sign;
    if (flags & NONZERO) b.nonzero += sign;
  }

}

/** `attributes.<key>` for each key, built once per key (a tally names the same few keys for every record). */
export function attributeFieldNames(): (key: string) => string {
  const names = new Map<string, string>();
  return (key) => {
    let f = names.get(key);
    if (f === undefined) {
      f = `attributes.${key}`;
      names.set(key, f);
    }
    return f;
  };
}
