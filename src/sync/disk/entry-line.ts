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
    const line = lineField(text, a + 1, b);
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

/** The file line written in text[from, end): read digit by digit when it is plain digits (as entryLine writes it), else as Number reads it. */
export function lineField(text: string, from: number, end: number): number {
  if (end <= from || end - from > 15) return Number(text.slice(from, end));
  let n = 0;
  for (let i = from; i < end; i++) {
    const d = text.charCodeAt(i) - 0x30;
    if (d < 0 || d > 9) return Number(text.slice(from, end));
    n = n * 10 + d;
  }
  return n;
}

/** `~`: starts the flags field of an entry line. */
export const FLAGS_MARK = 0x7e;
