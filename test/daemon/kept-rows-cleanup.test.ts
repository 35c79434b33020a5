import { existsSync, mkdirSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Service } from '../../src/daemon/service.js';
import { KEPT_FILE } from '../../src/sync/unchanged/kept-rows.js';
import { capture, daemonFixture, drop, events, exportCsv, serviceScenario, waitEvent } from './service-harness.js';

// Issue 18 leftover: a dataset taken out of the configuration left its copy of the last export (the export's size)
// in the state dir for a person to find. The daemon removes it at start, once the state dir is its own, and touches
// nothing else there: only a real folder named unchanged-rows.<a dataset name> for a dataset no longer configured.
describe('daemon start: kept rows of datasets no longer configured', () => {
  const fx = daemonFixture();

  it('removes the folder of a dataset taken out of the configuration, one info line each, and nothing else', async () => {
    const s = await serviceScenario(fx.emu, 'kept-cleanup');
    const plans = join(s.dir, 'state', 'state.db.plans');
    await s.writeConfig({ old: s.dataset() });
    const first = capture();
    const one = await Service.start({ configPath: s.configPath, logger: first.logger, env: s.env });
    try {
      await drop(s.inbox, 'stock.csv', exportCsv(5));
      await waitEvent(first.lines, 'sync.summary', { result: 'published' });
    } finally {
      await one.stop();
    }
    expect(existsSync(join(plans, 'unchanged-rows.old', KEPT_FILE))).toBe(true);

    // What a person or another tool may have put beside it: none of it is ours to remove.
    const outside = join(s.dir, 'elsewhere');
    mkdirSync(join(outside, 'keep-me'), { recursive: true });
    symlinkSync(outside, join(plans, 'unchanged-rows.linked'));
    mkdirSync(join(plans, 'unchanged-rows.Not-A-Name'));
    mkdirSync(join(plans, 'unchanged-rows.old.bak'));
    writeFileSync(join(plans, 'unchanged-rows.afile'), 'x');
    mkdirSync(join(plans, 'unchanged-rows.shop'));
    mkdirSync(join(plans, 'unchanged-rows-old'));

    await s.writeConfig({ shop: s.dataset({ watch: { path: join(s.dir, 'other-inbox'), include: ['*.csv'] } }) });
    mkdirSync(join(s.dir, 'other-inbox'));
    const second = capture();
    const two = await Service.start({ configPath: s.configPath, logger: second.logger, env: s.env });
    fx.services.push(two);

    expect(existsSync(join(plans, 'unchanged-rows.old'))).toBe(false);
    expect(readdirSync(plans).filter((n) => n.includes('unchanged-rows')).sort()).toEqual([
      'unchanged-rows-old',
      'unchanged-rows.Not-A-Name',
      'unchanged-rows.afile',
      'unchanged-rows.linked',
      'unchanged-rows.old.bak',
      'unchanged-rows.shop',
    ]);
    expect(existsSync(join(outside, 'keep-me'))).toBe(true);
    const removed = events(second.lines, 'sync.rows_kept', { kind: 'kept_rows_unconfigured' });
    expect(removed).toHaveLength(1);
    expect(removed[0]).toMatchObject({ level: 30, dataset: 'old', dir: join(plans, 'unchanged-rows.old') });
    expect(String(removed[0]!.msg)).toContain(join(plans, 'unchanged-rows.old'));
  });
});
