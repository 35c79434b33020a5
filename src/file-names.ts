import { createHash } from 'node:crypto';
import { extname } from 'node:path';

/** The longest file name Linux file systems take (NAME_MAX), in bytes. */
export const NAME_MAX_BYTES = 255;

/** An extension longer than this is no extension: it is part of the stem and may be shortened. */
const MAX_EXT_BYTES = 16;

/** `name` as stem and extension (`stock.csv` → `stock`, `.csv`); a dot-less or overlong extension gives ''. */
export function splitExt(name: string): { stem: string; ext: string } {
  const ext = extname(name);
  if (Buffer.byteLength(ext) > MAX_EXT_BYTES) return { stem: name, ext: '' };
  return { stem: name.slice(0, name.length - ext.length), ext };
}

/**
 * `stem + suffix`, within `max` bytes. A stem too long is cut on a character
 * boundary (never inside a UTF-8 sequence) and ends in `~` and 8 hex digits of
 * its hash, so two long names that start alike stay apart. Without this an
 * export whose name is near the limit cannot be archived (ENAMETOOLONG) and
 * stays in the inbox.
 */
export function fitName(stem: string, suffix: string, max = NAME_MAX_BYTES): string {
  if (Buffer.byteLength(stem) + Buffer.byteLength(suffix) <= max) return stem + suffix;
  const tag = `~${createHash('sha256').update(stem).digest('hex').slice(0, 8)}`;
  let room = max - Buffer.byteLength(suffix) - tag.length;
  let cut = '';
  for (const ch of stem) {
    room -= Buffer.byteLength(ch);
    if (room < 0) break;
    cut += ch;
  }
  return cut + tag + suffix;
}
