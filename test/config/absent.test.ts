import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/config/errors.js';
import { configAbsent, loadConfig } from '../../src/config/load.js';

// `call` skips the allow-list of the default config only when that file is really absent.
describe('configAbsent', () => {
  it('is true for ENOENT only; a config that is there but cannot be read fails to load, naming the file', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'dc-absent-'));
    expect(await configAbsent(join(dir, 'connector.yaml'))).toBe(true);
    await writeFile(join(dir, 'connector.yaml'), 'datasets: {}\n');
    expect(await configAbsent(join(dir, 'connector.yaml'))).toBe(false);
    // A path the process cannot look into (ENOTDIR here; EACCES on a 0750 folder of another group behaves alike).
    const unreadable = join(dir, 'connector.yaml', 'connector.yaml');
    expect(await configAbsent(unreadable)).toBe(false);
    const err = await loadConfig(unreadable).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).issues[0]).toMatchObject({ file: unreadable, message: expect.stringContaining('cannot read') });
  });
});
