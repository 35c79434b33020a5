import { canonicalJson, sameJson } from '../../model/canonical.js';
import type { DatasetRecord } from '../../model/record.js';
import type { GuardEvaluation, GuardResult } from './guards.js';
import type { FieldTally, ValueSample, ValueTally } from './changeset.js';
import { NONZERO, RecordValues, TOP_FIELDS, ZEROABLE } from '../../model/record-values.js';
import { attributeFieldNames, baseFlags, isZeroOrEmpty, numeric } from '../../model/value-flags.js';

export { baseFlags, FieldBaseCounts, isZeroOrEmpty } from '../../model/value-flags.js';

export type { FieldTally, ValueSample, ValueTally } from './changeset.js';

/**
 * Guards on field values (issue 14): the share of compared records whose value
 * of a field changes, is set to zero or empty, or jumps by more than a factor
 * or a percentage, in one sync. The diff tallies what it sees (ValueTally, in
 * the changeset summary, so the plan file keeps it for the check before
 * publishing); evaluateValueGuards turns the tally into guard results.
 */

/** One value-guard rule of a dataset's policy (`guards.values`). */
export interface ValueRule {
  /** `attributes.<key>`, a top-level field (display_name, api_value, aliases, active), or `*` for every field not named by another rule. */
  field: string;
  max_changed_ratio?: number | undefined;
  max_zeroed_ratio?: number | undefined;
  jump_factor?: number | undefined;
  jump_percent?: number | undefined;
  max_jump_ratio?: number | undefined;
  /** Fewer compared records than this: the shares are not applied (a ratio of a handful is noise). */
  min_compared: number;
  /** Below min_compared: hold when every compared record (at least this many) is zeroed or jumps; 0 off (default 3). */
  min_all_compared?: number | undefined;
}

/**
 * Below min_compared, a zeroed or jump guard holds only when every compared
 * record is hit, from this many records: one or two items selling out at
 * once is an ordinary day for a tiny shop, three of three going to 0 in one
 * export is the POS bug the guard is for (and costs one approve when not).
 */
export const DEFAULT_MIN_ALL_COMPARED = 3;

/** Samples kept per field and kind (guard.held shows five, old → new). */
export const VALUE_SAMPLES = 5;

/** The rule that applies to a field: the one naming it, else `*`; null when none. */
export function ruleFor(rules: readonly ValueRule[], field: string): ValueRule | null {
  return rules.find((r) => r.field === field) ?? rules.find((r) => r.field === '*') ?? null;
}

/** Counts value changes record by record, as the diff finds changed records (pure; rules decide what a jump is). */
export class ValueTallier {
  readonly #fields: Record<string, FieldTally> = {};
  readonly #bases: Record<string, Base> = {};
  /** ruleFor of each field met, and each attribute key's field name (a million records name the same few). */
  readonly #rules = new Map<string, ValueRule | null>();
  readonly #attrField = attributeFieldNames();
  readonly #values = new RecordValues(baseFlags);
  /** The base counters of each shape's fields (comparedFlags), for the shapes last given. */
  #shapesOf: readonly (readonly string[])[] | null = null;
  #byShape: Array<Array<Base | null>> = [];

  constructor(private readonly rules: readonly ValueRule[]) {}

  /**
   * Every compared record (changed or not), as it was before: counts the
   * records a field's value could be zeroed from (not zero or empty) and could
   * jump from (a non-zero number). These, not all compared records, are the
   * zeroed and jump guards' bases: an item already at stock 0 cannot be set
   * to 0, so it must not make "every stock zeroed" look like "not every".
   */
  compared(before: DatasetRecord): void {
    if (this.rules.length === 0) return;
    for (const f of TOP_FIELDS) this.#base(f, baseFlags(before[f]));
    for (const [k, v] of Object.entries(before.attributes ?? {})) this.#base(this.#attrField(k), baseFlags(v));
  }

  /** compared() of a record given as its canonical JSON (the snapshot's text), read without parsing it whole when it can be. */
  comparedJson(json: string): void {
    if (this.rules.length === 0) return;
    const r = this.#values;
    if (!r.read(json)) {
      this.compared(JSON.parse(json) as DatasetRecord);
      return;
    }
    for (const f of TOP_FIELDS) {
      let flags = ABSENT;
      for (let i = 0; i < r.topCount; i++) if (r.topKeys[i] === f) flags = r.topFlags[i]!;
      this.#base(f, flags);
    }
    for (let i = 0; i < r.attrCount; i++) this.#base(this.#attrField(r.attrKeys[i]!), r.attrFlags[i]!);
  }

  /**
   * compared() of a record given as the flags ValueFlagsWriter wrote for it
   * (`shapes`: that writer's), which must be of the record whose text
   * comparedJson would read. False, counting nothing, when they cannot be
   * read (another writer's shape, not flags): the caller reads the text.
   */
  comparedFlags(flags: string, shapes: readonly (readonly string[])[]): boolean {
    if (this.rules.length === 0) return true;
    const dot = flags.indexOf('.');
    if (dot < 1) return false;
    const bases = this.#shapeBases(Number(flags.slice(0, dot)), shapes);
    if (bases === null || flags.length !== dot + 1 + bases.length) return false;
    for (let i = dot + 1; i < flags.length; i++) {
      const d = flags.charCodeAt(i) - 0x30;
      if (d < 0 || d > 3) return false;
    }
    for (let i = 0; i < bases.length; i++) {
      const b = bases[i];
      if (!b) continue;
      const d = flags.charCodeAt(dot + 1 + i) - 0x30;
      if (d & ZEROABLE) b.zeroable++;
      if (d & NONZERO) b.nonzero++;
    }
    return true;
  }

  /** The base counters of a shape's fields (null where no rule applies), TOP_FIELDS first; null when there is no such shape. */
  #shapeBases(shape: number, shapes: readonly (readonly string[])[]): Array<Base | null> | null {
    if (this.#shapesOf !== shapes) {
      this.#shapesOf = shapes;
      this.#byShape = [];
    }
    let bases = this.#byShape[shape];
    if (bases === undefined) {
      const keys = Number.isInteger(shape) ? shapes[shape] : undefined;
      if (keys === undefined) return null;
      const fields = [...TOP_FIELDS, ...keys.map((k) => this.#attrField(k))];
      bases = fields.map((f) => (this.#ruleFor(f) ? (this.#bases[f] ??= { zeroable: 0, nonzero: 0 }) : null));
      this.#byShape[shape] = bases;
    }
    return bases;
  }


  #ruleFor(field: string): ValueRule | null {
    let r = this.#rules.get(field);
    if (r === undefined) {
      r = ruleFor(this.rules, field);
      this.#rules.set(field, r);
    }
    return r;
  }

  /**
   * A compared record that changed: tally each field whose value differs. `fields`: the top-level fields that
   * differ (changedFields), when the caller has them: no other field, nor attribute key, can.
   */
  observe(before: DatasetRecord, after: DatasetRecord, fields?: readonly string[]): void {
    if (this.rules.length === 0) return;
    for (const f of TOP_FIELDS) {
      if (fields && !fields.includes(f)) continue;
      const a = before[f];
      const b = after[f];
      if (!sameJson(a, b)) this.#one(f, before.record_id, a, b);
    }
    if (fields && !fields.includes('attributes')) return;
    const ba = before.attributes ?? {};
    const aa = after.attributes ?? {};
    for (const k of new Set([...Object.keys(ba), ...Object.keys(aa)])) {
      if (!sameJson(ba[k], aa[k])) this.#one(this.#attrField(k), before.record_id, ba[k], aa[k]);
    }
  }

  tally(): ValueTally {
    for (const [f, t] of Object.entries(this.#fields)) {
      t.zeroable = this.#bases[f]?.zeroable ?? 0;
      t.nonzero = this.#bases[f]?.nonzero ?? 0;
    }
    return { fields: this.#fields };
  }

  /** Count a compared record's value of `field` by its baseFlags. */
  #base(field: string, flags: number): void {
    if (!this.#ruleFor(field)) return;
    const b = (this.#bases[field] ??= { zeroable: 0, nonzero: 0 });
    if (flags & ZEROABLE) b.zeroable++;
    if (flags & NONZERO) b.nonzero++;
  }

  #one(field: string, id: string, old: unknown, now: unknown): void {
    const rule = this.#ruleFor(field);
    if (!rule) return;
    const t = (this.#fields[field] ??= { changed: 0, zeroed: 0, jumped: 0, samples: { changed: [], zeroed: [], jumped: [] } });
    const sample = { record_id: id, old: old ?? null, new: now ?? null };
    t.changed++;
    keep(t.samples.changed, sample);
    if (isZeroOrEmpty(now) && !isZeroOrEmpty(old)) {
      t.zeroed++;
      keep(t.samples.zeroed, sample);
    }
    if (jumps(old, now, rule)) {
      t.jumped++;
      keep(t.samples.jumped, sample);
    }
  }
}

/** A field's base counts: compared records whose value could be zeroed, and could jump. */
interface Base {
  zeroable: number;
  nonzero: number;
}

/** The flags of a field a record does not have. */
const ABSENT = 0;

/**
 * The value guards that hold, from a changeset's tally and the records it
 * compared (present before and after). Each guard counts against its own
 * base: changes against every compared record, zeroed against those that had
 * a value to lose (tally.zeroable), jumps against those that had a non-zero
 * number (tally.nonzero); a plan made before these were tallied uses compared.
 * The base decides both the share and, below min_compared, "every one".
 */
export function evaluateValueGuards(tally: ValueTally | undefined, compared: number, rules: readonly ValueRule[]): GuardResult[] {
  if (!tally) return [];
  const out: GuardResult[] = [];
  for (const [field, t] of Object.entries(tally.fields)) {
    const rule = ruleFor(rules, field);
    if (!rule || compared === 0) continue;
    const minAll = rule.min_all_compared ?? DEFAULT_MIN_ALL_COMPARED;
    const check = (guard: GuardResult['guard'], n: number, base: number, of: string, limit: number | undefined, what: string, samples: ValueSample[]): void => {
      if (limit === undefined || base === 0) return;
      // A small dataset (issue 14): below min_compared only "every record" counts, and only for zeroed and jumps.
      const small = base < rule.min_compared;
      if (small && (guard === 'value_changed_ratio' || minAll === 0 || base < minAll || n < base)) return;
      const ratio = n / base;
      if (ratio <= limit) return;
      const why = small ? `all ${n} ${of} (fewer than min_compared ${rule.min_compared}: held when every one is)` : `${n} of ${base} ${of} (${pct(ratio)}; limit ${pct(limit)})`;
      out.push({
        guard,
        holds: true,
        allowedByPolicy: false,
        value: Math.round(ratio * 10_000) / 10_000,
        limit,
        field,
        count: n,
        compared: base,
        samples: samples.slice(0, VALUE_SAMPLES),
        message: `${field} ${what} in ${why}`,
      });
    };
    check('value_changed_ratio', t.changed, compared, 'compared records', rule.max_changed_ratio, 'changes', t.samples.changed);
    check('value_zeroed_ratio', t.zeroed, t.zeroable ?? compared, 'records that had a value', rule.max_zeroed_ratio, 'is set to zero or empty', t.samples.zeroed);
    check('value_jump_ratio', t.jumped, t.nonzero ?? compared, 'records that had a non-zero number', rule.max_jump_ratio, `jumps ${jumpWords(rule)}`, t.samples.jumped);
  }
  return out;
}

/** The count guards' evaluation with the value guards added: the one verdict the planner and the check before publishing use. */
export function withValueGuards(ev: GuardEvaluation, tally: ValueTally | undefined, compared: number, rules: readonly ValueRule[]): GuardEvaluation {
  const values = evaluateValueGuards(tally, compared, rules);
  if (values.length === 0) return ev;
  return { ...ev, holds: true, results: [...ev.results, ...values] };
}

/**
 * Both numeric and non-zero, and the new one turns a positive number negative
 * (a POS bug negating every stock, or setting it to -1, is no factor away), or
 * is more than the factor times or the percentage away from the old.
 */
function jumps(old: unknown, now: unknown, rule: ValueRule): boolean {
  const a = numeric(old);
  const b = numeric(now);
  if (a === null || b === null || a === 0 || b === 0) return false;
  if (a > 0 && b < 0) return true;
  if (rule.jump_factor !== undefined) {
    const f = Math.abs(b / a);
    if (f > rule.jump_factor || f < 1 / rule.jump_factor) return true;
  }
  return rule.jump_percent !== undefined && (Math.abs(b - a) / Math.abs(a)) * 100 > rule.jump_percent;
}

function jumpWords(rule: ValueRule): string {
  const parts: string[] = [];
  if (rule.jump_factor !== undefined) parts.push(`more than ×${rule.jump_factor} or ÷${rule.jump_factor}`);
  if (rule.jump_percent !== undefined) parts.push(`more than ${rule.jump_percent}%`);
  const by = parts.length > 0 ? `by ${parts.join(' or ')} or ` : '';
  return `${by}from positive to negative`;
}

/** A value guard's samples for a person: `  SKU-1: 12 → 0`. */
export function sampleLines(r: Pick<GuardResult, 'samples'>, indent = '    '): string[] {
  return (r.samples ?? []).map((x) => `${indent}${x.record_id}: ${canonicalJson(x.old)} → ${canonicalJson(x.new)}`);
}

function keep(list: ValueSample[], s: ValueSample): void {
  if (list.length < VALUE_SAMPLES) list.push(s);
}

function pct(x: number): string {
  return `${(x * 100).toFixed(1)}%`;
}
