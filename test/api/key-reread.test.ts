import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ApiError } from '../../src/api/errors.js';
import { rereadKey, resolveKey } from '../../src/config/key.js';
import { keyFingerprint } from '../../src/emulator/index.js';
import { registeredSecrets } from '../../src/log/secret-registry.js';
import { Secret } from '../../src/secret.js';
import { capture } from '../log/capture.js';
import { DS, KEYS, rec, startWorld, type World } from './harness.js';

// Spec, Authentication: after a reissue the old key works for at most 24 hours; then 401 UNAUTHORIZED.
// The client reads the key's source again once on a 401 and, when it holds a new key, sends the request again with it.

const HOUR = 3_600_000;
const OLD = 'tbd_live_OLDCANARY_0000000000000a';
const NEW = 'tbd_live_NEWCANARY_0000000000000b';

/** The test world, where shop-1 also takes the key OLD, and OLD in a 0600 key file in a fresh temp dir; `close` removes both. */
async function oldKeyInFile(): Promise<{ w: World; keyFile: string; close: () => Promise<void> }> {
  const w = await startWorld();
  w.emulator.addKey({ dataset: DS, key: OLD });
  const dir = await mkdtemp(join(tmpdir(), 'key-reread-'));
  const keyFile = join(dir, 'shop-1.key');
  await writeFile(keyFile, `${OLD}\n`, { mode: 0o600 });
  return {
    w,
    keyFile,
    close: async () => {
      await w.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

describe('a 401 after a key reissue: the key source is read again', () => {
  let w: World;
  let keyFile: string;
  let close: () => Promise<void>;
  beforeEach(async () => ({ w, keyFile, close } = await oldKeyInFile()));
  afterEach(() => close());

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

describe('a key read again after a 401 that is refused too (a paste mistake)', () => {
  let w: World;
  let keyFile: string;
  let close: () => Promise<void>;
  beforeEach(async () => ({ w, keyFile, close } = await oldKeyInFile()));
  afterEach(() => close());

  const byKey = (key: string) => w.emulator.requests.filter((r) => r.keyFingerprint === keyFingerprint(key));
  const warnings = (log: ReturnType<typeof capture>) => log.lines().filter((l) => l.event === 'key.warning');

  it("another dataset's key in the file: 404 on the resend puts the previous key back, says why, and the corrected file is picked up by the next 401", async () => {
    const log = capture();
    const client = w.client(OLD, { key: await resolveKey({ file: keyFile }), rereadKey, logger: log.logger });
    await client.createRecord(rec('A-1'));
    w.emulator.revokeKey(OLD);
    await writeFile(keyFile, KEYS.other, { mode: 0o600 }); // shop-2's key, pasted by mistake

    const err = await client.createRecord(rec('A-2')).catch((e: unknown) => e);
    // The request fails as the configured key's refusal, not as "dataset not found".
    expect(err).toMatchObject({ status: 401, code: 'UNAUTHORIZED' });
    expect(byKey(KEYS.other).map((r) => r.status)).toEqual([404]);
    expect(warnings(log)).toEqual([
      expect.objectContaining({
        status: 404,
        code: 'DATASET_NOT_FOUND',
        outcome: 'kept_previous_key',
        key_source: `file ${keyFile}`,
        message: expect.stringMatching(/not a key of dataset shop-1 \(a key of another dataset\?\)/),
      }),
    ]);
    // Back on the previous key: the next request goes out with it, not with shop-2's.
    await expect(client.getDataset()).rejects.toMatchObject({ status: 401 });
    expect(byKey(KEYS.other)).toHaveLength(2); // read again on that 401, tried once more, refused again

    const fixed = w.emulator.addKey({ dataset: DS, key: NEW });
    await writeFile(keyFile, fixed, { mode: 0o600 }); // the operator corrects the file
    const res = await client.createRecord(rec('A-3'));
    expect(res.value.record?.record_id).toBe('A-3');
    expect(byKey(NEW).map((r) => [r.method, r.status])).toEqual([['POST', 201]]);
    expect((await client.getRecord('A-3')).value.record_id).toBe('A-3'); // kept from then on
    expect(byKey(NEW)).toHaveLength(2);
    expect(w.emulator.records(DS).map((r) => r.record_id)).toEqual(['A-1', 'A-3']);
    expect(log.raw()).not.toContain('CANARY');
    expect(log.raw()).not.toContain(KEYS.other);
  });

  it('requests refused together while a wrong key is on trial all fail as 401, and the previous key stays', async () => {
    const log = capture();
    const client = w.client(OLD, { key: await resolveKey({ file: keyFile }), rereadKey, logger: log.logger });
    w.emulator.revokeKey(OLD);
    await writeFile(keyFile, KEYS.other, { mode: 0o600 });
    const got = await Promise.all(['A-1', 'A-2', 'A-3'].map((id) => client.createRecord(rec(id)).catch((e: unknown) => e)));
    expect(got).toEqual([0, 1, 2].map(() => expect.objectContaining({ status: 401, code: 'UNAUTHORIZED' })));
    expect(w.emulator.records(DS)).toEqual([]);
    await writeFile(keyFile, w.emulator.addKey({ dataset: DS, key: NEW }), { mode: 0o600 });
    expect((await client.createRecord(rec('A-4'))).value.record?.record_id).toBe('A-4');
  });

  it('an account key in the file: 403 ACCOUNT_KEY_NOT_SUPPORTED keeps the previous key, and the warning about its shape is logged', async () => {
    const log = capture();
    const client = w.client(OLD, { key: await resolveKey({ file: keyFile }), rereadKey, logger: log.logger });
    w.emulator.revokeKey(OLD);
    await writeFile(keyFile, 'tba_live_ACCOUNTCANARY_000000000000', { mode: 0o600 });
    await expect(client.getDataset()).rejects.toMatchObject({ status: 401, code: 'UNAUTHORIZED' });
    expect(warnings(log)).toEqual([
      expect.objectContaining({ outcome: 'trying_new_key', key_source: `file ${keyFile}`, message: expect.stringMatching(/is an account key/) }),
      expect.objectContaining({ status: 403, code: 'ACCOUNT_KEY_NOT_SUPPORTED', outcome: 'kept_previous_key', message: expect.stringMatching(/it is an account key/) }),
    ]);
    expect(log.raw()).not.toContain('CANARY');
  });

  it('a mistyped key in the file: 401 on the resend too, the previous key stays (no loop: one re-read per request)', async () => {
    const log = capture();
    const client = w.client(OLD, { key: await resolveKey({ file: keyFile }), rereadKey, logger: log.logger });
    w.emulator.revokeKey(OLD);
    await writeFile(keyFile, 'tbd_live_TYPOCANARY_00000000000000', { mode: 0o600 });
    await expect(client.getDataset()).rejects.toMatchObject({ status: 401 });
    expect(w.emulator.requests.map((r) => r.status)).toEqual([401, 401]);
    expect(warnings(log)).toEqual([expect.objectContaining({ status: 401, outcome: 'kept_previous_key', message: expect.stringMatching(/not a valid key/) })]);
  });

  it('the resend with the new key does not use up a retry attempt', async () => {
    const second = w.emulator.addKey({ dataset: DS, key: NEW });
    const client = w.client(OLD, { key: await resolveKey({ file: keyFile }), rereadKey, retry: { maxAttempts: 3 } });
    await writeFile(keyFile, second, { mode: 0o600 });
    // The old key refused once, then the server fails twice: 401, resend, 503, 503, then the answer.
    w.emulator.faults.add({ method: 'GET', count: 1, status: 401, code: 'UNAUTHORIZED' });
    w.emulator.faults.add({ method: 'GET', count: 2, status: 503 });
    const res = await client.getDataset();
    expect(res.value.dataset_id).toBe(DS);
    expect(w.emulator.requests.map((r) => r.status)).toEqual([401, 503, 503, 200]);
  });

  it('50 refused requests with an unchanged key file leave the log scrubber\'s registry as it was', async () => {
    const client = w.client(OLD, { key: await resolveKey({ file: keyFile }), rereadKey });
    w.emulator.revokeKey(OLD);
    const before = registeredSecrets().size;
    for (let i = 0; i < 50; i++) await expect(client.getDataset()).rejects.toMatchObject({ status: 401 });
    expect(w.emulator.requests).toHaveLength(50);
    expect(registeredSecrets().size).toBe(before);
  });
});
