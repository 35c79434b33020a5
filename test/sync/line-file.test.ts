import fc from 'fast-check';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ChunkWriter, LineWriter, readLines } from '../../src/sync/disk/line-file.js';
import { lineField } from '../../src/sync/disk/entry-line.js';
import { tempDir } from './diff-fixtures.js';

/**
 * The sync's files on disk are read a line at a time from a reused buffer,
 * each line decoded alone (issue 18: no chunk-sized string kept alive across
 * a merge). Every line must come back whole, whatever the buffer size: lines
 * longer than it, characters of several UTF-8 bytes cut by a read, empty
 * lines, a last line with or without its line break.
 */

let t: ReturnType<typeof tempDir>;
beforeEach(() => {
  t = tempDir();
});
afterEach(() => t.cleanup());

let n = 0;
const file = (): string => join(t.dir, `lines-${++n}`);

describe('readLines', () => {
  it('gives back every line written, whatever the read size', () => {
    // Characters of 1 to 4 UTF-8 bytes (Japanese, an emoji's surrogate pair), tabs, quotes; no line breaks.
    const char = fc.constantFrom('a', 'z', '0', '\t', '"', '\\', ' ', 'é', '表', '示', '😀');
    const line = fc.array(char, { maxLength: 40 }).map((cs) => cs.join(''));
    fc.assert(
      fc.property(fc.array(line, { maxLength: 30 }), fc.integer({ min: 1, max: 64 }), (lines, chunk) => {
        const path = file();
        const w = new LineWriter(path);
        for (const l of lines) w.write(l);
        w.close();
        expect([...readLines(path, chunk)]).toEqual(lines);
      }),
    );
  });

  it('gives a last line that has no line break, and no line for a file that ends with one', () => {
    const path = file();
    writeFileSync(path, 'a\n\nb😀c\n表示');
    expect([...readLines(path, 2)]).toEqual(['a', '', 'b😀c', '表示']);
    writeFileSync(path, 'a\n\n');
    expect([...readLines(path, 3)]).toEqual(['a', '']);
    writeFileSync(path, '');
    expect([...readLines(path, 3)]).toEqual([]);
  });

  it('reads a line many times longer than its buffer whole', () => {
    const path = file();
    const long = '表'.repeat(10_000);
    writeFileSync(path, `x\n${long}\ny\n`);
    expect([...readLines(path, 16)]).toEqual(['x', long, 'y']);
  });
});

const NEWLINE = Buffer.from('\n');

describe('ChunkWriter', () => {
  it('writes the byte ranges given, in order, short (copied a byte at a time) or long, whatever its chunk size', () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 1, maxLength: 300 }), fc.array(fc.tuple(fc.nat(), fc.nat(80)), { maxLength: 40 }), fc.integer({ min: 1, max: 100 }), (src, ranges, size) => {
        const path = file();
        const w = new ChunkWriter(path, Buffer.alloc(size));
        const expected: number[] = [];
        const buf = Buffer.from(src);
        for (const [at, len] of ranges) {
          const from = at % buf.length;
          const end = Math.min(buf.length, from + len);
          w.put(buf, from, end);
          expected.push(...buf.subarray(from, end));
          if (len % 7 === 0) {
            w.put(NEWLINE, 0, 1);
            expected.push(10);
          }
        }
        w.close();
        expect([...readFileSync(path)]).toEqual(expected);
      }),
      { numRuns: 300 },
    );
  });
});

describe('lineField', () => {
  it('reads a line field as Number does, digits or not', () => {
    const field = fc.oneof(fc.nat().map(String), fc.stringMatching(/^[0-9]{0,20}$/), fc.string({ maxLength: 6 }), fc.constantFrom('', '-1', '+2', ' 3', '1e3', '0x10', '007', '1.5'));
    fc.assert(
      fc.property(fc.string({ maxLength: 4 }), field, fc.string({ maxLength: 4 }), (before, f, after) => {
        const text = before + f + after;
        expect(lineField(text, before.length, before.length + f.length)).toBe(Number(f));
      }),
      { numRuns: 1000 },
    );
  });
});
