// Diff of 1,000,000 records against a 1,000,000-record SQLite snapshot: time and peak RSS.
// Run after a build:  npx tsc -p tsconfig.json && node test/bench/diff.bench.mjs [records]
// The snapshot is seeded in a child process so that the reported peak RSS is the diff's own.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const dist = new URL('../../dist/', import.meta.url);
const { openStateDb } = await import(new URL('snapshot/db.js', dist).href);
const { diffRecords } = await import(new URL('sync/diff.js', dist).href);
const { planSync } = await import(new URL('sync/plan.js', dist).href);
const { policySchema } = await import(new URL('sync/policy.js', dist).href);

const n = Number(process.argv[process.argv[2] === '--seed' ? 4 : 2] ?? 1_000_000);
const id = (i) => `SKU-${String(i).padStart(7, '0')}`;
const record = (i, v = 0) => ({
  record_id: id(i),
  display_name: `Product number ${i}${v ? ' (new)' : ''}`,
  api_value: `P${i}`,
  aliases: [`prod ${i}`],
  attributes: { stock: (i * 7) % 100, price: 100 + (i % 50), color: i % 2 ? 'red' : 'blue' },
  active: true,
});

if (process.argv[2] === '--seed') {
  const db = openStateDb(process.argv[3]);
  const t = performance.now();
  function* seed() {
    for (let i = 0; i < n; i++) yield record(i);
  }
  db.snapshot('bench').confirm({ activeVersion: 1, upserts: seed() });
  db.close();
  process.stdout.write(JSON.stringify({ seedMs: Math.round(performance.now() - t) }));
  process.exit(0);
}

const dir = mkdtempSync(join(tmpdir(), 'dc-bench-'));
const path = join(dir, 'state.db');
try {
  const seed = JSON.parse(execFileSync(process.execPath, [fileURLToPath(import.meta.url), '--seed', path, String(n)], { encoding: 'utf8' }));
  const db = openStateDb(path);
  const rssBefore = process.memoryUsage().rss;
  // The source: 1% changed, 0.5% gone, 0.5% new; yielded in reverse order (unsorted input).
  async function* source() {
    for (let i = n - 1 + n / 200; i >= 0; i--) {
      if (i % 200 === 3) continue;
      yield record(i, i % 100 === 1 ? 1 : 0);
    }
  }
  const t = performance.now();
  const cs = await diffRecords(source(), db.snapshot('bench').reader(), { ownership: 'source' });
  const diffMs = performance.now() - t;
  const t2 = performance.now();
  const plan = planSync(cs, db.snapshot('bench').info(), ['read', 'write', 'replace', 'publish'], policySchema.parse({}), { ratePerMinute: 100 });
  const planMs = performance.now() - t2;
  const mb = (b) => Math.round(b / 1024 / 1024);
  console.log(
    JSON.stringify(
      {
        records: n,
        seedMs: seed.seedMs,
        diffMs: Math.round(diffMs),
        planMs: Math.round(planMs),
        counts: cs.counts,
        path: plan.path,
        rssBeforeDiffMB: mb(rssBefore),
        peakRssMB: Math.round(process.resourceUsage().maxRSS / 1024),
        heapUsedAfterMB: mb(process.memoryUsage().heapUsed),
      },
      null,
      1,
    ),
  );
  db.close();
} finally {
  rmSync(dir, { recursive: true, force: true });
}
