import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { resolveKey, resolveKeyDetailed } from '../../src/config/index.js';
import { hasCode } from '../../src/errors.js';
import { registeredSecrets } from '../../src/log/index.js';
import { tempFiles } from './helpers.js';

const KEY_A = 'tbd_live_credential_AAAA';
const KEY_B = 'tbd_live_file_BBBB';
const KEY_C = 'tbd_live_env_CCCC';

async function setup(keyMode = 0o600) {
  const dir = await tempFiles({ 'creds/shop-1-key': `${KEY_A}\n`, 'keys/shop-1': `${KEY_B}\n` }, { 'keys/shop-1': keyMode });
  return { dir, creds: join(dir, 'creds'), file: join(dir, 'keys/shop-1') };
}

describe('resolveKey', () => {
  it('prefers the systemd credential, then the file, then the environment', async () => {
    const { creds, file } = await setup();
    const source = { credential: 'shop-1-key', file, env: 'SHOP1_KEY' };
    const env = { CREDENTIALS_DIRECTORY: creds, SHOP1_KEY: KEY_C };
    expect((await resolveKey(source, env)).reveal()).toBe(KEY_A);
    expect((await resolveKey(source, { SHOP1_KEY: KEY_C })).reveal()).toBe(KEY_B);
    expect((await resolveKey({ ...source, file: `${file}-missing` }, { SHOP1_KEY: KEY_C })).reveal()).toBe(KEY_C);
    const detail = await resolveKeyDetailed({ ...source, credential: 'other' }, env);
    expect(detail).toMatchObject({ from: 'file', location: file, warnings: [] });
  });

  it('trims the trailing newline of key files', async () => {
    const { file } = await setup();
    expect((await resolveKey({ file }, {})).reveal()).toBe(KEY_B);
  });

  it.each([0o644, 0o640, 0o604, 0o660])('refuses a key file with mode %o, saying chmod 600', async (mode) => {
    const { file } = await setup(mode);
    const err = await resolveKey({ file, env: 'SHOP1_KEY' }, { SHOP1_KEY: KEY_C }).catch((e: unknown) => e);
    expect(hasCode(err, 'KEY_FILE_PERMISSIONS')).toBe(true);
    expect((err as Error).message).toContain(`chmod 600 ${file}`);
    expect((err as Error).message).not.toContain(KEY_B);
  });

  it('names every source it tried when none has the key', async () => {
    const err = await resolveKey({ credential: 'shop-1-key', file: '/nonexistent/key', env: 'SHOP1_KEY' }, {}).catch((e: unknown) => e);
    expect(hasCode(err, 'KEY_NOT_FOUND')).toBe(true);
    expect((err as Error).message).toMatch(/CREDENTIALS_DIRECTORY is not set.*\/nonexistent\/key \(not found\).*SHOP1_KEY \(not set\)/);
  });

  it('treats an empty key as missing', async () => {
    const err = await resolveKey({ env: 'K' }, { K: '  ' }).catch((e: unknown) => e);
    expect(hasCode(err, 'KEY_NOT_FOUND')).toBe(true);
  });

  it('warns about a key that is not a dataset key (A23)', async () => {
    const warnings: string[] = [];
    await resolveKey({ env: 'K' }, { K: 'tba_live_account' }, { warn: (w) => warnings.push(w) });
    await resolveKey({ env: 'K' }, { K: 'something-else' }, { warn: (w) => warnings.push(w) });
    await resolveKey({ env: 'K' }, { K: KEY_C }, { warn: (w) => warnings.push(w) });
    expect(warnings).toHaveLength(2);
    expect(warnings[0]).toMatch(/account key.*ACCOUNT_KEY_NOT_SUPPORTED/);
    expect(warnings[1]).toMatch(/does not start with tbd_live_/);
  });

  it('registers the key with the log scrubber', async () => {
    const secret = await resolveKey({ env: 'K' }, { K: 'registered-canary-value' });
    expect([...registeredSecrets()]).toContain(secret);
  });
});
