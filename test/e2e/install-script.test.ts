import { spawnSync } from 'node:child_process';
import { mkdir, mkdtemp, readdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SCRIPT = fileURLToPath(new URL('../../systemd/install.sh', import.meta.url));
const asRoot = process.getuid?.() === 0;

function install(args: string[], env: Record<string, string>) {
  return spawnSync('sh', [SCRIPT, ...args], { env: { ...process.env, ...env }, encoding: 'utf8' });
}

// Review item 11: install.sh refuses a node the hardened unit cannot run, and --purge removes everything it owns.
describe('systemd/install.sh', () => {
  it('refuses a node under /home (nvm): ProtectHome=yes would make the unit fail with 203/EXEC', async () => {
    const root = await mkdtemp(join(tmpdir(), 'dc-install-'));
    const r = install([], {
      NODE: '/home/shop/.nvm/versions/node/v20.11.0/bin/node',
      PREFIX: join(root, 'opt'),
      ETC: join(root, 'etc'),
      UNIT_DIR: join(root, 'units'),
      SYSTEMCTL: 'true',
    });
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('ProtectHome');
    expect(r.stderr).toContain('203/EXEC');
    expect(await readdir(root)).toEqual([]);
  });

  it.skipIf(!asRoot)('--uninstall keeps the unit drop-ins; --uninstall --purge removes them with config and state', async () => {
    const root = await mkdtemp(join(tmpdir(), 'dc-install-'));
    const env = {
      PREFIX: join(root, 'opt'),
      ETC: join(root, 'etc'),
      UNIT_DIR: join(root, 'units'),
      STATE_DIR: join(root, 'var', 'lib', 'dataset-connector'),
      DC_USER: 'dc-test-no-such-user',
      SYSTEMCTL: 'true',
    };
    const lay = async () => {
      for (const d of [env.PREFIX, env.ETC, env.STATE_DIR, join(env.UNIT_DIR, 'dataset-connector.service.d')]) await mkdir(d, { recursive: true });
      await writeFile(join(env.UNIT_DIR, 'dataset-connector.service'), '[Service]\n');
      await writeFile(join(env.UNIT_DIR, 'dataset-connector.service.d', 'override.conf'), '[Service]\nReadWritePaths=/srv/pos\n');
    };
    await lay();
    const keep = install(['--uninstall'], env);
    expect(keep.status, keep.stderr).toBe(0);
    expect(await readdir(env.UNIT_DIR)).toEqual(['dataset-connector.service.d']);

    await lay();
    const purge = install(['--uninstall', '--purge'], env);
    expect(purge.status, purge.stderr).toBe(0);
    expect(await readdir(env.UNIT_DIR)).toEqual([]);
    expect(await readdir(root)).toEqual(['units', 'var']);
    expect(await readdir(join(root, 'var', 'lib'))).toEqual([]);
  });
});
