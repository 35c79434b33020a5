// End-to-end syncs for the bench (issue 18), the connector and the emulator in separate processes so that the
// connector's peak RSS is its own (the emulator holds every record in memory, as a server would hold them):
//   node sync.bench.mjs --emulator [dataset…]          starts an emulator (bodies up to 2 GiB) with dataset bench and
//        the ones named, prints {url, key, keys}
//   node sync.bench.mjs --sync <url> <dir> <export> <mapping>   one `dataset-connector sync` as the CLI builds it,
//        state in <dir>; prints one JSON line: wall, CPU, peak RSS, the summary and where the time went.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';

const dist = new URL('../../dist/', import.meta.url);
const [mode, ...args] = process.argv.slice(2);

if (mode === '--emulator') {
  const { startEmulator } = await import(new URL('emulator/server.js', dist).href);
  const em = await startEmulator({ maxBodyBytes: 2 ** 31 - 1 });
  const keys = {};
  for (const id of ['bench', ...args]) {
    em.emulator.addDataset({ id });
    keys[id] = em.emulator.addKey({ dataset: id, roles: ['read', 'write', 'replace', 'publish'] });
  }
  process.stdout.write(`${JSON.stringify({ url: em.url, key: keys.bench, keys })}\n`);
  process.on('SIGTERM', () => void em.close().then(() => process.exit(0)));
} else if (mode === '--sync') {
  const [url, dir, file, mappingName] = args;
  const exports = await import('./exports.mjs');
  const { loadConfig } = await import(new URL('config/load.js', dist).href);
  const { cliEngine } = await import(new URL('cli/engine.js', dist).href);
  const { default: pino } = await import('pino');
  mkdirSync(dir, { recursive: true });
  const cfg = join(dir, 'connector.json.yaml');
  // YAML is a superset of JSON: the config is written as JSON.
  writeFileSync(
    cfg,
    JSON.stringify({
      state_dir: join(dir, 'state'),
      datasets: {
        bench: {
          api: { base_url: url, dataset_id: 'bench', key: { env: 'BENCH_KEY' }, rate_per_minute: 100 },
          source: { type: 'csv' },
          mapping: exports[mappingName],
        },
      },
    }),
  );
  const config = await loadConfig(cfg);
  const events = [];
  let c0 = process.cpuUsage();
  const sink = new Writable({
    write(chunk, _enc, done) {
      for (const line of String(chunk).split('\n')) {
        if (!line) continue;
        const e = JSON.parse(line);
        // The CPU used so far (pino writes to this sink synchronously): the phases' CPU beside their wall time.
        const c = process.cpuUsage(c0);
        events.push({ time: e.time, cpuMs: (c.user + c.system) / 1000, event: e.event, method: e.method, path: e.path, status: e.status, duration_ms: e.duration_ms, kind: e.kind });
      }
      done();
    },
  });
  const logger = pino({ level: 'debug' }, sink);
  // Memory samples, to tell which step makes the peak (by the last logged event before each).
  const samples = [];
  const sampler = setInterval(() => {
    const m = process.memoryUsage();
    const c = process.cpuUsage(c0);
    samples.push({ time: Date.now(), cpuMs: (c.user + c.system) / 1000, rss: m.rss, heap: m.heapUsed, heapTotal: m.heapTotal, external: m.external, buffers: m.arrayBuffers, after: events.at(-1)?.event ?? null });
  }, 50);
  global.gc?.();
  const t0 = Date.now();
  c0 = process.cpuUsage();
  const cli = await cliEngine(config, logger, ['bench'], 'bench');
  const before = process.memoryUsage().rss;
  let summary;
  try {
    summary = await cli.engine.sync(cli.dataset('bench'), { file });
  } finally {
    await cli.close();
  }
  const ms = Date.now() - t0;
  const c = process.cpuUsage(c0);
  clearInterval(sampler);
  const top = samples.reduce((a, b) => (b.rss > a.rss ? b : a), samples[0] ?? { rss: 0 });
  const mb = (b) => Math.round(b / 1048576);
  process.stdout.write(
    `${JSON.stringify({
      ms,
      cpuMs: (c.user + c.system) / 1000,
      maxRssMb: process.resourceUsage().maxRSS / 1024,
      summary: { result: summary.result, code: summary.code, message: summary.message, path: summary.path, adds: summary.adds, changes: summary.changes, deletes: summary.deletes, requests: summary.requests },
      phases: phases(events, t0, t0 + ms),
      phasesCpu: phasesCpu([...events, ...samples].sort((a, b) => a.time - b.time), t0, t0 + ms, (c.user + c.system) / 1000),
      peak: { atMs: top.time - t0, rssMb: mb(top.rss), heapMb: mb(top.heap), heapTotalMb: mb(top.heapTotal), externalMb: mb(top.external), buffersMb: mb(top.buffers), after: top.after },
      startRssMb: mb(before),
    })}\n`,
  );
} else {
  throw new Error('usage: sync.bench.mjs --emulator | --sync <url> <dir> <export> <mapping>');
}

/**
 * Where the time went, from the log: read (until the first request), reconcile and the held gate (the first
 * requests), diff + plan (until sync.planned), the body (until the upload or replace is sent), the send, the
 * job (its polls), verify + publish, and confirm (after the publish answer).
 */
function phases(events, start, end) {
  return Object.fromEntries(phaseMarks(events, start, end).map(([name, from, to]) => [name, to - from]).concat(phaseCounts(events)));
}

/**
 * The CPU of each phase (ms): the CPU read by the last log event or memory sample (every 50 ms) at or before each
 * phase's end (the whole run's at its end), in time order.
 */
function phasesCpu(marks, start, end, totalCpuMs) {
  const cpuAt = (t) => (t <= start ? 0 : t >= end ? totalCpuMs : (marks.findLast((e) => e.time <= t)?.cpuMs ?? 0));
  return Object.fromEntries(phaseMarks(marks.filter((e) => e.event !== undefined), start, end).map(([name, from, to]) => [name, Math.max(0, cpuAt(to) - cpuAt(from))]));
}

function phaseCounts(events) {
  const req = events.filter((e) => e.event === 'api.request');
  const send = req.find((e) => (e.method === 'PUT' && e.path === '/records') || (e.method === 'POST' && e.path === '/imports'));
  return [
    ['sendRequestMs', send ? send.duration_ms : null],
    ['polls', req.filter((e) => e.path.startsWith('/sync-jobs/')).length],
  ];
}

/** The phases as [name, from, to] (ms since the epoch). */
function phaseMarks(events, start, end) {
  const req = events.filter((e) => e.event === 'api.request').map((e) => ({ ...e, start: e.time - e.duration_ms, end: e.time }));
  const planned = events.find((e) => e.event === 'sync.planned')?.time ?? null;
  const send = req.find((e) => (e.method === 'PUT' && e.path === '/records') || (e.method === 'POST' && e.path === '/imports'));
  const polls = req.filter((e) => e.path.startsWith('/sync-jobs/'));
  const publish = [...req].reverse().find((e) => e.path.endsWith('/publish'));
  const firstReq = req[0]?.start ?? end;
  const marks = [
    ['read', firstReq],
    ['reconcile', Math.max(firstReq, ...req.filter((e) => planned !== null && e.end <= planned).map((e) => e.end))],
    ['diff+plan', planned ?? firstReq],
    ['body', send?.start ?? planned ?? firstReq],
    ['send', send?.end ?? send?.start ?? planned ?? firstReq],
    ['job', polls.length ? polls[polls.length - 1].end : (send?.end ?? planned ?? firstReq)],
    ['verify+publish', publish?.end ?? (polls.length ? polls[polls.length - 1].end : end)],
    ['confirm', end],
  ];
  const out = [];
  let prev = start;
  for (const [name, at] of marks) {
    const t = Math.max(prev, Math.min(at ?? prev, end));
    out.push([name, prev, t]);
    prev = t;
  }
  return out;
}
