import { createHash } from 'node:crypto';
import { closeSync, constants, openAsBlob, openSync, readSync, rmSync, writeSync } from 'node:fs';
import type { FormData } from 'undici';
import { canonicalJson } from '../model/canonical.js';
import { RECORD_FIELDS, type DatasetRecord, type RecordPatch } from '../model/record.js';
import { ApiError } from './errors.js';
import type { UploadFields, UploadFile } from './options.js';
import type { ReplaceOptions } from './wire.js';

/** Request bodies of the client: only the fields the contract names travel (A34). */

/** A14: the multipart body of `POST /imports`. */
export async function importForm(file: UploadFile, fields: UploadFields): Promise<FormData> {
  // Loaded here, not at start: an idle daemon need not hold undici (issue 18).
  const { FormData } = await import('undici');
  const form = new FormData();
  const type = file.contentType ?? 'application/octet-stream';
  let blob: Blob;
  if (file.bytes) blob = new Blob([file.bytes], { type });
  else if (file.path) blob = await openAsBlob(file.path, { type });
  else throw new ApiError({ status: null, code: 'INVALID_ARGUMENT', message: 'importFile needs bytes or a path' });
  form.append('file', blob, file.filename);
  // A16 compares the bytes of every field: canonical JSON keeps a repeat byte-identical.
  if (fields.mapping) form.append('mapping', canonicalJson(fields.mapping));
  if (fields.sheet !== undefined) form.append('sheet', fields.sheet);
  if (fields.encoding !== undefined) form.append('encoding', fields.encoding);
  if (fields.options) form.append('options', canonicalJson(pickOptions(fields.options)));
  return form;
}

/** A request body sent in chunks, never whole in memory; each `open` gives the same bytes again (a retry sends it anew). */
export interface StreamedBody {
  contentType: string;
  /** Its length in bytes (sent as Content-Length: some servers refuse a chunked request). */
  length: number;
  open(): AsyncIterable<Uint8Array>;
}

/** Characters of a streamed body put in one chunk. */
const BODY_CHUNK = 64 * 1024;

/**
 * A13: the body of `PUT /records`, `{"options":…,"records":[…]}`, streamed
 * from records that are canonical JSON already (record-json.ts), so the body
 * is canonical JSON too and its hash is the one A16 compares a repeat by.
 * One pass measures it (length, sha256: what the journal records before it is
 * sent); every send is checked against that pass as it goes, and one that
 * comes out different is cut off before its last byte, so a server never
 * receives a whole body other than the one journaled.
 *
 * `copy`: a private file the measuring pass writes the bytes to, so that a send
 * reads them instead of building the body again from its records (issue 18:
 * about half a second of 200,000 records, spent while the server waits for the
 * bytes); checked as they are read like any send. Where the copy cannot be
 * written or read, the body is built again; `discard` removes it.
 */
export function replaceBody(
  records: () => Iterable<{ json: string }>,
  options: ReplaceOptions,
  copy?: string,
): { body: StreamedBody; hash: string; records: number; discard(): void } {
  const head = `{"options":${canonicalJson(pickOptions(options))},"records":[`;
  let count = 0;
  function* chunks(): Generator<Buffer> {
    let buf = head;
    count = 0;
    for (const r of records()) {
      if (count++ > 0) buf += ',';
      buf += r.json;
      if (buf.length >= BODY_CHUNK) {
        yield Buffer.from(buf, 'utf8');
        buf = '';
      }
    }
    yield Buffer.from(`${buf}]}`, 'utf8');
  }
  const hash = createHash('sha256');
  let length = 0;
  let fd = copy === undefined ? null : openCopy(copy);
  for (const c of chunks()) {
    hash.update(c);
    length += c.length;
    if (fd !== null && !writeAll(fd, c)) fd = dropCopy(fd, copy!);
  }
  if (fd !== null && !closeCopy(fd)) fd = dropCopy(null, copy!);
  const kept = fd !== null ? copy : undefined;
  const digest = hash.digest('hex');
  const measured = count;
  return {
    hash: digest,
    records: measured,
    discard: () => {
      if (kept !== undefined) removeCopy(kept);
    },
    body: {
      contentType: 'application/json',
      length,
      async *open() {
        const again = createHash('sha256');
        let last: Buffer | null = null;
        for (const c of (kept !== undefined && copyChunks(kept, length)) || chunks()) {
          if (last) yield last;
          again.update(c);
          last = c;
        }
        if (again.digest('hex') !== digest) {
          throw new ApiError({ status: null, code: 'BODY_CHANGED', message: 'the PUT /records body differs from the one measured before sending; not sent whole' });
        }
        if (last) yield last;
      },
    },
  };
}

/**
 * The copy's file, private (0600) and empty; null when it cannot be made (the body is then built again for each send).
 * Made anew, never followed through a link nor reused with another file's mode.
 */
function openCopy(path: string): number | null {
  try {
    rmSync(path, { force: true });
    return openSync(path, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
  } catch {
    return null;
  }
}

/** Write all of `b` (a short write is written on from where it stopped); false when the file cannot take it. */
function writeAll(fd: number, b: Buffer): boolean {
  try {
    for (let at = 0; at < b.length; ) at += writeSync(fd, b, at, b.length - at);
    return true;
  } catch {
    return false;
  }
}

/** False when the close reports an error (a write the disk refused late): the copy is then not trusted. */
function closeCopy(fd: number): boolean {
  try {
    closeSync(fd);
    return true;
  } catch {
    return false;
  }
}

function dropCopy(fd: number | null, path: string): null {
  if (fd !== null) closeCopy(fd);
  removeCopy(path);
  return null;
}

/** The copy is only a shortcut: one that cannot be removed is overwritten by the next send, or goes with its plan. */
function removeCopy(path: string): void {
  try {
    rmSync(path, { force: true });
  } catch {
    // kept: see above
  }
}

/**
 * The copy's bytes in chunks of BODY_CHUNK, `length` bytes at most, or null when it is gone (the body is built
 * again). A copy longer than measured is refused before its last measured byte is handed on (open() holds that
 * chunk back until this ends): its first `length` bytes could be another whole body.
 */
function copyChunks(path: string, length: number): Generator<Buffer> | null {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW);
  } catch {
    return null;
  }
  return (function* () {
    try {
      for (let left = length; left > 0; ) {
        // A buffer a chunk: each is handed on to the socket, never reused.
        const b = Buffer.allocUnsafe(Math.min(BODY_CHUNK, left));
        const n = readSync(fd, b, 0, b.length, null);
        if (n === 0) return;
        left -= n;
        yield n === b.length ? b : b.subarray(0, n);
      }
      if (readSync(fd, Buffer.alloc(1), 0, 1, null) > 0) {
        throw new ApiError({ status: null, code: 'BODY_CHANGED', message: 'the PUT /records body copy is longer than the body measured before sending; not sent whole' });
      }
    } finally {
      closeCopy(fd);
    }
  })();
}

/** A6: the six record fields, nothing else. */
export function pickRecord(r: DatasetRecord): DatasetRecord {
  const out: Record<string, unknown> = {};
  for (const f of RECORD_FIELDS) if (r[f] !== undefined) out[f] = r[f];
  return out as unknown as DatasetRecord;
}

/** A33: the patchable fields that are present. */
export function pickPatch(p: RecordPatch): RecordPatch {
  const out: Record<string, unknown> = {};
  for (const f of RECORD_FIELDS) if (f !== 'record_id' && (p as Record<string, unknown>)[f] !== undefined) out[f] = (p as Record<string, unknown>)[f];
  return out as RecordPatch;
}

/** A13/A20: the named option keys that are set. */
export function pickOptions<T extends ReplaceOptions>(o: T): ReplaceOptions {
  const out: ReplaceOptions = {};
  if (o.publish !== undefined) out.publish = o.publish;
  if (o.allow_mass_delete !== undefined) out.allow_mass_delete = o.allow_mass_delete;
  if (o.allow_empty !== undefined) out.allow_empty = o.allow_empty;
  return out;
}
