import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { readSse, SseParser, type SseEvent } from '../../src/a2a/sse.js';

function parseAll(pieces: string[]): SseEvent[] {
  const p = new SseParser();
  const out: SseEvent[] = [];
  for (const piece of pieces) out.push(...p.push(piece));
  out.push(...p.end());
  return out;
}

async function readBytes(pieces: Uint8Array[]): Promise<SseEvent[]> {
  async function* gen() {
    yield* pieces;
  }
  const out: SseEvent[] = [];
  for await (const ev of readSse(gen())) out.push(ev);
  return out;
}

const STREAM = [
  ':ok',
  'event: task',
  'data: {"a":1}',
  '',
  ': keep-alive',
  '',
  'data: {"b":',
  'data: "é電話"}',
  'id: 7',
  'retry: 1000',
  '',
  'event:statusUpdate',
  'data:{"c":3}',
  'unknown: x',
  '',
];
const EXPECTED: SseEvent[] = [
  { event: 'task', data: '{"a":1}' },
  { event: 'message', data: '{"b":\n"é電話"}', id: '7' },
  { event: 'statusUpdate', data: '{"c":3}', id: '7' },
];

describe('SseParser', () => {
  for (const [name, nl] of [
    ['LF', '\n'],
    ['CRLF', '\r\n'],
    ['CR', '\r'],
  ] as const) {
    const text = STREAM.join(nl) + nl;
    it(`reads comments, multi-line data, names and ids with ${name} line endings`, () => {
      expect(parseAll([text])).toEqual(EXPECTED);
    });

    it(`gives the same events for every single split point (${name})`, () => {
      for (let i = 0; i <= text.length; i++) {
        expect(parseAll([text.slice(0, i), text.slice(i)]), `split at ${i}`).toEqual(EXPECTED);
      }
    });

    it(`gives the same events for every byte split point, UTF-8 cut mid-character (${name})`, async () => {
      const bytes = Buffer.from(text, 'utf8');
      for (let i = 0; i <= bytes.length; i++) {
        expect(await readBytes([bytes.subarray(0, i), bytes.subarray(i)]), `split at byte ${i}`).toEqual(EXPECTED);
      }
    });
  }

  it('gives the same events for any chunking (property)', async () => {
    const bytes = Buffer.from(STREAM.join('\r\n') + '\r\n', 'utf8');
    await fc.assert(
      fc.asyncProperty(fc.uniqueArray(fc.integer({ min: 1, max: bytes.length - 1 }), { maxLength: 12 }), async (cuts) => {
        const sorted = [...cuts].sort((a, b) => a - b);
        const pieces: Uint8Array[] = [];
        let from = 0;
        for (const c of [...sorted, bytes.length]) {
          pieces.push(bytes.subarray(from, c));
          from = c;
        }
        expect(await readBytes(pieces)).toEqual(EXPECTED);
      }),
    );
  });

  it('strips a leading BOM and one space after the colon only', () => {
    expect(parseAll(['\uFEFFdata:  two spaces\n\n'])).toEqual([{ event: 'message', data: ' two spaces' }]);
  });

  it('ignores blank lines without data and comment-only streams', () => {
    expect(parseAll([':a\n\n\n:b\n\n'])).toEqual([]);
  });

  it('gives a last event whose lines were complete but drops a truncated last line', () => {
    expect(parseAll(['data: whole\n'])).toEqual([{ event: 'message', data: 'whole' }]);
    expect(parseAll(['data: whole\n\ndata: trunc'])).toEqual([{ event: 'message', data: 'whole' }]);
  });
});
