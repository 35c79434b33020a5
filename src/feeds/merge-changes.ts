import type { Command, CommandsConfig } from '../config/feeds.js';
import { RECORD_ID_PATTERN, type DatasetRecord } from '../model/record.js';
import type { RowCheck } from '../mapping/config.js';
import { recordJson } from '../model/record-json.js';
import { compareIds, type SnapshotEntry } from '../model/snapshot-reader.js';
import { fieldValue, type FeedEntry } from './fields.js';
import { applyRow, notOwnedRow, type RowOptions, type StateSink, type UpdateTally } from './merge-update.js';
import { StateCursor, type FeedValue } from './resolve.js';

/** The attribute a change list's reader puts each row's command word in (view.ts); taken out before anything else sees the row. */
export const COMMAND_KEY = '__dc_command';

/** A row of a change list that is not applied, for the reject file: an unknown word, or a create without its fields. */
export interface ChangeRowProblem {
  record_id: string;
  line: number;
  value: string;
  code: 'INVALID_COMMAND' | 'INVALID_RECORD';
  reason: string;
}

/** A delete row of a record the connector does not own (ownership: source): not deleted, said in the summary. */
export interface NotOwnedDelete {
  record_id: string;
  line: number;
}

/** How many of those a tally keeps by id and line (the rest are counted). */
export const FIRST_NOT_OWNED_DELETES = 5;

/** What a change list did, beside the update tally (matched, unmatched, not owned). */
export interface ChangesTally extends UpdateTally {
  created: number;
  deleted: number;
  ignored: number;
  problems: ChangeRowProblem[];
  /** Delete rows of records the connector does not own: how many, and the first FIRST_NOT_OWNED_DELETES of them. */
  deletesNotOwned: number;
  firstDeletesNotOwned: NotOwnedDelete[];
}

export interface ChangesMergeOptions extends RowOptions {
  ownership: 'source' | 'full';
  commands: CommandsConfig;
  /** How the command column is named in messages. */
  column: string;
}

/** The command of a word (trimmed, case-insensitive), or null. */
export function commandOf(word: string, words: CommandsConfig['words']): Command | null {
  const w = word.trim().toLowerCase();
  for (const [cmd, list] of Object.entries(words) as Array<[Command, string[]]>) if (list.some((x) => x.trim().toLowerCase() === w)) return cmd;
  return null;
}

/**
 * The desired records of a change list (issue 13), pure and streamed like
 * merge-update.ts: per row, its command says what happens to its record.
 * update sets the fields the feed owns on a record that exists (as an update
 * feed's row: an empty cell leaves its field, precedence applies); create
 * makes a record that does not exist (the row must carry display_name and
 * api_value) and never touches one that does (counted and listed, as the
 * shop feed tools do); upsert does either; delete leaves an owned record out
 * (the diff deletes it, under the delete guards); ignore does nothing. Records
 * the list does not name stay as they are; under ownership: source a record
 * not owned is never changed or deleted.
 */
export function* mergeChanges(
  rows: Iterable<FeedEntry>,
  snapshot: Iterable<SnapshotEntry>,
  state: Iterable<FeedValue>,
  opts: ChangesMergeOptions,
  tally: ChangesTally,
  sink: StateSink,
): Generator<FeedEntry> {
  const it = rows[Symbol.iterator]();
  const values = new StateCursor(state);
  let row = nextRow(it, opts, tally);
  // A row whose record does not exist: created (create, upsert) or counted unmatched.
  const absent = function* (r: Parsed): Generator<FeedEntry> {
    if (r.cmd === 'create' || r.cmd === 'upsert') {
      if (!hasRequired(r.record, opts.fields)) {
        tally.problems.push(createProblem(r.record, r.entry.line, r.word, r.cmd));
        return;
      }
      tally.created++;
      const own = Object.fromEntries(opts.fields.flatMap((f) => (fieldValue(r.record, f) === undefined ? [] : [[f, fieldValue(r.record, f)]])));
      sink({ record_id: r.entry.record_id, line: r.entry.line, values: own });
      yield { record_id: r.entry.record_id, line: r.entry.line, json: recordJson(r.record) };
      return;
    }
    if (r.cmd === 'ignore') tally.ignored++;
    else {
      tally.unmatched++;
      if (tally.unmatchedIds.length < opts.keepUnmatched) tally.unmatchedIds.push({ record_id: r.entry.record_id, line: r.entry.line, why: 'absent' });
    }
  };
  for (const e of snapshot) {
    while (row !== null && compareIds(row.entry.record_id, e.record_id) < 0) {
      yield* absent(row);
      row = nextRow(it, opts, tally);
    }
    const listed = row !== null && row.entry.record_id === e.record_id ? row : null;
    if (listed) row = nextRow(it, opts, tally);
    if (opts.ownership === 'source' && !e.owned) {
      // Its delete rows are named on their own (deletesNotOwned), with their lines.
      if (listed && listed.cmd !== 'ignore') notOwnedRow(tally, e.record_id, listed.cmd !== 'delete');
      // A person asked for this delete: that it did not happen is said, not only counted (a hand-made record stays).
      if (listed?.cmd === 'delete' && tally.deletesNotOwned++ < FIRST_NOT_OWNED_DELETES) tally.firstDeletesNotOwned.push({ record_id: e.record_id, line: listed.entry.line });
      continue;
    }
    tally.changeable++;
    if (!listed || listed.cmd === 'ignore') {
      if (listed) tally.ignored++;
      yield { record_id: e.record_id, line: 0, json: e.json };
      continue;
    }
    if (listed.cmd === 'create') {
      tally.unmatched++;
      if (tally.unmatchedIds.length < opts.keepUnmatched) tally.unmatchedIds.push({ record_id: e.record_id, line: listed.entry.line, why: 'exists' });
      yield { record_id: e.record_id, line: 0, json: e.json };
      continue;
    }
    tally.matched++;
    if (listed.cmd === 'delete') {
      tally.deleted++;
      continue;
    }
    const line = listed.entry.line;
    const rec = applyRow(JSON.parse(e.json) as DatasetRecord, listed.record, values.at(e.record_id), opts, tally, (v) => sink({ record_id: e.record_id, line, values: v }));
    yield { record_id: e.record_id, line, json: recordJson(rec) };
  }
  for (; row !== null; row = nextRow(it, opts, tally)) yield* absent(row);
}

interface Parsed {
  entry: FeedEntry;
  record: DatasetRecord;
  cmd: Command;
  word: string;
}

/** The next row with a known command; rows with an unknown word are problems (INVALID_COMMAND), never applied. */
function nextRow(it: Iterator<FeedEntry>, opts: ChangesMergeOptions, tally: ChangesTally): Parsed | null {
  for (;;) {
    const r = it.next();
    if (r.done) return null;
    const { record, cmd, word, problem } = changeRow(JSON.parse(r.value.json) as DatasetRecord, r.value.line, opts);
    if (problem) {
      tally.problems.push(problem);
      continue;
    }
    return { entry: r.value, record, cmd: cmd!, word };
  }
}

/**
 * A change list's row as read: its record without the command attribute, its command, and the problem of a
 * word that is no command (INVALID_COMMAND). Shared by the merge and `preview --feed` (what a person sees is
 * what the sync does).
 */
export function changeRow(rec: DatasetRecord, line: number, opts: Pick<ChangesMergeOptions, 'commands' | 'column'>): { record: DatasetRecord; cmd: Command | null; word: string; problem: ChangeRowProblem | null } {
  const word = String(rec.attributes[COMMAND_KEY] ?? '');
  const { [COMMAND_KEY]: _cmd, ...attributes } = rec.attributes;
  const record = { ...rec, attributes };
  const cmd = commandOf(word, opts.commands.words);
  if (cmd !== null) return { record, cmd, word, problem: null };
  const accepted = (Object.entries(opts.commands.words) as Array<[Command, string[]]>).map(([c, w]) => `${c}: ${w.join(', ')}`).join('; ');
  const reason = `line ${line}, column ${opts.column}: "${word}" is not a command (accepted words: ${accepted})`;
  return { record, cmd, word, problem: { record_id: rec.record_id, line, value: word, code: 'INVALID_COMMAND', reason } };
}

/**
 * The reader's check of a change list's row (mapping/compile.ts), so that the file's every row error is known
 * as it is read, whatever else is wrong in it: an unknown command word (INVALID_COMMAND); a create without
 * display_name or api_value (INVALID_RECORD). A delete or ignore row needs only its record_id. An upsert
 * creates when its record does not exist, and then needs both fields too: with `exists` (whether the
 * snapshot, or in a plan of several files a file read before, has the record) that is known here, so a file
 * refused for another row lists it in its reject file as well; where `exists` says yes the merge judges it.
 */
export function changeRowCheck(opts: Pick<ChangesMergeOptions, 'commands' | 'column' | 'fields'> & { exists?: (recordId: string) => boolean }): RowCheck {
  return (rec, line) => {
    const { cmd, problem } = changeRow(rec as DatasetRecord, line, opts);
    if (problem) return { problems: [{ column: 'command', value: problem.value, reason: problem.reason, code: problem.code }], idOnly: false };
    if (cmd === 'delete' || cmd === 'ignore') return { problems: [], idOnly: true };
    // A row whose record_id is no id is refused for that (the record check names its column), not as a create missing its fields.
    if (!RECORD_ID_PATTERN.test((rec as DatasetRecord).record_id)) return { problems: [], idOnly: false };
    // Asked of the snapshot only for an upsert without the fields (one lookup by primary key).
    const creates = (r: DatasetRecord) => cmd === 'create' || (cmd === 'upsert' && opts.exists !== undefined && !opts.exists(r.record_id));
    if ((cmd === 'create' || cmd === 'upsert') && !hasRequired(rec as DatasetRecord, opts.fields) && creates(rec as DatasetRecord)) {
      const p = createProblem(rec as DatasetRecord, line, String(rec.attributes[COMMAND_KEY] ?? ''), cmd);
      return { problems: [{ column: 'record', value: p.value, reason: p.reason, code: p.code }], idOnly: false };
    }
    return { problems: [], idOnly: false };
  };
}

/** Whether a row carries what a new record needs (the feed maps display_name and api_value, and they are not empty). */
function hasRequired(rec: DatasetRecord, fields: readonly string[]): boolean {
  return fields.includes('display_name') && fields.includes('api_value') && !!rec.display_name && !!rec.api_value;
}

function createProblem(rec: DatasetRecord, line: number, word: string, cmd: Command): ChangeRowProblem {
  return { record_id: rec.record_id, line, value: word, code: 'INVALID_RECORD', reason: `line ${line}: ${cmd} of ${rec.record_id} needs display_name and api_value: map them in this feed, and fill them in the row` };
}

/** How a change list's command column is named in messages (a header name, or its column spec). */
export function commandColumnName(commands: CommandsConfig): string {
  return typeof commands.column === 'string' ? commands.column : JSON.stringify(commands.column);
}
