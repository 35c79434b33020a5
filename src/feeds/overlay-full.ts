import type { DatasetRecord } from '../model/record.js';
import { canonicalJson } from '../model/canonical.js';
import { recordJson } from '../model/record-json.js';
import { fieldValue, type FeedEntry } from './fields.js';
import type { StateSink } from './merge-update.js';
import { decide, hiddenByOthers, put, StateCursor, type MergeRules, type FeedValue } from './resolve.js';

export interface OverlayOptions {
  /** The fields of the full feed kept in its state: those another feed maps too (precedence compares them). */
  shared: readonly string[];
  rules: MergeRules;
}

/**
 * The desired records of a full feed's file (issue 13), pure and streamed: the
 * export's records with the fields other feeds own taken from their latest
 * published values (a catalogue without stock keeps the stock the stock feed
 * set, also the values a missing strategy set), a field both map going by
 * precedence (resolve.ts), and the records a deactivating feed holds hidden
 * kept inactive. `values` must be in record_id order (state.ts reads them so).
 * The export's own values of the shared fields go to `sink` (its state).
 */
export function* overlayFull(entries: Iterable<FeedEntry>, values: Iterable<FeedValue>, opts: OverlayOptions, sink: StateSink): Generator<FeedEntry> {
  const cursor = new StateCursor(values);
  const { rules } = opts;
  const tally = { fieldsChanged: 0 };
  for (const e of entries) {
    const state = cursor.at(e.record_id);
    let rec: DatasetRecord | null = null;
    const parsed = () => (rec ??= JSON.parse(e.json) as DatasetRecord);
    if (opts.shared.length > 0) {
      const own: Record<string, unknown> = {};
      for (const f of opts.shared) own[f] = fieldValue(parsed(), f) ?? null;
      sink({ record_id: e.record_id, line: e.line, values: own });
    }
    if (state.length === 0) {
      yield e;
      continue;
    }
    let out = parsed();
    for (const f of new Set(state.map((v) => v.field))) {
      if (!rules.mappers.has(f)) continue;
      const mine = opts.shared.includes(f) ? canonicalJson(fieldValue(out, f) ?? null) : undefined;
      if (mine === undefined && rules.mappers.get(f)!.includes(rules.feed)) continue; // its own field, no other feed maps it
      out = put(out, f, decide(f, mine, state, rules), tally);
    }
    if (hiddenByOthers(state, rules)) out = put(out, 'active', 'false', tally);
    yield out === rec ? e : { record_id: e.record_id, line: e.line, json: recordJson(out) };
  }
}
