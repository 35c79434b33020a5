import type { DatasetRecord } from '../model/record.js';
import { canonicalJson } from '../model/canonical.js';
import { compareIds } from '../snapshot/reader.js';
import { fieldValue, withField } from './fields.js';

/** One feed's last published value of one field of one record. */
export interface FeedValue {
  record_id: string;
  field: string;
  feed: string;
  /** Canonical JSON. */
  value: string;
  /** The time of the file it came from (ms). */
  at: number;
}

/**
 * The feed state's pseudo-field of a deactivation (issue 13): a feed whose
 * missing strategy is deactivate holds it (value true) on each record its last
 * published file did not list. A record held by any such feed is inactive,
 * whatever the feed owning `active` says; its own value comes back when no
 * feed holds it any more.
 */
export const HIDDEN = '@hidden';

/** What a merge records as its feed's state (the ledger writes it when the plan is published, never before). */
export interface FeedStateEntry {
  record_id: string;
  /** The row's line in the file; 0 for a record the file does not list (missing strategy). */
  line: number;
  /** The feed's own values of its fields for this record (not the winner's: a value that loses is kept too). */
  values: Record<string, unknown>;
  /** The feed holds the record hidden (missing: deactivate). */
  hidden?: true;
}

/** How the fields of the feed being merged meet the other feeds' values (all pure data, from the config and the file). */
export interface MergeRules {
  /** The feed whose file is merged. */
  feed: string;
  /** The time of its values (ms): the file's, as feed-desired.ts decides. */
  at: number;
  /** The configured feeds mapping each field; values of other feeds are ignored. */
  mappers: ReadonlyMap<string, readonly string[]>;
  /** field → the feed that wins, or newest. */
  precedence: Readonly<Record<string, string>>;
  /** The feeds whose missing strategy is deactivate: only their HIDDEN values count. */
  hiders: ReadonlySet<string>;
}

/**
 * The value that wins among the feeds' values of one field (canonical JSON; the
 * one of the file read now goes last). A null value is no value: the winner
 * stops having one, the others still answer. A named feed wins whenever it has
 * a value; otherwise (and with newest) the newest value wins, the later in the
 * list on equal times (the file read now over the state's).
 */
export function pick(field: string, candidates: readonly FeedValue[], precedence: Readonly<Record<string, string>>): FeedValue | undefined {
  const valued = candidates.filter((c) => c.value !== 'null');
  if (valued.length === 0) return undefined;
  const rule = precedence[field];
  const named = rule !== undefined && rule !== 'newest' ? valued.find((c) => c.feed === rule) : undefined;
  return named ?? valued.reduce((a, b) => (b.at >= a.at ? b : a));
}

/**
 * The value (canonical JSON) `field` gets when this feed's value is `mine`
 * (undefined: this feed gives none) and the record's state is `state`; undefined
 * when no feed has one. A field this feed alone maps is its own.
 */
export function decide(field: string, mine: string | undefined, state: readonly FeedValue[], rules: MergeRules): string | undefined {
  const owners = rules.mappers.get(field) ?? [];
  if (owners.length === 1 && owners[0] === rules.feed) return mine;
  const candidates = state.filter((v) => v.field === field && v.feed !== rules.feed && owners.includes(v.feed));
  if (mine !== undefined) candidates.push({ record_id: '', field, feed: rules.feed, value: mine, at: rules.at });
  return pick(field, candidates, rules.precedence)?.value ?? mine;
}

/** Whether a feed other than this one holds the record hidden. */
export function hiddenByOthers(state: readonly FeedValue[], rules: MergeRules): boolean {
  return state.some((v) => v.field === HIDDEN && v.feed !== rules.feed && rules.hiders.has(v.feed) && v.value === 'true');
}

/** Whether this feed held the record hidden (its last file did not list it). */
export function hiddenByMe(state: readonly FeedValue[], rules: MergeRules): boolean {
  return state.some((v) => v.field === HIDDEN && v.feed === rules.feed && v.value === 'true');
}

/** `rec` with `field` set to the decided value (when there is one), counting a change. */
export function put(rec: DatasetRecord, field: string, value: string | undefined, tally: { fieldsChanged: number }): DatasetRecord {
  if (value === undefined) return rec;
  if (canonicalJson(fieldValue(rec, field) ?? null) === value) return rec;
  tally.fieldsChanged++;
  return withField(rec, field, JSON.parse(value));
}

/**
 * A listed record's `active` after this feed's row: a record this feed held
 * hidden comes back to what the owner of `active` says (its state; true when no
 * feed maps it, as a full feed's records are by default), and stays hidden while
 * another feed holds it. Unchanged when this feed neither held it nor maps active.
 */
export function activeAfterRow(rec: DatasetRecord, state: readonly FeedValue[], rules: MergeRules, mapsActive: boolean, tally: { fieldsChanged: number }): DatasetRecord {
  if (!mapsActive && !hiddenByMe(state, rules)) return rec;
  const own = mapsActive ? canonicalJson(rec.active) : (decide('active', undefined, state, rules) ?? 'true');
  return put(rec, 'active', hiddenByOthers(state, rules) ? 'false' : own, tally);
}

/** The state values of each record in turn, from values in record_id order; ids must be asked in that order. */
export class StateCursor {
  readonly #it: Iterator<FeedValue>;
  #next: FeedValue | null;

  constructor(values: Iterable<FeedValue>) {
    this.#it = values[Symbol.iterator]();
    this.#next = this.#pull();
  }

  at(recordId: string): FeedValue[] {
    while (this.#next !== null && compareIds(this.#next.record_id, recordId) < 0) this.#next = this.#pull();
    const out: FeedValue[] = [];
    while (this.#next !== null && this.#next.record_id === recordId) {
      out.push(this.#next);
      this.#next = this.#pull();
    }
    return out;
  }

  #pull(): FeedValue | null {
    const r = this.#it.next();
    return r.done ? null : r.value;
  }
}
