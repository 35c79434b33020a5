// The built CLI as a child process (slow kind): run --once, retry from failed/, config (issue 17).
import { mkdir, readdir, symlink, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { runCli } from '../cli/run-cli.js';
import { emulatorFixture, exportCsv, scenario } from './harness.js';

const lines = (stdout: string) => stdout.trim().split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>);

describe('run --once, retry, config', () => {
  const fx = emulatorFixture();

  it('run --once takes the newest waiting export (the older is superseded), runs no schedule, and exits with the sync code', async () => {
    const s = await scenario(fx.emu, 'e2e-once');
    await s.writeConfig({ shop: s.dataset({ schedules: [{ type: 'reconcile', cron: '* * * * * *' }] }) });
    const run = () => runCli(['run', '--once', '--config', s.configPath], s.env);

    // Nothing waiting: done at once, 0.
    const idle = await run();
    expect(idle.code, idle.stderr).toBe(0);
    expect(lines(idle.stdout).find((l) => l.event === 'daemon.stopped' && l.once)).toMatchObject({ once: true, syncs: 0, exit_code: 0 });

    await writeFile(join(s.inbox, 'old.csv'), exportCsv(2));
    const minuteAgo = new Date(Date.now() - 60_000);
    await utimes(join(s.inbox, 'old.csv'), minuteAgo, minuteAgo); // older than the next export
    await writeFile(join(s.inbox, 'stock.csv'), exportCsv(3));
    const r = await run();
    expect(r.code, r.stderr).toBe(0);
    const log = lines(r.stdout);
    expect(log.filter((l) => l.event === 'sync.summary')).toMatchObject([{ result: 'published', adds: 3 }]);
    expect(log.filter((l) => l.event === 'schedule.fired')).toEqual([]);
    expect(log.find((l) => l.event === 'file.archived')).toMatchObject({ reason: 'superseded' });
    expect(fx.emu.emulator.records('e2e-once')).toHaveLength(3);
    expect((await readdir(s.inbox)).sort()).toEqual(['processed']);

    // A file with a bad row: rejected, moved to failed/, exit 1.
    await writeFile(join(s.inbox, 'bad.csv'), exportCsv(3, { stock: (i) => (i === 2 ? 'many' : '1') }));
    const bad = await run();
    expect(bad.code).toBe(1);
    expect(lines(bad.stdout).find((l) => l.event === 'sync.summary')).toMatchObject({ result: 'rejected' });
    expect((await readdir(join(s.inbox, 'failed'))).length).toBe(2);
  });

  it('run --once and sync of a paused dataset publish nothing, exit 75 with DATASET_PAUSED, who paused it and the command to resume; the export waits (issue 14)', async () => {
    const s = await scenario(fx.emu, 'e2e-once-paused');
    await s.writeConfig({ shop: s.dataset() });
    expect((await runCli(['pause', 'shop', '--config', s.configPath], s.env)).code).toBe(0);
    await writeFile(join(s.inbox, 'stock.csv'), exportCsv(3));
    const r = await runCli(['run', '--once', '--config', s.configPath], s.env);
    expect(r.code, r.stderr).toBe(75);
    expect(lines(r.stdout).find((l) => l.event === 'sync.summary')).toMatchObject({ result: 'paused', code: 'DATASET_PAUSED', message: expect.stringContaining('dataset-connector resume shop') });
    expect(await readdir(s.inbox)).toContain('stock.csv');
    const sync = await runCli(['sync', 'shop', '--file', join(s.inbox, 'stock.csv'), '--config', s.configPath], s.env);
    expect(sync.code).toBe(75);
    expect(sync.stderr).toMatch(/paused \[DATASET_PAUSED\] \(dataset shop.*\): shop is paused since \S+ \(pause by .*\): .*dataset-connector resume shop/);
    expect(fx.emu.emulator.records('e2e-once-paused')).toHaveLength(0);

    expect((await runCli(['resume', 'shop', '--config', s.configPath], s.env)).code).toBe(0);
    const after = await runCli(['run', '--once', '--config', s.configPath], s.env);
    expect(after.code, after.stderr).toBe(0);
    expect(fx.emu.emulator.records('e2e-once-paused')).toHaveLength(3);
  });

  it('run --once with a watch folder that is not there exits 78 naming the folder and the fix, never "nothing was waiting" (review of issue 17)', async () => {
    const s = await scenario(fx.emu, 'e2e-once-missing');
    await s.writeConfig({ shop: s.dataset({ watch: { path: join(s.dir, 'not-there') } }) });
    const r = await runCli(['run', '--once', '--config', s.configPath], s.env);
    expect(r.code, r.stderr).toBe(78);
    const log = lines(r.stdout);
    expect(log.find((l) => l.event === 'watch.failed')).toMatchObject({ errno: 'ENOENT' });
    expect(log.find((l) => l.event === 'daemon.stopped' && l.once)).toMatchObject({ exit_code: 78, msg: expect.stringContaining('nothing was synced; the errors above say why') });
  });

  it('retry sends the export in failed/ through again once the mapping is fixed; then it moves to processed/ and its reject file goes', async () => {
    const s = await scenario(fx.emu, 'e2e-retry');
    const ds = s.dataset();
    await s.writeConfig({ shop: ds });
    await writeFile(join(s.inbox, 'stock.csv'), exportCsv(4, { stock: (i) => (i === 3 ? '12 pcs' : '5') }));
    expect((await runCli(['run', '--once', '--config', s.configPath], s.env)).code).toBe(1);
    const failed = await readdir(join(s.inbox, 'failed'));
    expect(failed.some((n) => n.endsWith('.rejected.csv'))).toBe(true);

    // Unfixed: rejected again, stays in failed/.
    const again = await runCli(['retry', 'shop', '--config', s.configPath], s.env);
    expect(again.code).toBe(1);
    expect((await readdir(join(s.inbox, 'failed'))).sort()).toEqual(failed.sort());

    // The mapping fixed (stock kept as text): used, moved to processed/, the reject file gone.
    const mapping = ds.mapping as { fields: Record<string, unknown> };
    await s.writeConfig({ shop: { ...ds, mapping: { fields: { ...mapping.fields, 'attributes.stock': 'stock' } } } });
    const fixed = await runCli(['retry', 'shop', '--config', s.configPath], s.env);
    expect(fixed.code, fixed.stderr).toBe(0);
    expect(lines(fixed.stdout).find((l) => l.event === 'sync.summary')).toMatchObject({ result: 'published', adds: 4 });
    expect(await readdir(join(s.inbox, 'failed'))).toEqual([]);
    expect(await readdir(join(s.inbox, 'processed'))).toHaveLength(1);
    expect(fx.emu.emulator.records('e2e-retry').find((r) => r.record_id === 'P-0003')?.attributes).toMatchObject({ stock: '12 pcs' });

    // A link someone left in failed/ is not an export the connector failed: never offered (review of issue 11).
    await writeFile(join(s.dir, 'elsewhere.csv'), exportCsv(1));
    await symlink(join(s.dir, 'elsewhere.csv'), join(s.inbox, 'failed', 'zz-newest-link.csv'));
    const none = await runCli(['retry', 'shop', '--config', s.configPath], s.env);
    expect(none.code).toBe(66);
    expect(none.stderr).toContain('no export waits in');
  });

  it('config prints the effective configuration with conf.d merged and key sources named, never a key', async () => {
    const s = await scenario(fx.emu, 'e2e-config');
    await s.writeConfig({ shop: s.dataset() }, { health: { listen: '0.0.0.0:9999' } });
    await mkdir(join(s.dir, 'conf.d'));
    await writeFile(join(s.dir, 'conf.d', '10-more.yaml'), `datasets:\n  more:\n    api: { base_url: "http://127.0.0.1:1", key: { file: /etc/dc/keys/more } }\n    source: { type: csv }\n    mapping: { fields: { record_id: sku, display_name: name, api_value: sku } }\n    watch: { path: ./in }\n`);
    const key = Object.values(s.env)[0]!;
    const r = await runCli(['config', '--config', s.configPath], s.env);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).not.toContain(key);
    expect(r.stdout).toMatch(/^# Effective configuration of dataset-connector, from .*connector\.yaml, .*10-more\.yaml$/m);
    expect(r.stdout).toMatch(/^# warning: .*health\.listen: 0\.0\.0\.0:9999 can be reached from other machines/m);
    const effective = parse(r.stdout) as Record<string, any>;
    expect(effective.datasets.shop.api.key).toEqual({ env: Object.keys(s.env)[0] });
    expect(effective.datasets.more.api.key).toEqual({ file: '/etc/dc/keys/more' });
    expect(effective.datasets.more.watch.path).toBe(join(s.dir, 'conf.d', 'in'));
    expect(effective.datasets.more.policy.guards.max_delete_ratio).toBe(0.2);
    const j = await runCli(['config', '--json', '--config', s.configPath], s.env);
    expect(JSON.parse(j.stdout)).toMatchObject({ files: [s.configPath, join(s.dir, 'conf.d', '10-more.yaml')], effective: { datasets: { shop: { api: { dataset_id: 'e2e-config' } } } } });
    expect(j.stdout).not.toContain(key);
  });
});
