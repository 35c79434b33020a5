// RSS over time with its breakdown, sampled inside a measured process (issue 18): where a peak comes from.
// The kernel's split of RSS (/proc/self/status: RssAnon, private memory; RssFile, file-backed pages such as the
// node binary and its libraries, which the kernel can drop and read again; RssShmem, shared memory such as
// SQLite's WAL index) beside V8's (process.memoryUsage, the old and new generations). SQLite's own allocation
// count is not reachable: better-sqlite3 is built with SQLITE_DEFAULT_MEMSTATUS=0 (sqlite3_memory_used is 0);
// its page cache is bounded by cache_size (-16000: 16 MB a connection) and mmap_size is 0.
import { readFileSync, writeFileSync } from 'node:fs';
import v8 from 'node:v8';

const MB = 1024 * 1024;

/** One sample, in MB. */
export function memSample() {
  const m = process.memoryUsage();
  const spaces = Object.fromEntries(v8.getHeapSpaceStatistics().map((s) => [s.space_name, s.space_size]));
  let status = '';
  try {
    status = readFileSync('/proc/self/status', 'utf8');
  } catch {
    status = ''; // not Linux: the kernel's split is left out
  }
  const kb = (k) => {
    const v = status.match(new RegExp(`${k}:\\s+(\\d+)`));
    return v ? Math.round(Number(v[1]) / 1024) : null;
  };
  const mb = (b) => Math.round(b / MB);
  return {
    rss: mb(m.rss),
    anon: kb('RssAnon'),
    file: kb('RssFile'),
    shmem: kb('RssShmem'),
    heapUsed: mb(m.heapUsed),
    heapTotal: mb(m.heapTotal),
    oldSpace: mb((spaces.old_space ?? 0) + (spaces.large_object_space ?? 0)),
    newSpace: mb(spaces.new_space ?? 0),
    external: mb(m.external),
    arrayBuffers: mb(m.arrayBuffers),
  };
}

/**
 * Sample every `ms` until stop(): stop() gives the sample at the highest RSS (with the stage it was in) and,
 * when `file` is given, writes every sample there as a JSON line. `stage(name)` marks where the work is.
 */
export function memTrace(file, ms = 100) {
  const t0 = performance.now();
  const samples = [];
  let stage = 'start';
  const take = () => samples.push({ t: Math.round(performance.now() - t0), stage, ...memSample() });
  take();
  const timer = setInterval(take, ms);
  timer.unref();
  return {
    stage(name) {
      take();
      stage = name;
    },
    stop() {
      clearInterval(timer);
      take();
      if (file) writeFileSync(file, samples.map((s) => JSON.stringify(s)).join('\n') + '\n');
      return samples.reduce((a, s) => (s.rss > a.rss ? s : a));
    },
  };
}
