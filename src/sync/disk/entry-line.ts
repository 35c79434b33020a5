import type { SourceEntry } from '../core/changeset.js';
import { idField, parseIdField, readLines } from './line-file.js';

/**
 * The line format of a sorted source's runs and of the files that keep
 * source entries (changeset, feed state): one entry a line, its fields
 * separated by tabs.
 */

/** The entries of a file of entry lines. */
export function* readEntries(path: string): Generator<SourceEntry> {
  for (const text of readLines(path)) {
    const a = text.indexOf('\t');
    const b = text.indexOf('\t', a + 1);
    const record_id = parseIdField(text.slice(0, a));
    const line = Number(text.slice(a + 1, b));
    if (text.charCodeAt(b + 1) !== FLAGS_MARK) yield { record_id, line, json: text.slice(b + 1) };
    else {
      const c = text.indexOf('\t', b + 1);
      yield { record_id, line, json: text.slice(c + 1), flags: text.slice(b + 2, c) };
    }
  }
}

/**
 * One entry as a line (no line break): id, file line, then the value flags when given (after FLAGS_MARK, a
 * character no JSON starts with, so lines without them, and files written before them, read the same), JSON.
 */
export function entryLine(id: string, line: number, json: string, flags?: string): string {
  return flags === undefined ? `${idField(id)}\t${line}\t${json}` : `${idField(id)}\t${line}\t~${flags}\t${json}`;
}

/** `~`: starts the flags field of an entry line. */
export const FLAGS_MARK = 0x7e;
