import { createHash, type Hash } from 'node:crypto';
import { closeSync, fsyncSync, openSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { RecordsMark } from '../../snapshot/store.js';
import { connectorVersion } from '../../version.js';

/**
 * The stamp of issue 18's kept rows (kept-rows.ts): what makes the copy of the last published export trusted. It
 * names the copy (its nonce and size), the records after that publish (their generation, migration 17; the state
 * database's identity and the mark set for the stamp, migration 19: another database, or a backup of this one
 * restored, may count to the same generation with other records), the digest of the settings that turn a row into
 * a record, the connector's version, and the sha256 of the copy's bytes as written (checked as the copy is read
 * back). Written once, through a fsynced .tmp renamed into place.
 */

export const STAMP_FILE = 'kept-stamp.json';
/** Where the stamp is written before it is renamed into place. */
export const STAMP_TMP = `${STAMP_FILE}.tmp`;
/** The sha256 of the next copy's bytes as written, beside it until stampKept moves it into the stamp. */
export const NEXT_SUM = 'kept-rows.next.sha256';

export interface KeptStamp {
  nonce: string;
  bytes: number;
  generation: number;
  /** The state database's identity and the records' mark (SnapshotStore.recordsMark); absent in a stamp older than migration 19. */
  db?: string;
  mark?: string;
  digest: string;
  /** sha256 (hex) of the kept file's bytes as they were written. */
  sha256?: string;
  /** The connector's version (also in the digest): says an upgrade, not a settings change, voided the stamp. */
  version?: string;
}

/** What a stamp needs of the state database: a mark for the records at a generation (SnapshotStore.markRecords). */
export interface RecordsMarker {
  markRecords(generation: number): RecordsMark | null;
}

/** The kept file's bytes as read, and the sha256 its stamp says they must have (compared at its `end` line). */
export interface KeptCheck {
  hash: Hash;
  sha256: string;
}

/** The copy, as a shop's IT person reads it in a reason for a full read. */
export const COPY = 'the copy of the last published export';

/** The settings a row's record depends on, with this build's version: another digest, another mapping. */
export function keptDigest(source: unknown, mapping: unknown): string {
  const text = JSON.stringify({ version: connectorVersion(), source, mapping }, (_k, v: unknown) => (v instanceof RegExp ? `/${v.source}/${v.flags}` : v));
  return createHash('sha256').update(text).digest('hex');
}

/** The stamp in `dir`; throws when it cannot be read or parsed. */
export function readStamp(dir: string): KeptStamp {
  return JSON.parse(readFileSync(join(dir, STAMP_FILE), 'utf8')) as KeptStamp;
}

/** Why the stamp does not name the records and settings now (plainly), or null when it does. */
export function stampVoid(stamp: KeptStamp, now: RecordsMark, digest: string): string | null {
  if (stamp.version !== connectorVersion()) return 'the connector was upgraded since the last publish';
  if (stamp.db !== now.db) return `state.db is not the one ${COPY} was saved with (made again, or copied from elsewhere)`;
  if (stamp.digest !== digest) return 'the source or mapping settings changed since the last publish';
  if (now.generation < stamp.generation) return `state.db is older than ${COPY} (restored from a backup?)`;
  if (stamp.generation !== now.generation) return 'the published records changed since the last sync (an approve, a restore, a repair or an edit on the server)';
  if (stamp.mark !== now.mark) return `state.db was restored from a backup (or replaced by a copy) since ${COPY} was saved`;
  return null;
}

/** The stamp of a copy (its nonce and size) for the marked records: written through a fsynced .tmp; throws when not written (the .tmp removed). */
export function writeStamp(dir: string, copy: { nonce: string; bytes: number; sha256: string }, generation: number, marked: RecordsMark, digest: string): void {
  const stamp: KeptStamp = { nonce: copy.nonce, bytes: copy.bytes, generation, db: marked.db, mark: marked.mark!, digest, sha256: copy.sha256, version: connectorVersion() };
  const tmp = join(dir, STAMP_TMP);
  try {
    writeFileSync(tmp, JSON.stringify(stamp), { mode: 0o600 });
    const sfd = openSync(tmp, 'r');
    try {
      fsyncSync(sfd);
    } finally {
      closeSync(sfd);
    }
    renameSync(tmp, join(dir, STAMP_FILE));
  } catch (err) {
    try {
      rmSync(tmp, { force: true });
    } catch {
      // Not a file (a directory in its way): the write's own error is the one to tell; the next stampKept removes it.
    }
    throw err;
  }
}

/** A .tmp stamp left by a write that stopped: never read, removed before the copy is opened. */
export function dropStampTmp(dir: string): void {
  rmSync(join(dir, STAMP_TMP), { force: true });
}

/**
 * Why the last stamp of a kept folder could not be written, as the next read of it tells it (this process only:
 * after a restart the read says nothing was saved yet, which is then so). Set when a stamp fails, cleared by the
 * next stamp written or given up for another reason.
 */
const unstamped = new Map<string, string>();

export function noteUnstamped(dir: string, why: string | null): void {
  if (why === null) unstamped.delete(dir);
  else unstamped.set(dir, why);
}

export function unstampedWhy(dir: string): string | null {
  return unstamped.get(dir) ?? null;
}
