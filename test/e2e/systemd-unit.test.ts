import { spawnSync } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { emulatorFixture, exportCsv, freePort, scenario } from './harness.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** The arguments of ExecStartPre= in the shipped unit, after node and main.js. */
async function execStartPreArgs(): Promise<string[]> {
  const unit = await readFile(join(ROOT, 'systemd/dataset-connector.service'), 'utf8');
  const lines = unit.split('\n').filter((l) => l.startsWith('ExecStartPre='));
  expect(lines).toHaveLength(1);
  const words = lines[0]!.slice('ExecStartPre='.length).trim().split(/\s+/);
  expect(words[1]).toMatch(/dist\/cli\/main\.js$/);
  return words.slice(2);
}

const hasAnalyze = spawnSync('systemd-analyze', ['--version']).status === 0;

// Issue 17: readiness, watchdog and a memory bound, without giving up the hardening.
describe('systemd unit: notify, watchdog, memory, exposure', () => {
  it('is Type=notify with WatchdogSec= and MemoryHigh=/MemoryMax=', async () => {
    const unit = await readFile(join(ROOT, 'systemd/dataset-connector.service'), 'utf8');
    expect(unit).toMatch(/^Type=notify$/m);
    expect(unit).toMatch(/^NotifyAccess=main$/m);
    expect(unit).toMatch(/^WatchdogSec=\d+s$/m);
    expect(unit).toMatch(/^MemoryHigh=\d+M$/m);
    expect(unit).toMatch(/^MemoryMax=\d+G$/m);
  });

  it.skipIf(!hasAnalyze)('keeps an exposure of at most 1.2 in systemd-analyze security --offline=yes', () => {
    const r = spawnSync('systemd-analyze', ['security', '--offline=yes', join(ROOT, 'systemd/dataset-connector.service')], { encoding: 'utf8' });
    const m = /Overall exposure level for dataset-connector\.service: (\d+\.\d)/.exec(r.stdout);
    expect(m, r.stdout + r.stderr).not.toBeNull();
    expect(Number(m![1])).toBeLessThanOrEqual(1.2);
  });
});

// One dataset's bad key must not stop the service for the others.
describe('systemd unit: a bad key of one dataset', () => {
  const fx = emulatorFixture();

  it('passes ExecStartPre (the config is fine); the daemon serves the other dataset and reports the bad one in /healthz', async () => {
    const s = await scenario(fx.emu, 'e2e-unit-good');
    const port = await freePort();
    const { watch: _none, ...rest } = s.dataset();
    const bad = { ...rest, api: { ...(rest.api as object), dataset_id: 'e2e-unit-bad', key: { env: 'E2E_KEY_NOT_SET' } } };
    await s.writeConfig({ good: s.dataset(), bad }, { health: { listen: `127.0.0.1:${port}` } });

    const pre = spawnSync(process.execPath, [join(ROOT, 'dist/cli/main.js'), ...(await execStartPreArgs())], {
      env: { ...process.env, ...s.env, DATASET_CONNECTOR_CONFIG: s.configPath },
      encoding: 'utf8',
    });
    expect({ status: pre.status, stderr: pre.stderr }).toEqual({ status: 0, stderr: '' });

    const d = s.start();
    try {
      await d.waitFor('daemon.started');
      await writeFile(join(s.inbox, 'stock.csv'), exportCsv(3));
      await d.waitFor('sync.summary', { dataset: 'good', result: 'published' });
      const health = (await (await fetch(`http://127.0.0.1:${port}/healthz`)).json()) as Record<string, unknown>;
      expect(health).toMatchObject({ status: 'degraded', reasons: [{ dataset: 'bad', topic: 'key', code: 'KEY_NOT_FOUND' }] });
    } finally {
      expect(await d.stop()).toBe(0);
    }
  });
});
