import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type RunningEmulator } from '../../src/emulator/index.js';
import { runCli } from '../sync/cli-child.js';
import { chain, headOffice } from './fan-out-helpers.js';
import { drop } from './service-harness.js';

/**
 * Issue 13's per-taker progress is crash-safe: `run --once` (the built CLI)
 * taking two stock files for three stores is killed with SIGKILL at each step
 * of the fan-out (a store's sync ended but not noted, noted, a store's plan
 * journaled, a file archived but its progress not forgotten). The next run
 * resumes each store at its own file: every store publishes each file's
 * values once (never twice, none skipped), and both files are archived.
 */

let emu: RunningEmulator;
beforeAll(async () => {
  emu = await startEmulator({ port: 0 });
});
afterAll(async () => {
  await emu.close();
});

const stock1 = headOffice(() => 5);
const stock2 = headOffice((sku) => (sku === 'A1' || sku === 'B1' ? 7 : 5));

async function scenario(prefix: string) {
  const c = await chain(emu, prefix, { settleMs: 0, pollMs: 30 }, 'update');
  const env = Object.fromEntries(Object.entries(c.env).map(([k, v]) => [k, v ?? '']));
  const once = (crashAt?: string) => runCli(['run', '--once', '--config', c.configPath], { ...env, ...(crashAt ? { DATASET_CONNECTOR_CRASH_AT: crashAt } : {}) });
  const catalogue = await once();
  expect(catalogue.status, catalogue.stderr).toBe(0);
  const base = c.ids.map((id) => emu.emulator.describe(id).active_version);
  const t0 = Date.now() - 60_000;
  await drop(c.inbox, 'stock-1.csv', stock1, t0);
  await drop(c.inbox, 'stock-2.csv', stock2, t0 + 1_000);
  const settled = async () => {
    expect(c.stocks(0)).toEqual({ A1: 7, A2: 5 });
    expect(c.stocks(1)).toEqual({ B1: 7, B2: 5 });
    expect(c.stocks(2)).toEqual({ A1: 107, A2: 105, B1: 107, B2: 105 });
    // Each store published each file's changes once, whatever the crash: a version per record changed (the per-record
    // path): store 001 and 002 two records then one, store 003 four then two.
    expect(c.ids.map((id) => emu.emulator.describe(id).active_version)).toEqual([base[0]! + 3, base[1]! + 3, base[2]! + 6]);
    expect(await readdir(c.inbox)).toEqual(['processed']);
    expect((await readdir(join(c.inbox, 'processed'))).length).toBe(2);
    const db = new Database(join(c.dir, 'state', 'state.db'), { readonly: true });
    try {
      expect(db.prepare('SELECT count(*) FROM export_files').pluck().get()).toBe(0);
    } finally {
      db.close();
    }
  };
  return { c, once, settled };
}

describe('daemon: SIGKILL while the stores of a chain take a shared export\'s files', () => {
  for (const step of ['fanout.synced#2', 'fanout.marked#4', 'plan.begun#2', 'fanout.archived#1']) {
    it(`killed at ${step}: the next run resumes each store at its own file, each file published once per store`, async () => {
      const { c, once, settled } = await scenario(`fcrash-${step.replace(/[.#]/g, '-')}`);
      const killed = await once(step);
      expect(killed.signal, killed.stderr.slice(-2000)).toBe('SIGKILL');
      expect((await readdir(c.inbox)).filter((n) => n.endsWith('.csv')).length).toBeGreaterThan(0);
      const again = await once();
      expect(again.status, again.stderr.slice(-3000)).toBe(0);
      await settled();
    });
  }

  it('killed while the store that was behind catches up: it takes the rest in order, the others are not sent a file again', async () => {
    const { c, once, settled } = await scenario('fcrash-behind');
    emu.emulator.faults.add({ path: /fcrash-behind-store-2/, status: 503, count: Infinity });
    const behind = await once();
    emu.emulator.faults.clear();
    // 75: a file was kept for a retry (store 002's).
    expect(behind.status, behind.stderr.slice(-2000)).toBe(75);
    expect(c.stocks(0)).toEqual({ A1: 7, A2: 5 });
    expect(c.stocks(1)).toEqual({ B1: undefined, B2: undefined });
    expect((await readdir(c.inbox)).filter((n) => n.endsWith('.csv')).sort()).toEqual(['stock-1.csv', 'stock-2.csv']);
    const writesBefore = emu.emulator.requests.filter((r) => r.method !== 'GET').length;
    const killed = await once('fanout.synced#1');
    expect(killed.signal).toBe('SIGKILL');
    const again = await once();
    expect(again.status, again.stderr.slice(-3000)).toBe(0);
    await settled();
    const writes = emu.emulator.requests.filter((r) => r.method !== 'GET').slice(writesBefore);
    expect(writes.every((r) => r.path.includes('fcrash-behind-store-2'))).toBe(true);
  });
});
