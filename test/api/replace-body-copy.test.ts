import { existsSync, lstatSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { replaceBody } from '../../src/api/bodies.js';
import { recs, rejectionOf, startWorld, type World } from './harness.js';

/**
 * Issue 18: the PUT /records body's measured bytes kept in a private file, so that a send reads them instead of
 * building the body from its records again; read, they are checked against the measure like a body built again.
 */
describe('a replace body sent from the copy its measure wrote', () => {
  let w: World;
  let dir: string;
  beforeEach(async () => {
    w = await startWorld();
    dir = mkdtempSync(join(tmpdir(), 'body-copy-'));
  });
  afterEach(async () => {
    await w.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** A body of `n` records (about 40 chunks of 64 KiB at 2,000) whose records are counted each time they are read. */
  function counted(n: number, copy?: string) {
    const texts = recs(n).map((r) => ({ json: JSON.stringify(r) }));
    const reads = { n: 0 };
    const made = replaceBody(
      () => {
        reads.n++;
        return texts;
      },
      { publish: false },
      copy,
    );
    return { ...made, reads, bytes: Buffer.from(`{"options":{"publish":false},"records":[${texts.map((t) => t.json).join(',')}]}`) };
  }

  async function sent(body: { open(): AsyncIterable<Uint8Array> }): Promise<Buffer> {
    const parts: Uint8Array[] = [];
    for await (const c of body.open()) parts.push(c);
    return Buffer.concat(parts);
  }

  it('sends the bytes measured without reading the records again, and the server takes them', async () => {
    const copy = join(dir, 'replace-body.json');
    const b = counted(2_000, copy);
    expect(b.reads.n).toBe(1);
    expect(readFileSync(copy)).toEqual(b.bytes);
    expect(await sent(b.body)).toEqual(b.bytes);
    const { value } = await w.client().replaceRecordsStreamed(b.body, { idempotencyKey: 'copy-1' });
    expect(value.job_id).toEqual(expect.any(String));
    expect(w.emulator.requests.find((r) => r.method === 'PUT')?.bodyBytes).toBe(b.bytes.length);
    expect(b.reads.n).toBe(1);
    b.discard();
    expect(existsSync(copy)).toBe(false);
  });

  it('a copy changed after its measure is cut off before its last byte (BODY_CHANGED), never sent whole', async () => {
    const copy = join(dir, 'replace-body.json');
    const b = counted(2_000, copy);
    const changed = Buffer.from(b.bytes);
    changed[100] = changed[100] === 0x41 ? 0x42 : 0x41; // same length, one byte other
    writeFileSync(copy, changed);
    const got: Uint8Array[] = [];
    const err = await rejectionOf(
      (async () => {
        for await (const c of b.body.open()) got.push(c);
      })(),
    );
    expect(err).toMatchObject({ code: 'BODY_CHANGED' });
    expect(Buffer.concat(got).length).toBeLessThan(b.bytes.length);
    expect(b.reads.n).toBe(1);
  });

  it('a copy longer than measured, whose first bytes are another whole body ending on a chunk, is refused before its last byte', async () => {
    // A body of exactly two 64 KiB chunks: the last record's name pads it out.
    const head = '{"options":{"publish":false},"records":[';
    const texts = recs(300).map((r) => JSON.stringify(r));
    const bare = head.length + texts.join(',').length + 2;
    const last = JSON.parse(texts[texts.length - 1]!) as { display_name: string };
    last.display_name += 'x'.repeat(2 * 65_536 - bare);
    texts[texts.length - 1] = JSON.stringify(last);
    const copy = join(dir, 'replace-body.json');
    const b = replaceBody(() => texts.map((json) => ({ json })), { publish: false }, copy);
    expect(b.body.length).toBe(2 * 65_536);
    // Another body of the same length (one record's name other), then one byte more.
    const other = Buffer.from(readFileSync(copy, 'latin1').replace('"display_name":"Item A-00001"', '"display_name":"Item X-00001"'), 'latin1');
    expect(other.length).toBe(b.body.length);
    writeFileSync(copy, Buffer.concat([other, Buffer.from(' ')]));
    const got: Uint8Array[] = [];
    const err = await rejectionOf(
      (async () => {
        for await (const c of b.body.open()) got.push(c);
      })(),
    );
    expect(err).toMatchObject({ code: 'BODY_CHANGED' });
    expect(Buffer.concat(got).length).toBeLessThan(b.body.length);
  });

  it('makes the copy anew: a link in its place is replaced, never written through', async () => {
    const copy = join(dir, 'replace-body.json');
    const target = join(dir, 'elsewhere.txt');
    writeFileSync(target, 'not ours');
    symlinkSync(target, copy);
    const b = counted(200, copy);
    expect(readFileSync(target, 'utf8')).toBe('not ours');
    expect(lstatSync(copy).isSymbolicLink()).toBe(false);
    expect(lstatSync(copy).mode & 0o777).toBe(0o600);
    expect(await sent(b.body)).toEqual(b.bytes);
    expect(b.reads.n).toBe(1);
  });

  it('builds the body again where the copy is gone or could not be written', async () => {
    const copy = join(dir, 'replace-body.json');
    const b = counted(500, copy);
    rmSync(copy);
    expect(await sent(b.body)).toEqual(b.bytes);
    expect(b.reads.n).toBe(2);
    const nowhere = counted(500, join(dir, 'no-such-folder', 'replace-body.json'));
    expect(await sent(nowhere.body)).toEqual(nowhere.bytes);
    expect(nowhere.reads.n).toBe(2);
    expect(() => nowhere.discard()).not.toThrow();
  });
});
