// Child-process tests of the built CLI (slow kind): validate as the unit's ExecStartPre, and `run` on a missing folder.
import { mkdir, writeFile } from 'node:fs/promises';
import { createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DaemonProcess } from '../e2e/harness.js';
import { datasetYaml, tempFiles } from '../config/helpers.js';
import { runCli } from './run-cli.js';

// Issue 17: validate must exit 78 with the fix when the service would start and do nothing.
describe('validate (ExecStartPre) refuses what would make the service useless', () => {
  it('a key file group or others can read: exit 78, file:line: option: the chmod to run', async () => {
    const dir = await tempFiles({ key: 'tbd_live_abcdefgh' }, { key: 0o644 });
    const yaml = join(dir, 'connector.yaml');
    await writeFile(yaml, `datasets:\n${datasetYaml('shop-1').replace('key: { env: SHOP_1_KEY }', `key: { file: ${join(dir, 'key')} }`)}\n`);
    const r = await runCli(['--config', yaml, 'validate']);
    expect(r.code).toBe(78);
    expect(r.stderr).toContain(`${yaml}:5: datasets.shop-1.api.key.file: key file ${join(dir, 'key')} can be read or written by group or others (mode 0644; expected 0600`);
    expect(r.stderr).toContain(`run chmod 600 ${join(dir, 'key')}`);
    expect(r.stdout).toBe('');
  });

  it('a watch folder that does not exist: exit 78 naming it; --json carries the issue', async () => {
    const dir = await tempFiles({});
    const yaml = join(dir, 'connector.yaml');
    await writeFile(yaml, `datasets:\n${datasetYaml('shop-1', `    watch: { path: ${join(dir, 'inbox')} }`)}\n`);
    const r = await runCli(['--config', yaml, 'validate']);
    expect(r.code).toBe(78);
    expect(r.stderr).toContain(`${yaml}:13: datasets.shop-1.watch.path: folder ${join(dir, 'inbox')} does not exist (expected the export folder`);
    const j = await runCli(['--config', yaml, 'validate', '--json']);
    expect(j.code).toBe(78);
    expect(JSON.parse(j.stdout)).toMatchObject({ ok: false, issues: [{ path: 'datasets.shop-1.watch.path', line: 13 }] });
    await mkdir(join(dir, 'inbox'));
    expect((await runCli(['--config', yaml, 'validate'])).code).toBe(0);
  });

  it('a listener off loopback passes with a warning on stderr', async () => {
    const dir = await tempFiles({});
    const yaml = join(dir, 'connector.yaml');
    await writeFile(yaml, `health: { listen: "0.0.0.0:9464" }\ndatasets:\n${datasetYaml('shop-1')}\n`);
    const r = await runCli(['--config', yaml, 'validate']);
    expect(r.code).toBe(0);
    expect(r.stderr).toMatch(new RegExp(`^warning: ${yaml}:1: health\\.listen: 0\\.0\\.0\\.0:9464 can be reached from other machines`));
  });
});

describe('run with the health port taken', () => {
  it('exits 1 with the fix instead of an internal error, closing the watcher it had started (no hang)', async () => {
    const busy = createServer();
    await new Promise<void>((r) => busy.listen(0, '127.0.0.1', r));
    const port = (busy.address() as AddressInfo).port;
    try {
      const dir = await tempFiles({});
      await mkdir(join(dir, 'inbox'));
      const yaml = join(dir, 'connector.yaml');
      await writeFile(yaml, `state_dir: ${join(dir, 'state')}\nhealth: { listen: "127.0.0.1:${port}" }\ndatasets:\n${datasetYaml('shop-1', `    watch: { path: ${join(dir, 'inbox')} }`)}\n`);
      const r = await runCli(['--config', yaml, 'run'], { SHOP_1_KEY: 'tbd_live_abcdefgh' });
      expect(r.code, r.stderr).toBe(1);
      expect(r.stderr).toContain(`error [HEALTH_LISTEN_FAILED]: cannot listen on 127.0.0.1:${port} for /healthz and /metrics: EADDRINUSE (another program, or another connector, uses that port`);
    } finally {
      busy.close();
    }
  });
});

describe('run with a watch folder missing at start', () => {
  it('logs the fix without a stack trace, stays up with nothing else to do, and watches the folder once it is made', async () => {
    const dir = await tempFiles({});
    const yaml = join(dir, 'connector.yaml');
    const inbox = join(dir, 'inbox');
    await writeFile(yaml, `state_dir: ${join(dir, 'state')}\ndatasets:\n${datasetYaml('shop-1', `    watch: { path: ${inbox} }`)}\n`);
    const d = new DaemonProcess(['run', '--config', yaml], { SHOP_1_KEY: 'tbd_live_abcdefgh' });
    try {
      const failed = await d.waitFor('watch.failed');
      expect(failed).toMatchObject({ errno: 'ENOENT', hint: expect.stringContaining('create it') });
      expect(failed).not.toHaveProperty('err');
      await d.waitFor('daemon.started');
      // Nothing but unref'd retry timers is alive now: without a keep-alive Node exits (13) here.
      await mkdir(inbox);
      await d.waitFor('watch.started', {}, 1, 30_000);
      expect(d.lines.some((l) => JSON.stringify(l).includes('"stack"'))).toBe(false);
    } finally {
      expect(await d.stop()).toBe(0);
    }
  });
});
