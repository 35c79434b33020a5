// An idle daemon (issue 18): `dataset-connector run` with three datasets, each with a watched folder,
// its schedules and the health listener, against an emulator in another process.
//   1. start-up: from the spawn to the `daemon.started` log line, and to the first /healthz answer;
//   2. the idle window: from 5 s after /healthz answers, BENCH_IDLE_MS (default 60 s) of doing nothing: RSS a
//      second apart (its highest and its last, "settled") and the CPU spent. The 80 MB target is of the highest:
//      an idle daemon stays under it at every second of its idle time, not only once V8's memory reducer has
//      given back what start-up grew (10–20 s after the last start-up GC);
//   3. after one sync per dataset (a small export dropped in each folder): the same window again, since a daemon
//      that has synced holds the sync's modules and what its GCs kept (for information: not the target's case).
//   node idle.bench.mjs <dir>     prints one JSON line: idle { peakRssMb, settledRssMb, rssSeries, cpuPerMinuteMs }, afterSync {…}, …
import { spawn } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { startChild, stopChild } from './figures.mjs';

const dir = resolve(process.argv[2], 'idle');
const IDLE_MS = Number(process.env.BENCH_IDLE_MS ?? 60_000);
const SETTLE_MS = 5_000; // first scans done, timers armed
const SYNC_ROWS = 1_000;
const FLAGS = (process.env.BENCH_NODE_FLAGS ?? '').split(/\s+/).filter(Boolean);
const main = fileURLToPath(new URL('../../dist/cli/main.js', import.meta.url));
const TICK = 100; // clock ticks a second (USER_HZ) on Linux

const port = await new Promise((resolve) => {
  const s = createServer().listen(0, '127.0.0.1', () => {
    const p = s.address().port;
    s.close(() => resolve(p));
  });
});

const NAMES = ['shop-1', 'shop-2', 'shop-3'];
const inbox = (name) => join(dir, name, 'inbox');
const emu = await startChild([fileURLToPath(new URL('sync.bench.mjs', import.meta.url)), '--emulator', ...NAMES]);
let daemon;
try {
  const datasets = {};
  for (const name of NAMES) {
    mkdirSync(inbox(name), { recursive: true });
    datasets[name] = {
      api: { base_url: emu.info.url, dataset_id: name, key: { env: `KEY_${name.replace('-', '_').toUpperCase()}` } },
      source: { type: 'csv' },
      mapping: { fields: { record_id: 'SKU', display_name: 'Name', api_value: 'Code', 'attributes.stock': { column: 'Stock', transforms: ['integer'] } } },
      watch: { path: inbox(name), include: ['*.csv'], after: 'move' },
      schedules: [
        { type: 'reconcile', cron: '30 4 * * *' },
        { type: 'draft_check', cron: '0 * * * *' },
      ],
    };
  }
  const cfg = join(dir, 'connector.yaml');
  writeFileSync(cfg, JSON.stringify({ state_dir: join(dir, 'state'), timezone: 'UTC', health: { listen: `127.0.0.1:${port}` }, datasets }));
  // A preload that lists the CommonJS modules loaded so far on SIGUSR2 (exceljs is one). Not an ESM load hook:
  // module.register() runs its hooks on a thread of their own, which would add its own isolate to the RSS measured.
  const preload = join(dir, 'modules.cjs');
  writeFileSync(
    preload,
    `process.on('SIGUSR2', () => require('fs').writeFileSync(${JSON.stringify(join(dir, 'modules.txt'))}, JSON.stringify({ memory: process.memoryUsage(), modules: Object.keys(require('module')._cache) })));\n`,
  );
  const t0 = Date.now();
  daemon = spawn(process.execPath, [...FLAGS, '-r', preload, main, 'run', '--config', cfg], {
    env: { ...process.env, ...Object.fromEntries(NAMES.map((n) => [`KEY_${n.replace('-', '_').toUpperCase()}`, emu.info.keys[n]])) },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  // The daemon's JSON log lines, by event, with the time each arrived.
  const seen = [];
  let rest = '';
  daemon.stdout.on('data', (chunk) => {
    if (process.env.BENCH_DEBUG) process.stderr.write(chunk);
    const lines = (rest + chunk).split('\n');
    rest = lines.pop();
    for (const line of lines) {
      try {
        seen.push({ at: Date.now(), ...JSON.parse(line) });
      } catch {
        // not a log line
      }
    }
  });
  const events = (name) => seen.filter((e) => e.event === name);
  for (;;) {
    try {
      if ((await fetch(`http://127.0.0.1:${port}/healthz`)).status) break;
    } catch {
      // not listening yet
    }
    if (daemon.exitCode !== null) throw new Error(`the daemon exited ${daemon.exitCode}`);
    await sleep(100);
  }
  const healthMs = Date.now() - t0;
  const started = events('daemon.started')[0];
  if (!started) throw new Error('no daemon.started line before /healthz answered');
  const startMs = started.at - t0;

  const cpu = () => {
    const f = readFileSync(`/proc/${daemon.pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return ((Number(f[11]) + Number(f[12])) / TICK) * 1000; // utime + stime, ms
  };
  const status = (field) => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${daemon.pid}/status`, 'utf8'))[1]) / 1024;
  /** Wait SETTLE_MS, then IDLE_MS of RSS a second apart and the CPU spent meanwhile. */
  const window = async () => {
    await sleep(SETTLE_MS);
    const c1 = cpu();
    const series = [status('VmRSS')];
    const until = Date.now() + IDLE_MS;
    while (Date.now() < until) {
      await sleep(1_000);
      series.push(status('VmRSS'));
    }
    const c2 = cpu();
    const round = (mb) => Math.round(mb * 10) / 10;
    return {
      peakRssMb: round(Math.max(...series)),
      settledRssMb: round(series.at(-1)),
      rssSeries: series.map(Math.round),
      cpuPerMinuteMs: Math.round(((c2 - c1) / IDLE_MS) * 60_000),
    };
  };
  const idle = await window();
  const hwmAtIdleMb = Math.round(status('VmHWM') * 10) / 10;
  daemon.kill('SIGUSR2');
  await sleep(500);
  const { memory, modules } = JSON.parse(readFileSync(join(dir, 'modules.txt'), 'utf8'));

  // 3. One small export in each folder; each is moved once its sync has ended.
  const rows = Array.from({ length: SYNC_ROWS }, (_, i) => `SKU-${i},Item ${i},code-${i},${i % 50}`);
  for (const name of NAMES) writeFileSync(join(inbox(name), 'stock.csv'), `SKU,Name,Code,Stock\n${rows.join('\n')}\n`);
  const ts = Date.now();
  while (NAMES.some((n) => readdirSync(inbox(n)).includes('stock.csv')) || events('sync.summary').length < NAMES.length) {
    if (daemon.exitCode !== null) throw new Error(`the daemon exited ${daemon.exitCode}`);
    if (Date.now() - ts > 120_000) throw new Error(`the exports were not synced within 2 minutes (${events('sync.summary').length} summaries)`);
    await sleep(100);
  }
  const results = events('sync.summary').map((e) => e.result);
  if (results.some((r) => r !== 'published')) throw new Error(`the exports were not published: ${results.join(', ')}`);
  const syncMs = Date.now() - ts;
  const afterSync = { ...(await window()), syncMs };

  process.stdout.write(
    `${JSON.stringify({
      idle,
      afterSync,
      hwmAtIdleMb,
      hwmMb: Math.round(status('VmHWM') * 10) / 10,
      idleMs: IDLE_MS,
      settleMs: SETTLE_MS,
      syncRows: SYNC_ROWS,
      startMs,
      healthMs,
      exceljsLoaded: modules.some((m) => m.includes('/node_modules/exceljs/')),
      heapMb: Math.round(memory.heapUsed / 1048576),
      heapTotalMb: Math.round(memory.heapTotal / 1048576),
    })}\n`,
  );
} finally {
  if (daemon && daemon.exitCode === null) {
    const done = new Promise((resolve) => daemon.once('exit', resolve));
    daemon.kill('SIGTERM');
    await done;
  }
  await stopChild(emu.proc);
}
