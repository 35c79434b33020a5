import { join } from 'node:path';
import type { DatasetConfig } from '../../config/schema.js';
import { primaryFeed } from '../../config/feed-fields.js';
import type { FeedEntry } from '../../feeds/fields.js';
import { feedView, readerMapping, roleOf } from '../../feeds/view.js';
import { StateOverlay } from '../../feeds/state-overlay.js';
import { FeedState } from '../../feeds/state.js';
import { event } from '../../log/events.js';
import type { RowError } from '../../model/row-error.js';
import { SourceError, type SourceErrorCode } from '../../model/source-error.js';
import { compareIds, type SnapshotEntry } from '../../model/snapshot-reader.js';
import { NEVER_FOLLOW, type LinkPolicy } from '../../sources/open-file.js';
import { makePrivateDir } from '../disk/changeset-files.js';
import type { PlanBatchFile, PlanFeed } from '../core/plan.js';
import { linkOrCopy } from '../disk/sorted-source.js';
import { SourceSorter } from '../disk/source-sorter.js';
import { feedStateEntries, FeedStateWriter, FEED_STATE_FILE } from './feed-state-file.js';
import type { FeedFileOutcome, FeedSummary } from '../outcome.js';
import type { ExecContext } from './context.js';
import { diffsAsRead, feedRead, feedRowVerdict, feedTotals, feedStage, feedWarnings, newChangesTally, planFeedOf, rowsOfTally, summaryOfTally, type Desired } from './feed-desired.js';
import { runFrom, type BatchMerge, type SyncOptions } from './run-sync.js';
import { readSource, type SourceRead } from './source-read.js';

/** One file of a coalesced sync: the feed that reads it and how it may be opened. */
export interface FeedFileInput {
  feed: string;
  file: string;
  links?: LinkPolicy;
  /** The file's sha256 as the file job took it: the read must find the same bytes. */
  sha256?: string;
}

/** A file read for the batch, with its feed as a plan names it. */
interface Member {
  index: number;
  src: SourceRead;
  feed: PlanFeed;
}

/**
 * One plan of several files of a dataset's feeds (issue 13, the daemon's
 * coalescing): each file is read by its feed's source and mapping; a file
 * refused on its own (parse error, its rows under on_row_errors) is left
 * out, named in `outcomes`, and nothing of it is used. The others are merged
 * in one stage: the full feed's export (at most one) is the base, then every
 * update feed's file and change list in the order given (oldest first), each
 * onto what the ones before it made and with the feed state they would leave
 * (StateOverlay), so the plan publishes and records what syncing the files
 * one after another would (precedence by each file's time, the missing
 * strategies); nothing an older file said of other records is lost; every
 * change list is applied. Then one diff, one plan, one publish, journaled as any
 * sync: the files stay where they are until it ends.
 */
export async function runFeedBatch(ctx: ExecContext, ds: DatasetConfig, inputs: readonly FeedFileInput[], opts: SyncOptions, outcomes: FeedFileOutcome[]): Promise<void> {
  await runFrom(ctx, ds, opts, async (dir) => {
    const members: Member[] = [];
    const exists = existsBefore(ctx, members);
    // The full feed's export is read first: it is the merge's base, so a change list read after it knows its records.
    const order = [...inputs.entries()].sort(([, a], [, b]) => (roleOf(feedView(ds, a.feed)) === 'full' ? 0 : 1) - (roleOf(feedView(ds, b.feed)) === 'full' ? 0 : 1));
    for (const [index, input] of order) {
      const view = feedView(ds, input.feed);
      const sub = join(dir, `read-${index}`);
      makePrivateDir(sub);
      const src = feedRead(view, await readSource(input.file, view.source, readerMapping(view, exists), sub, { valueFlags: diffsAsRead(view), ...(input.links ? { links: input.links } : {}), ...(input.sha256 ? { sha256: input.sha256 } : {}) }), ctx.clock.now());
      if (src.rejected?.action === 'retry') {
        // Changed while read, or unreadable now: not this file's fault; it stays for the next try, the others go on.
        Object.assign(outcomes[index]!, { outcome: 'not_run', code: src.rejected.code, message: src.rejected.message });
        ctx.logger.warn(event('sync.skipped', { file: input.file, feed: input.feed, code: src.rejected.code }), src.rejected.message);
        continue;
      }
      if (src.rejected) {
        reject(ctx, outcomes[index]!, src, src.rejected);
        continue;
      }
      members.push({ index, src, feed: memberFeed(view, src) });
    }
    // The full feed's export is the base; the others apply onto it in the order given (stable sort).
    members.sort((a, b) => (a.feed.role === 'full' ? 0 : 1) - (b.feed.role === 'full' ? 0 : 1));
    const lead = members[0];
    if (!lead) return { src: refusedAll(inputs, outcomes) };
    const full = members.find((m) => m.feed.role === 'full');
    const src = combined(members, full);
    return { src, batch: batchMerge(ctx, ds, members, outcomes) };
  });
}

/**
 * Whether a record is in the snapshot or in a file of the plan read before (the change list's reader asks it for
 * an upsert without display_name/api_value, so such a row of a file refused as it is read is in its reject file
 * too). Never says no where the merge would find the record (its base is the snapshot and the plan's files), so
 * no row the merge would apply is refused; a record the merge would not find (a catalogue dropping it, a later
 * file) is judged by the merge. The ids of the files read are gathered once, on the first such row only.
 */
function existsBefore(ctx: ExecContext, members: readonly Member[]): (recordId: string) => boolean {
  let ids: Set<string> | null = null;
  let seen = 0;
  return (id) => {
    if (ctx.store.get(id) !== null) return true;
    ids ??= new Set();
    for (; seen < members.length; seen++) for (const e of members[seen]!.src.sorted!.entries()) ids.add(e.record_id);
    return ids.has(id);
  };
}

/** The PlanFeed of a file read by `view`, as a sync of that file alone names it (its state fields, its values' time). */
function memberFeed(view: DatasetConfig, src: SourceRead): PlanFeed {
  return planFeedOf(view, src)!;
}

/** The merge stage of the batch; it leaves out (and names) a change list whose rows on_row_errors refuses, and merges again without it. */
function batchMerge(ctx: ExecContext, ds: DatasetConfig, all: Member[], outcomes: FeedFileOutcome[]): BatchMerge {
  let states: Array<{ name: string; path: string }> = [];
  const lead = all[0]!;
  return {
    gate: { fileHash: lead.src.fileHash, feed: { name: lead.feed.name, primary: primaryFeed(ds.feeds), dataset: ds.name } },
    read: all.map((m) => ({ name: m.feed.name, role: m.feed.role, rows: m.src.rows })),
    desired(dir) {
      let members = all.filter((m) => outcomes[m.index]!.outcome !== 'rejected');
      // The reject-file rows of a file left out (its reader's own and its rows not applied), kept for its reject file.
      const leftOut: RowError[] = [];
      for (let round = 0; ; round++) {
        const out = mergeAll(ctx, ds, members, join(dir, `round-${round}`));
        let first: SourceError | null = null;
        const bad = members.filter((m, i) => {
          // The file's own feed says what its bad rows mean (on_row_errors, max_bad_row_ratio).
          const verdict = feedRowVerdict(feedView(ds, m.feed.name), m.src, { ...out.desired, rowErrors: out.perFile[i]!.rowErrors });
          if (verdict) {
            reject(ctx, outcomes[m.index]!, m.src, verdict);
            leftOut.push(...m.src.rowErrors, ...out.perFile[i]!.rows);
          }
          first ??= verdict;
          return verdict !== null;
        });
        // Every file refused: nothing of them is used (the sync ends rejected, each file to failed/).
        if (first && members.length === bad.length) throw first;
        if (bad.length === 0) {
          states = out.states;
          for (const [i, m] of members.entries()) Object.assign(outcomes[m.index]!, { outcome: 'planned', matched: out.perFile[i]!.summary });
          const files: PlanBatchFile[] = members.map((m, i) => ({ ...m.feed, file: m.src.file, sha256: m.src.fileHash, state: out.states[i]!.name }));
          ctx.logger.info(event('sync.coalesced', { files: files.map((f) => ({ file: f.file, feed: f.name })), left_out: outcomes.filter((o) => o.outcome === 'rejected').map((o) => o.file) }), 'several files make one plan');
          return { ...out.desired, unmatched: [...out.desired.unmatched, ...leftOut], batch: { lead: members[0]!.feed, files } };
        }
        members = members.filter((m) => !bad.includes(m));
      }
    },
    keep(folder) {
      for (const st of states) linkOrCopy(st.path, join(folder, st.name));
    },
  };
}

/**
 * Every member merged in order onto the snapshot (or onto the full feed's export), each with the feed state
 * the members before it would leave once published (StateOverlay: the plan records what syncing the files one
 * at a time would), with what each did and what its feed's state becomes (one state file a member).
 */
function mergeAll(ctx: ExecContext, ds: DatasetConfig, members: Member[], dir: string): { desired: Desired; perFile: Array<{ summary: FeedSummary; rowErrors: number; rows: RowError[] }>; states: Array<{ name: string; path: string }> } {
  makePrivateDir(dir);
  const tallies = members.map(() => newChangesTally());
  const state = new StateOverlay(new FeedState(ctx.db.conn, ctx.dataset).all());
  const states: Array<{ name: string; path: string }> = [];
  let base: Iterable<SnapshotEntry & { line?: number }> = ctx.store.reader().entries();
  let sorted = null as ReturnType<SourceSorter['finish']> | null;
  // ownership: source: the records not owned, which a later update or change list must meet as such (one read, kept: hand-made records are few).
  const laterMerges = ctx.policy.ownership === 'source' && members.slice(1).some((m) => m.feed.role !== 'full');
  const foreign = laterMerges ? [...ctx.store.reader().entries()].filter((e) => !e.owned) : [];
  for (const [i, m] of members.entries()) {
    const name = `${FEED_STATE_FILE}-${m.index}`;
    const path = join(dir, name);
    const sink = new FeedStateWriter(path);
    const out = join(dir, `merged-${m.index}`);
    makePrivateDir(out);
    const sorter = new SourceSorter(out);
    const last: { e?: { record_id: string; line?: number } } = {};
    try {
      // Each stage is read whole before the next starts: the next one's state is what this one's file leaves.
      for (const e of lined(feedStage(ctx, ds, m.feed, m.src.sorted!.entries(), remember(base, last), state, tallies[i]!, sink.put, m.src.badRows), last)) sorter.add(e.record_id, e.line, e.json);
    } finally {
      sink.close();
    }
    sorted = sorter.finish(() => undefined);
    state.published(m.feed.name, m.feed.at, feedStateEntries(dir, m.feed, name), m.feed.role === 'update');
    states.push({ name, path });
    base = withForeign(owned(sorted.entries()), foreign);
  }
  const perFile = members.map((m, i) => {
    const t = tallies[i]!;
    const rows = rowsOfTally(m.src.file, m.feed.role, t);
    return { summary: summaryOfTally(m.feed.name, m.feed.role, t, m.feed.role === 'full' ? m.src.sorted!.count : 0), rowErrors: rows.problems, rows: rows.all };
  });
  // The reject file of each file: its reader's own row errors, then its unmatched rows and change-list rows not applied.
  const unmatched = members.flatMap((m, i) => (perFile[i]!.rows.length > 0 ? [...m.src.rowErrors, ...perFile[i]!.rows] : []));
  // Per feed, the sums over its files (two stock files: both files' counts, not the first's).
  const feeds = feedTotals(members.map((m, i) => ({ summary: perFile[i]!.summary, rows: m.src.rows })));
  const { rows: _rows, ...leadSummary } = feeds[0]!;
  return {
    // Each file's warnings, naming that file: the lead's summary alone would hide what the others' rows did.
    desired: { sorted: sorted!, feed: leadSummary, unmatched, rowErrors: perFile.reduce((n, f) => n + f.rowErrors, 0), stateFile: null, feeds, warnings: members.flatMap((m, i) => feedWarnings(m.src.file, perFile[i]!.summary)) },
    perFile,
    states,
  };
}

/** `base` as it is read, the last entry taken kept in `last` (a stage yields a record right after taking it). */
function* remember<T extends { record_id: string; line?: number }>(base: Iterable<T>, last: { e?: { record_id: string; line?: number } }): Generator<T> {
  for (const e of base) {
    last.e = e;
    yield e;
  }
}

/** A stage's output; a record it passed on unchanged keeps the line of the file before it that set it (provenance, server row errors). */
function* lined(out: Iterable<FeedEntry>, last: { e?: { record_id: string; line?: number } }): Generator<FeedEntry> {
  for (const o of out) {
    if (o.line <= 0 && last.e?.record_id === o.record_id && (last.e.line ?? 0) > 0) yield { ...o, line: last.e.line! };
    else yield o;
  }
}

/** What a stage made, as the next stage's base: every record in it is the connector's (it came from a feed's file or the owned snapshot). */
function* owned(entries: Iterable<FeedEntry>): Generator<SnapshotEntry & { line: number }> {
  for (const e of entries) yield { record_id: e.record_id, json: e.json, owned: true, foreignFields: [], line: e.line };
}

/**
 * A stage's output as the next stage's base, with the snapshot's records the connector does not own (in
 * record_id order) put back: under ownership: source a stage never yields them: a later change list's delete or an update's row of a
 * hand-made record then meets it as not owned (left alone, said in the summary), as in a sync of that file
 * alone, not as a record that does not exist.
 */
function* withForeign<T extends SnapshotEntry>(made: Iterable<T>, foreign: readonly SnapshotEntry[]): Generator<T | SnapshotEntry> {
  let i = 0;
  for (const e of made) {
    while (i < foreign.length && compareIds(foreign[i]!.record_id, e.record_id) < 0) yield foreign[i++]!;
    if (i < foreign.length && foreign[i]!.record_id === e.record_id) i++;
    yield e;
  }
  while (i < foreign.length) yield foreign[i++]!;
}

/** The batch as the planner and the ledger see one read: the full feed's export names its hash and rows (the row-drop guard, the last export). */
function combined(members: Member[], full: Member | undefined): SourceRead {
  const first = full ?? members[0]!;
  return {
    ...first.src,
    file: members.map((m) => m.src.file).join(' + '),
    rows: full ? full.src.rows : members.reduce((n, m) => n + m.src.rows, 0),
    records: members.reduce((n, m) => n + m.src.records, 0),
    rowErrors: members.flatMap((m) => m.src.rowErrors),
    rejectFile: null,
    sorted: null,
    importability: { importable: false, reason: 'several files make this plan' },
  };
}

/** A file of the batch refused on its own: named in the outcomes and the log; nothing of it is used. */
function reject(ctx: ExecContext, outcome: FeedFileOutcome, src: SourceRead, err: SourceError): void {
  Object.assign(outcome, { outcome: 'rejected', code: err.code, message: err.message });
  ctx.logger.error(
    event('file.rejected', { file: src.file, feed: outcome.feed, code: err.code, rejectFile: src.rejectFile, row_errors: src.rowErrors.length, first_row_errors: src.rowErrors.slice(0, 5).map((e) => ({ line: e.line, column: e.column, code: e.code, reason: e.reason })) }),
    `${err.message} (the other files of the plan go on without it)`,
  );
}

/** Every file of the batch was refused: the sync ends rejected with the first one's reason. */
function refusedAll(inputs: readonly FeedFileInput[], outcomes: FeedFileOutcome[]): SourceRead {
  const first = outcomes.find((o) => o.outcome === 'rejected') ?? outcomes[0];
  const what = `no file could be used: ${outcomes.map((o) => `${o.file} (${o.code})`).join(', ')}`;
  const err = new SourceError((first?.code ?? 'ROW_ERRORS') as SourceErrorCode, what, { file: first?.file ?? '' });
  if (outcomes.every((o) => o.outcome === 'not_run')) Object.assign(err, { action: 'retry' });
  return {
    file: inputs.map((i) => i.file).join(' + '),
    fileHash: '',
    bytes: 0,
    rows: 0,
    records: 0,
    sorted: null,
    rowErrors: [],
    rejected: err,
    rejectFile: null,
    importability: { importable: false, reason: 'the files were refused' },
    links: inputs[0]?.links ?? NEVER_FOLLOW,
    virtual: true,
  };
}
