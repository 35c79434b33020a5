import { afterEach, describe, expect, it } from 'vitest';
import { feedView } from '../../src/feeds/view.js';
import { exitCodeFor } from '../../src/sync/outcome.js';
import { refuseFeedOption } from '../../src/cli/feed-option.js';
import { planLines } from '../../src/cli/commands/plan.js';
import { restoreAdvice } from '../../src/cli/commands/restore.js';
import { exitCodeFor as cliExitCodeFor } from '../../src/cli/exit-codes.js';
import { recs, scenario, type Scenario } from '../sync/harness.js';
import { feedScenario, stockOf, writeStockFile } from './helpers.js';

/** Issue 14 with feeds: one feed paused stops its files at the engine (every path passes it); the others go on. */

let sc: Scenario | undefined;
afterEach(async () => {
  await sc?.close();
  sc = undefined;
});

describe('pause --feed at the engine', () => {
  it('a sync of a paused feed publishes nothing (FEED_PAUSED, exit 75, naming the resume command); the full feed still syncs; status lists the paused feed', async () => {
    const f = await feedScenario(recs(5));
    sc = f.sc;
    const p = sc.engine.pause(f.ds, 'test', 'stock');
    const file = await writeStockFile(sc, { 'r-001': 9 }, 'stock-1.csv');
    const paused = await sc.engine.sync(feedView(f.ds, 'stock'), { file });
    expect(paused).toMatchObject({ result: 'paused', code: 'FEED_PAUSED', requests: 0 });
    expect(paused.message).toContain('dataset-connector resume shop-1 --feed stock');
    expect(exitCodeFor(paused.result)).toBe(75);
    expect(stockOf(sc)['r-001']).toBeUndefined();
    expect(sc.engine.status(f.ds).pausedFeeds).toEqual([{ feed: 'stock', since: new Date(p.at).toISOString(), by: 'test' }]);
    expect(sc.engine.status(f.ds).paused).toBeNull();

    // The catalogue is another feed: it goes on.
    const cat = await sc.engine.sync(f.ds, { file: await sc.writeExport(recs(6), 'catalogue-1.csv') });
    expect(cat).toMatchObject({ result: 'published', adds: 1 });

    // Several files through the one entry point: the paused feed stops them all (nothing half-taken).
    const both = await sc.engine.syncFeedFiles(f.ds, [
      { feed: 'main', file: await sc.writeExport(recs(7), 'catalogue-2.csv') },
      { feed: 'stock', file },
    ]);
    expect(both).toMatchObject({ result: 'paused', code: 'FEED_PAUSED' });
    expect(sc.published()).toHaveLength(6);

    expect(sc.engine.resumeExports(f.ds, 'stock')).toEqual(p);
    expect(sc.engine.resumeExports(f.ds, 'stock')).toBeNull();
    const after = await sc.engine.sync(feedView(f.ds, 'stock'), { file });
    expect(after).toMatchObject({ result: 'published', changes: 1 });
    expect(stockOf(sc)['r-001']).toBe(9);
  });

  it('an unknown feed name is refused naming the feeds there are', async () => {
    const f = await feedScenario(recs(2));
    sc = f.sc;
    expect(() => sc!.engine.pause(f.ds, 'test', 'stok')).toThrow(/has no feed "stok" \(its feeds: main, stock\)/);
    // A misspelt --feed is a usage error (exit 2), as README's exit codes say, not a failure to retry.
    let err: unknown = null;
    try {
      feedView(f.ds, 'stok');
    } catch (e) {
      err = e;
    }
    expect(err).toMatchObject({ code: 'UNKNOWN_FEED' });
    expect(cliExitCodeFor(err)).toBe(2);
  });
  it('--feed on a dataset without feeds is refused naming the command for the dataset (usage, exit 2); a feed with feeds passes', async () => {
    sc = await scenario({ records: recs(2) });
    let err: unknown = null;
    try {
      refuseFeedOption(sc.ds, 'pause');
    } catch (e) {
      err = e;
    }
    expect((err as Error).message).toBe('shop-1 has no feeds; use `dataset-connector pause shop-1`');
    expect(cliExitCodeFor(err)).toBe(2);
    await sc.close();
    const f = await feedScenario(recs(2));
    sc = f.sc;
    expect(() => refuseFeedOption(f.ds, 'pause')).not.toThrow();
  });

  it('a feed paused and then taken out of the config can still be resumed (its pause cleared)', async () => {
    const f = await feedScenario(recs(2));
    sc = f.sc;
    const p = sc.engine.pause(f.ds, 'test', 'stock');
    const { stock: _gone, ...rest } = f.ds.feeds;
    const without = { ...f.ds, feeds: rest };
    expect(sc.engine.status(without).pausedFeeds.map((x) => x.feed)).toEqual(['stock']);
    expect(sc.engine.resumeExports(without, 'stock')).toEqual(p);
    expect(sc.engine.status(without).pausedFeeds).toEqual([]);
    // A name never paused and not configured is still refused.
    expect(() => sc!.engine.resumeExports(without, 'stok')).toThrow(/has no feed "stok"/);
  });
  it('plan --feed of a paused feed says it is paused; a restore with one feed paused names it and suggests pausing only the others', async () => {
    const f = await feedScenario(recs(3));
    sc = f.sc;
    sc.engine.pause(f.ds, 'pause by erin', 'stock');
    const file = await writeStockFile(sc, { 'r-001': 4 }, 'stock-2.csv');
    const lines = planLines(await sc.engine.plan(feedView(f.ds, 'stock'), file)).join('\n');
    expect(lines).toMatch(/feed stock PAUSED since .* \(pause by erin\): a sync of its files would publish nothing \(FEED_PAUSED\) until dataset-connector resume shop-1 --feed stock/);
    // The catalogue feed is not paused: no PAUSED line.
    expect(planLines(await sc.engine.plan(f.ds, await sc.writeExport(recs(3), 'catalogue-3.csv'))).join('\n')).not.toContain('PAUSED');

    const advice = restoreAdvice(f.ds, false, sc.engine.status(f.ds).pausedFeeds.map((x) => x.feed));
    expect(advice).toBe('feed stock of shop-1 already paused; the next export of main would undo this restore if it went wrong: pause it too with dataset-connector pause shop-1 --feed main');
    expect(restoreAdvice(f.ds, false, ['main', 'stock'])).toBe('feeds main, stock of shop-1 already paused: their exports wait until dataset-connector resume shop-1 --feed <main|stock>');
    expect(restoreAdvice(f.ds, false, [])).toContain('dataset-connector pause shop-1 until the export is fixed');
  });
});
