import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ApiError } from '../../src/api/errors.js';
import { rereadKey, resolveKey } from '../../src/config/key.js';
import { keyFingerprint } from '../../src/emulator/index.js';
import { Secret } from '../../src/secret.js';
import { DS, KEYS, rec, startWorld, type World } from './harness.js';

// Spec, Authentication: after a reissue the old key works for at most 24 hours; then 401 UNAUTHORIZED.
// The client reads the key's source again once on a 401 and, when it holds a new key, sends the request again with it.

const HOUR = 3_600_000;
const OLD = 'tbd_live_OLDCANARY_0000000000000a';
const NEW = 'tbd_live_NEWCANARY_0000000000000b';

function capture(): { logger: pino.Logger; lines: () => Record<string, unknown>[]; raw: () => string } {
  let raw = '';
  const stream = new Writable({
    write(chunk, _enc, cb) {
      raw += String(chunk);
      cb();
    },
  });
  return { logger: pino({ level: 'debug' }, stream), raw: () => raw, lines: () => raw.trim().split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>) };
}

describe('a 401 after a key reissue: the key source is read again', () => {
  let w: World;
  let dir: string;
  let keyFile: string;
  beforeEach(async () => {
    w = await startWorld();
    w.emulator.addKey({ dataset: DS, key: OLD });
    dir = await mkdtemp(join(tmpdir(), 'key-reread-'));
    keyFile = join(dir, 'shop-1.key');
    await writeFile(keyFile, `${OLD}\n`, { mode: 0o600 });
  });
  afterEach(async () => {
    await w.close();
    await rm(dir, { recursive: true, force: true });
  });

  const byKey = (key: string) => w.emulator.requests.filter((r) => r.keyFingerprint === keyFingerprint(key));

  it('after the grace ends, the next write is refused once, sent again with the new key from the file, applied exactly once', async () => {
    const log = capture();
    const client = w.client(OLD, { key: await resolveKey({ file: keyFile }), rereadKey, logger: log.logger });
    await client.createRecord(rec('A-1'));
    w.emulator.reissueKey({ key: OLD, graceMs: 6 * HOUR, newKey: NEW });
    await writeFile(keyFile, `${NEW}\n`, { mode: 0o600 });
    // During the grace the old key still works and is still used: nothing to notice yet.
    await client.createRecord(rec('A-2'));
    expect(byKey(NEW)).toHaveLength(0);

    w.clock.advance(6 * HOUR);
    const writes = w.emulator.counters.recordWrites;
    const res = await client.createRecord(rec('A-3'));
    expect(res.value.record?.record_id).toBe('A-3');
    expect(w.emulator.counters.recordWrites).toBe(writes + 1);
    expect(byKey(OLD).map((r) => r.status)).toEqual([201, 201, 401]);
    expect(byKey(NEW).map((r) => [r.method, r.status])).toEqual([['POST', 201]]);
    // From now on the new key is used directly.
    expect((await client.getRecord('A-1')).value.record_id).toBe('A-1');
    expect(byKey(OLD)).toHaveLength(3);
    expect(w.emulator.records(DS).map((r) => r.record_id)).toEqual(['A-1', 'A-2', 'A-3']);

    expect(log.lines().filter((l) => l.event === 'api.retry')).toEqual([
      expect.objectContaining({ status: 401, code: 'UNAUTHORIZED', reason: 'key_changed', method: 'POST', path: '/records' }),
    ]);
    expect(log.raw()).not.toContain('CANARY');
  });

  it('requests refused together read the source once and all go through with the new key', async () => {
    let reads = 0;
    const counted = (k: Secret) => (reads++, rereadKey(k));
    const client = w.client(OLD, { key: await resolveKey({ file: keyFile }), rereadKey: counted });
    w.emulator.reissueKey({ key: OLD, graceMs: HOUR, newKey: NEW });
    await writeFile(keyFile, NEW, { mode: 0o600 });
    w.clock.advance(HOUR);
    const got = await Promise.all(['A-1', 'A-2', 'A-3'].map((id) => client.createRecord(rec(id))));
    expect(got.map((g) => g.value.record?.record_id)).toEqual(['A-1', 'A-2', 'A-3']);
    expect(reads).toBe(1);
    expect(w.emulator.records(DS)).toHaveLength(3);
  });

  it('the same key still in the file: the 401 stands after one re-read (no loop), code UNAUTHORIZED, no key in the error', async () => {
    const client = w.client(OLD, { key: await resolveKey({ file: keyFile }), rereadKey });
    w.emulator.reissueKey({ key: OLD, graceMs: 0, newKey: NEW });
    const err = await client.createRecord(rec('A-1')).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect(err).toMatchObject({ status: 401, code: 'UNAUTHORIZED', action: 'stop' });
    expect(byKey(OLD)).toHaveLength(1);
    expect(JSON.stringify(err) + String((err as Error).message)).not.toContain('CANARY');
  });

  it('a key file that can no longer be read safely keeps the 401 and says why (key.warning), never the key', async () => {
    const log = capture();
    const client = w.client(OLD, { key: await resolveKey({ file: keyFile }), rereadKey, logger: log.logger });
    w.emulator.reissueKey({ key: OLD, graceMs: 0, newKey: NEW });
    await writeFile(keyFile, NEW);
    await chmod(keyFile, 0o644);
    await expect(client.getDataset()).rejects.toMatchObject({ status: 401, code: 'UNAUTHORIZED' });
    expect(byKey(NEW)).toHaveLength(0);
    expect(log.lines().filter((l) => l.event === 'key.warning')).toEqual([
      expect.objectContaining({ code: 'KEY_FILE_PERMISSIONS', outcome: 'kept_previous_key', message: expect.stringContaining('chmod 600') }),
    ]);
    expect(log.raw()).not.toContain('CANARY');
  });

  it('without rereadKey, or with a key not read from a source, a 401 is thrown as before', async () => {
    w.emulator.revokeKey(KEYS.full);
    await expect(w.client(KEYS.full).getDataset()).rejects.toMatchObject({ status: 401 });
    await expect(w.client(KEYS.full, { rereadKey }).getDataset()).rejects.toMatchObject({ status: 401 });
    expect(await rereadKey(new Secret(KEYS.full))).toBeUndefined();
  });
});
