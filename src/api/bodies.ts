import { openAsBlob } from 'node:fs';
import { FormData } from 'undici';
import { canonicalJson } from '../model/canonical.js';
import { RECORD_FIELDS, type DatasetRecord, type RecordPatch } from '../model/record.js';
import { ApiError } from './errors.js';
import type { UploadFields, UploadFile } from './options.js';
import type { ReplaceOptions } from './wire.js';

/** Request bodies of the client: only the fields the contract names travel (A34). */

/** A14: the multipart body of `POST /imports`. */
export async function importForm(file: UploadFile, fields: UploadFields): Promise<FormData> {
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
