import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmod, mkdir, mkdtemp, readFile, readdir, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const SCRIPT = fileURLToPath(new URL('../../systemd/install.sh', import.meta.url));
const asRoot = process.getuid?.() === 0;

function install(args: string[], env: Record<string, string>) {
  return spawnSync('sh', [SCRIPT, ...args], { env: { ...process.env, ...env }, encoding: 'utf8' });
}

/** uid of a user name, or undefined when there is none. */
function uidOf(user: string): number | undefined {
  const r = spawnSync('id', ['-u', user], { encoding: 'utf8' });
  return r.status === 0 ? Number(r.stdout.trim()) : undefined;
}

const mode = async (path: string) => (await stat(path)).mode & 0o7777;

// Install.sh refuses a node the hardened unit cannot run, and --purge removes everything it owns.
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
      BIN_DIR: join(root, 'bin'),
      DC_USER: 'dc-test-no-such-user',
      SYSTEMCTL: 'true',
    };
    const lay = async () => {
      for (const d of [env.PREFIX, env.ETC, env.STATE_DIR, env.BIN_DIR, join(env.UNIT_DIR, 'dataset-connector.service.d')]) await mkdir(d, { recursive: true });
      await writeFile(join(env.UNIT_DIR, 'dataset-connector.service'), '[Service]\n');
      await writeFile(join(env.UNIT_DIR, 'dataset-connector.service.d', 'override.conf'), '[Service]\nReadWritePaths=/srv/pos\n');
      // Someone else's program of the same name on the PATH is never removed.
      await writeFile(join(env.BIN_DIR, 'dataset-connector'), '#!/bin/sh\necho not ours\n');
    };
    await lay();
    const keep = install(['--uninstall'], env);
    expect(keep.status, keep.stderr).toBe(0);
    expect(await readdir(env.UNIT_DIR)).toEqual(['dataset-connector.service.d']);
    expect(await readdir(env.BIN_DIR)).toEqual(['dataset-connector']);

    await lay();
    const purge = install(['--uninstall', '--purge'], env);
    expect(purge.status, purge.stderr).toBe(0);
    expect(await readdir(env.UNIT_DIR)).toEqual([]);
    expect((await readdir(root)).sort()).toEqual(['bin', 'units', 'var']);
    expect(await readdir(join(root, 'var', 'lib'))).toEqual([]);
  });
});

// Issue 17 (install): after install.sh the command is on the PATH, runs as the service user when root
// starts it, and the keys are the service user's alone.
describe.skipIf(!asRoot)('systemd/install.sh into a temporary root (as root; systemctl skipped)', () => {
  const user = `dct-${randomBytes(4).toString('hex')}`;
  afterAll(() => {
    if (uidOf(user) !== undefined) spawnSync('userdel', [user]);
  });

  it('installs program, config, keys, state, unit and launcher with their owners and modes; --uninstall and --purge undo it', async () => {
    const root = await mkdtemp(join(tmpdir(), 'dc-install-'));
    await chmod(root, 0o755); // the service user must be able to walk to its files
    const env = {
      PREFIX: join(root, 'opt', 'dataset-connector'),
      ETC: join(root, 'etc', 'dataset-connector'),
      UNIT_DIR: join(root, 'units'),
      STATE_DIR: join(root, 'var', 'lib', 'dataset-connector'),
      BIN_DIR: join(root, 'bin'),
      DC_USER: user,
      NPM_CI: 'no',
      SYSTEMCTL: 'false', // would fail the script if it were called
    };
    // A shop that wrote its config and key before installing (root's file, as an editor leaves it).
    await mkdir(join(env.ETC, 'keys'), { recursive: true });
    await chmod(join(root, 'etc'), 0o755);
    const keyFile = join(env.ETC, 'keys', 'shop-1');
    await writeFile(keyFile, 'tbd_live_installtest0123456789\n', { mode: 0o644 });
    await writeFile(
      join(env.ETC, 'connector.yaml'),
      [
        `state_dir: ${env.STATE_DIR}`,
        'datasets:',
        '  shop-1:',
        '    api: { base_url: "http://127.0.0.1:9", key: { file: ' + keyFile + ' } }',
        '    source: { type: csv }',
        '    mapping: { fields: { record_id: SKU, display_name: Name, api_value: SKU } }',
        '',
      ].join('\n'),
    );

    const r = install([], env);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toContain(`created system user ${user}`);
    const uid = uidOf(user)!;
    expect(uid).toBeGreaterThan(0);
    const gid = Number(spawnSync('id', ['-g', user], { encoding: 'utf8' }).stdout.trim());

    const owner = async (path: string) => {
      const s = await stat(path);
      return { uid: s.uid, gid: s.gid, mode: (s.mode & 0o7777).toString(8) };
    };
    // Program: root's, readable by all, no dev dependencies.
    expect(await owner(join(env.PREFIX, 'dist', 'cli', 'main.js'))).toEqual({ uid: 0, gid: 0, mode: '644' });
    expect(await owner(env.PREFIX)).toEqual({ uid: 0, gid: 0, mode: '755' });
    await expect(stat(join(env.PREFIX, 'node_modules', 'vitest'))).rejects.toThrow();
    await stat(join(env.PREFIX, 'node_modules', 'better-sqlite3'));
    // Config: the service user reads it through its group and cannot change it; the shop's file is kept.
    expect(await owner(env.ETC)).toEqual({ uid: 0, gid, mode: '750' });
    expect(await owner(join(env.ETC, 'conf.d'))).toEqual({ uid: 0, gid, mode: '750' });
    expect(await owner(join(env.ETC, 'keys'))).toEqual({ uid: 0, gid, mode: '750' });
    expect(await readFile(join(env.ETC, 'connector.yaml'), 'utf8')).toContain(`state_dir: ${env.STATE_DIR}`);
    // Keys: the service user's alone.
    expect(await owner(keyFile)).toEqual({ uid, gid, mode: '600' });
    expect(await owner(env.STATE_DIR)).toEqual({ uid, gid, mode: '700' });
    // Unit: the paths of this layout.
    const unit = await readFile(join(env.UNIT_DIR, 'dataset-connector.service'), 'utf8');
    expect(await mode(join(env.UNIT_DIR, 'dataset-connector.service'))).toBe(0o644);
    expect(unit).toContain(`ExecStart=${process.execPath} ${env.PREFIX}/dist/cli/main.js run`);
    expect(unit).toContain(`Environment=DATASET_CONNECTOR_CONFIG=${env.ETC}/connector.yaml`);
    // unix-dgram is built here (the checkout's node_modules): readiness and watchdog stay on.
    expect(unit).toMatch(/^Type=notify$/m);
    expect(unit).toMatch(/^WatchdogSec=/m);

    // The launcher: on the PATH, the installed config by default, and as the service user when root runs it.
    const launcher = join(env.BIN_DIR, 'dataset-connector');
    expect(await owner(launcher)).toEqual({ uid: 0, gid: 0, mode: '755' });
    const run = (...args: string[]) =>
      spawnSync('dataset-connector', args, {
        env: { ...process.env, PATH: `${env.BIN_DIR}:${process.env.PATH}`, DATASET_CONNECTOR_CONFIG: '' },
        encoding: 'utf8',
        cwd: root,
      });
    const validate = run('validate', '--keys');
    expect({ status: validate.status, stderr: validate.stderr }).toEqual({ status: 0, stderr: '' });
    expect(validate.stdout).toContain('configuration OK: 1 dataset (shop-1)');
    // The state database a command creates belongs to the service, not to root.
    const status = run('status', '--json');
    expect(status.status, status.stderr).toBe(0);
    expect(await owner(join(env.STATE_DIR, 'state.db'))).toMatchObject({ uid, gid, mode: '600' });
    // A key root wrote after the install is not readable by the service user: the launcher shows it as the service would.
    await writeFile(keyFile, 'tbd_live_installtest0123456789\n', { mode: 0o600 });
    const { chown } = await import('node:fs/promises');
    await chown(keyFile, 0, 0);
    const denied = run('validate', '--keys');
    expect(denied.status).toBe(78);
    expect(denied.stderr).toContain('EACCES');
    // Running the script again (an upgrade) gives the key back to the service user.
    expect(install([], env).status).toBe(0);
    expect(await owner(keyFile)).toEqual({ uid, gid, mode: '600' });
    expect(run('validate', '--keys').status).toBe(0);

    // --uninstall: program, unit and launcher go; config, keys, state and the user stay.
    const un = install(['--uninstall'], env);
    expect(un.status, un.stderr).toBe(0);
    await expect(stat(env.PREFIX)).rejects.toThrow();
    await expect(stat(launcher)).rejects.toThrow();
    expect(await readdir(env.UNIT_DIR)).toEqual([]);
    await stat(keyFile);
    await stat(join(env.STATE_DIR, 'state.db'));
    expect(uidOf(user)).toBe(uid);

    // --purge: config, keys, state and the user go too.
    const purge = install(['--uninstall', '--purge'], env);
    expect(purge.status, purge.stderr).toBe(0);
    await expect(stat(env.ETC)).rejects.toThrow();
    await expect(stat(env.STATE_DIR)).rejects.toThrow();
    expect(uidOf(user)).toBeUndefined();
  }, 300_000);
});
