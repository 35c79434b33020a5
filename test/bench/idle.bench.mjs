// An idle daemon (issue 18): `dataset-connector run` with three datasets, each with a watched folder,
// its schedules and the health listener, against an emulator in another process. After it has started
// and settled, its RSS and the CPU it spends over BENCH_IDLE_MS (default 60 s) of doing nothing.
//   node idle.bench.mjs <dir>     prints one JSON line: rssMb (highest), endRssMb, rssSeries (a second apart), cpuPerMinuteMs, exceljsLoaded, …
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { startChild, stopChild } from './figures.mjs';

const dir = resolve(process.argv[2], 'idle');
const IDLE_MS = Number(process.env.BENCH_IDLE_MS ?? 60_000);
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
const emu = await startChild([fileURLToPath(new URL('sync.bench.mjs', import.meta.url)), '--emulator', ...NAMES]);
let daemon;
try {
  const datasets = {};
  for (const name of NAMES) {
    const inbox = join(dir, name, 'inbox');
    mkdirSync(inbox, { recursive: true });
    datasets[name] = {
      api: { base_url: emu.info.url, dataset_id: name, key: { env: `KEY_${name.replace('-', '_').toUpperCase()}` } },
      source: { type: 'csv' },
      mapping: { fields: { record_id: 'SKU', display_name: 'Name', api_value: 'Code', 'attributes.stock': { column: 'Stock', transforms: ['integer'] } } },
      watch: { path: inbox, include: ['*.csv'], after: 'move' },
      schedules: [
        { type: 'reconcile', cron: '30 4 * * *' },
        { type: 'draft_check', cron: '0 * * * *' },
      ],
    };
  }
  const cfg = join(dir, 'connector.yaml');
  writeFileSync(cfg, JSON.stringify({ state_dir: join(dir, 'state'), timezone: 'UTC', health: { listen: `127.0.0.1:${port}` }, datasets }));
  // A preload that lists the CommonJS modules loaded so far on SIGUSR2 (exceljs is one).
  const preload = join(dir, 'modules.cjs');
  writeFileSync(
    preload,
    `process.on('SIGUSR2', () => require('fs').writeFileSync(${JSON.stringify(join(dir, 'modules.txt'))}, JSON.stringify({ memory: process.memoryUsage(), modules: Object.keys(require('module')._cache) })));\n`,
  );
  const t0 = Date.now();
  daemon = spawn(process.execPath, [...FLAGS, '-r', preload, main, 'run', '--config', cfg], { env: { ...process.env, ...Object.fromEntries(NAMES.map((n) => [`KEY_${n.replace('-', '_').toUpperCase()}`, emu.info.keys[n]])) }, stdio: ['ignore', process.env.BENCH_DEBUG ? 'inherit' : 'ignore', 'inherit'] });
  for (;;) {
    try {
      if ((await fetch(`http://127.0.0.1:${port}/healthz`)).status) break;
    } catch {
      // not listening yet
    }
    if (daemon.exitCode !== null) throw new Error(`the daemon exited ${daemon.exitCode}`);
    await sleep(100);
  }
  const startMs = Date.now() - t0;
  await sleep(5_000); // settle: first scans, timers armed
  const cpu = () => {
    const f = readFileSync(`/proc/${daemon.pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return ((Number(f[11]) + Number(f[12])) / TICK) * 1000; // utime + stime, ms
  };
  const rss = () => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${daemon.pid}/status`, 'utf8'))[1]) / 1024;
  const c1 = cpu();
  let maxRss = rss();
  // RSS each second: V8's memory reducer gives back the young generation grown at start some 10–20 s
  // after the last start-up GC, so the highest figure and the last one are both worth showing.
  const series = [Math.round(maxRss)];
  const until = Date.now() + IDLE_MS;
  while (Date.now() < until) {
    await sleep(1_000);
    const now = rss();
    series.push(Math.round(now));
    maxRss = Math.max(maxRss, now);
  }
  const c2 = cpu();
  daemon.kill('SIGUSR2');
  await sleep(500);
  const { memory, modules } = JSON.parse(readFileSync(join(dir, 'modules.txt'), 'utf8'));
  const heap = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${daemon.pid}/status`, 'utf8'));
  process.stdout.write(
    `${JSON.stringify({
      rssMb: Math.round(maxRss * 10) / 10,
      endRssMb: series.at(-1),
      rssSeries: series,
      peakRssMb: heap ? Math.round(Number(heap[1]) / 1024) : null,
      cpuPerMinuteMs: Math.round(((c2 - c1) / IDLE_MS) * 60_000),
      idleMs: IDLE_MS,
      startMs,
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
