import { canonicalJson } from '../model/canonical.js';
import { compareIds } from '../model/snapshot-reader.js';
import { HIDDEN, type FeedStateEntry, type FeedValue } from './resolve.js';

/**
 * The feed state as it would be after some files were published one after
 * another, without publishing them (issue 13, a plan several files make): the
 * state database's values, then each file's state entries applied as
 * FeedState.published would apply them. Each file of the plan is merged with
 * the state the files before it leave, so the plan records exactly what
 * syncing them one at a time would (precedence and newest by each file's
 * time, a deactivating feed's last file's claims). Nothing here is written.
 */
export class StateOverlay {
  readonly #values = new Map<string, FeedValue>();
  #sorted: FeedValue[] | null = null;

  constructor(values: Iterable<FeedValue>) {
    for (const v of values) this.#values.set(keyOf(v), v);
  }

  /** A file of `feed` published with these entries (its time `at`; `hides`: its entries replace the records it held hidden). */
  published(feed: string, at: number, entries: Iterable<FeedStateEntry>, hides: boolean): void {
    this.#sorted = null;
    if (hides) for (const [k, v] of this.#values) if (v.feed === feed && v.field === HIDDEN) this.#values.delete(k);
    const set = (record_id: string, field: string, value: string): void => {
      const v = { record_id, field, feed, value, at };
      this.#values.set(keyOf(v), v);
    };
    for (const e of entries) {
      for (const [f, v] of Object.entries(e.values)) set(e.record_id, f, canonicalJson(v ?? null));
      if (e.hidden && hides) set(e.record_id, HIDDEN, 'true');
    }
  }

  /** As FeedState.valuesOf: the values of every feed of these fields, in record_id order. */
  valuesOf(fields: readonly string[]): FeedValue[] {
    if (fields.length === 0) return [];
    const want = new Set(fields);
    return this.#all().filter((v) => want.has(v.field));
  }

  /** As FeedState.othersThan: every value of the feeds other than `except`, in record_id order. */
  othersThan(except: string): FeedValue[] {
    return this.#all().filter((v) => v.feed !== except);
  }

  #all(): FeedValue[] {
    this.#sorted ??= [...this.#values.values()].sort((a, b) => compareIds(a.record_id, b.record_id) || cmp(a.field, b.field) || cmp(a.feed, b.feed));
    return this.#sorted;
  }
}

function keyOf(v: { record_id: string; field: string; feed: string }): string {
  return JSON.stringify([v.record_id, v.field, v.feed]);
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
