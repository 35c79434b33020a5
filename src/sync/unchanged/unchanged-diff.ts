import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Policy } from '../../config/policy.js';
import type { MappingConfig } from '../../mapping/config.js';
import { compareIds } from '../../model/snapshot-reader.js';
import type { SnapshotStore } from '../../snapshot/store.js';
import type { SourceConfig } from '../../sources/config.js';
import type { LinkPolicy } from '../../sources/open-file.js';
import type { Changeset } from '../core/changeset.js';
import { diffOptionsOf } from '../core/diff.js';
import { diffSource } from '../disk/diff-source.js';
import { MEMORY_CHARS } from '../disk/sorted-source.js';
import type { ExecContext } from '../executor/context.js';
import { diffListed, listedEntries, type Listed } from '../executor/feed-indexed.js';
import { readSources, withRejectFile, type SourceRead } from '../executor/source-read.js';
import { KeptRows, dropNext, openKept, type KeptOutcome, type KeptReadError } from './kept-rows.js';
import { keptDigest } from './kept-stamp.js';

/**
 * Issue 18: read and diff an export of a dataset of one full source against
 * the snapshot, taking the rows equal to the last published export's at
 * their place (kept-rows.ts) as its unchanged records: only the other rows
 * are mapped and sorted, and only their records and the kept records at
 * their places are read from the snapshot (by primary key, as a feed's
 * indexed merge: feed-indexed.ts); the unread records go back into the
 * counts (withUnlisted). Whatever is uncertain takes the full read and diff:
 * no kept rows or no stamp for them, settings or records changed since, a
 * keep_when_match filter, a record marked as edited by someone else, a header that differs, more than `maxShare` of the
 * records' rows differing (the read goes on as the full one, and is read
 * again when rows were taken as unchanged before), a changed row
 * that repeats the id of an unchanged one (read again in full), the records
 * written while it read.
 */

/** Rows that may differ, as a share of the snapshot's records, before the read goes on as the full one. */
export const MAX_DIFFERING_SHARE = 0.2;

export interface UnchangedDiff {
  read: SourceRead;
  /** Null when the read was refused (read.rejected). */
  changeset: Changeset | null;
  path: 'unchanged-rows' | 'full';
  /** Why the full path was taken (null on the unchanged-rows path). */
  reason: string | null;
  /** Rows found differing from the kept rows at their place. */
  differing: number;
  /** The records' generation the changeset was diffed against; null when they were written while it was made (diff again). */
  generation: number | null;
}

export interface UnchangedOptions {
  /** Where the kept rows and their stamp live (the dataset's own folder in the state dir). */
  keptDir: string;
  store: SnapshotStore;
  policy: Policy;
  maxShare?: number;
  links?: LinkPolicy;
  sha256?: string;
  /** Told when the copy for the next read could not be written (a full disk): the read goes on without it. */
  onCopyError?: (error: string) => void;
  /** Told when the last published export's copy could not be read (a disk error): the export is read in full instead. */
  onReadError?: (error: KeptReadError) => void;
}

/** The read and diff of `file` (see above); the rows are kept in keptDir for the next read whichever path was taken, stamped only by stampKept. */
export async function readAndDiff(file: string, source: unknown, mapping: unknown, workDir: string, o: UnchangedOptions): Promise<UnchangedDiff> {
  const generation = o.store.generation();
  const r = await readAndDiffAt(generation, file, source, mapping, workDir, o);
  return { ...r, generation: o.store.generation() === generation ? generation : null };
}

async function readAndDiffAt(generation: number, file: string, source: unknown, mapping: unknown, workDir: string, o: UnchangedOptions): Promise<Omit<UnchangedDiff, 'generation'>> {
  const digest = keptDigest(source, mapping);
  const filtered = (mapping as MappingConfig).filters.keep_when_match.length > 0;
  // A record someone else edited keeps their value under on_foreign_edit: keep, and the diff notes the edit each time it compares it.
  const kept = filtered
    ? { reason: 'the mapping has a keep_when_match filter, which must see every row' }
    : o.store.hasForeignEdits()
      ? { reason: 'some records are marked as edited by someone else, and each sync compares them' }
      : openKept(o.keptDir, o.store.recordsMark(), digest);
  const records = o.store.counts().total;
  const rows = new KeptRows(o.keptDir, digest, kept, Math.floor((o.maxShare ?? MAX_DIFFERING_SHARE) * records));
  const first = await readKeeping(file, source, mapping, workDir, rows, o);
  const { read, outcome } = first;
  if (read.rejected || read.sorted === null) return { read, changeset: null, path: 'full', reason: read.rejected?.message ?? null, differing: outcome.differing };
  if (outcome.fast === null && outcome.skipped > 0) return again(file, source, mapping, workDir, o, digest, outcome.reason ?? 'gave up', outcome.differing);
  if (outcome.fast === null) return full(read, o, workDir, outcome.reason, outcome.differing);
  const lookup = listedOf(o, outcome.fast, workDir);
  if (lookup.repeats) return again(file, source, mapping, workDir, o, digest, 'a changed row has the record_id of another row', outcome.differing);
  const cs = await diffListed({ store: o.store, policy: o.policy } as ExecContext, read.sorted, lookup.listed, join(workDir, 'changeset'));
  if (o.store.generation() !== generation) return again(file, source, mapping, workDir, o, digest, 'the published records changed while the export was read', outcome.differing);
  return { read, changeset: cs, path: 'unchanged-rows', reason: null, differing: outcome.differing };
}

async function readKeeping(file: string, source: unknown, mapping: unknown, workDir: string, rows: KeptRows, o: UnchangedOptions): Promise<{ read: SourceRead; outcome: KeptOutcome }> {
  let outcome: KeptOutcome | null = null;
  try {
    const [read] = await readSources(file, source, [{ mapping, workDir }], {
      unchanged: rows,
      ...(o.links ? { links: o.links } : {}),
      ...(o.sha256 ? { sha256: o.sha256 } : {}),
    });
    outcome = rows.finish();
    if (outcome.copyError !== null) o.onCopyError?.(outcome.copyError);
    if (outcome.readError !== null) o.onReadError?.(outcome.readError);
    // A repeated record_id: both rows were kept as records, and a kept row is taken unchanged without the sort that finds it.
    if (read!.records !== outcome.records) dropNext(o.keptDir);
    return { read: await withRejectFile(read!), outcome };
  } finally {
    if (outcome === null) rows.finish();
  }
}

async function full(read: SourceRead, o: UnchangedOptions, workDir: string, reason: string | null, differing: number): Promise<Omit<UnchangedDiff, 'generation'>> {
  const changeset = await diffSource(read.sorted!, o.store.reader(), diffOptionsOf(o.policy), join(workDir, 'changeset'));
  return { read, changeset, path: 'full', reason, differing };
}

/** The full read and diff after the unchanged-rows read could not be used (its runs stay where they are: a fresh folder). */
async function again(file: string, source: unknown, mapping: unknown, workDir: string, o: UnchangedOptions, digest: string, reason: string, differing: number): Promise<Omit<UnchangedDiff, 'generation'>> {
  const dir = join(workDir, 'full');
  mkdirSync(dir, { recursive: true });
  const { read } = await readKeeping(file, source, mapping, dir, new KeptRows(o.keptDir, digest, null, 0), o);
  if (read.rejected || read.sorted === null) return { read, changeset: null, path: 'full', reason, differing };
  return full(read, o, dir, reason, differing);
}

/**
 * The snapshot records the diff reads: the changed rows' and the kept rows' at the changed places (and under
 * ownership: full every not-owned one). A changed row's id that is a record not among the kept rows at the
 * changed places is at an unchanged place too (the published records are the kept rows' records): a repeat.
 */
function listedOf(o: UnchangedOptions, fast: NonNullable<KeptOutcome['fast']>, workDir: string): { listed: Listed; repeats: boolean } {
  const gone = new Set(fast.goneIds);
  const moved = fast.differingIds.filter((id) => !gone.has(id)).sort(compareIds);
  let repeats = false;
  for (const e of o.store.entriesOf(moved)) if (e.owned) repeats = true;
  const ids = [...new Set([...fast.differingIds, ...fast.goneIds, ...(o.policy.ownership === 'full' ? o.store.notOwnedIds() : [])])].sort(compareIds);
  const tallies = o.store.tallies();
  const listed: Listed = { ids, total: tallies ? { total: tallies.records, owned: tallies.owned } : o.store.counts(), bases: tallies?.bases ?? null, file: join(workDir, 'listed-kept'), memoryChars: MEMORY_CHARS };
  const seen = { records: 0, owned: 0 };
  for (const _ of listedEntries(o.store, listed, seen));
  return { listed, repeats };
}

