// Issue 18: what migration 17's triggers (record_generations bumped by every write of records) add to the
// confirm of a large publish: the confirm's own upsert of N new records in one transaction, on a fresh state db,
// with the triggers as migrated, without them, and with the plain-UPDATE form. Medians of interleaved runs.
//   npm run build && node test/bench/generation-triggers.bench.mjs [records=100000] [runs=5]
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { openStateDb } from '../../dist/snapshot/db.js';

const N = Number(process.argv[2] ?? 100_000);
const RUNS = Number(process.argv[3] ?? 5);
const UPSERT = `INSERT INTO records (dataset, record_id, json, hash, owned, foreign_fields, foreign_at)
  VALUES (?, ?, ?, ?, 1, ?, NULL)
  ON CONFLICT (dataset, record_id) DO UPDATE SET json = excluded.json, hash = excluded.hash, owned = 1,
    foreign_fields = excluded.foreign_fields,
    foreign_at = CASE WHEN excluded.foreign_fields IS NULL THEN NULL ELSE records.foreign_at END`;
const DROP = ['records_generation_insert', 'records_generation_update', 'records_generation_delete'].map((t) => `DROP TRIGGER ${t};`).join('\n');

const UPDATE_FORM = `
  CREATE TRIGGER records_generation_insert AFTER INSERT ON records BEGIN
    UPDATE record_generations SET generation = generation + 1 WHERE dataset = NEW.dataset;
  END;
  CREATE TRIGGER records_generation_update AFTER UPDATE ON records BEGIN
    UPDATE record_generations SET generation = generation + 1 WHERE dataset IN (OLD.dataset, NEW.dataset);
  END;
  CREATE TRIGGER records_generation_delete AFTER DELETE ON records BEGIN
    UPDATE record_generations SET generation = generation + 1 WHERE dataset = OLD.dataset;
  END;`;

const variants = {
  triggers: () => {},
  none: (conn) => conn.exec(DROP),
  update: (conn) => {
    conn.exec(DROP);
    conn.exec(UPDATE_FORM);
    conn.prepare('INSERT OR IGNORE INTO record_generations (dataset, generation) VALUES (?, 1)').run('shop');
  },
  // Not a migration: a random token per generation (each bump writes randomblob), the alternative to migration 19's
  // mark set once per stamp of kept rows; measured to choose between them.
  token: (conn) => {
    conn.exec(DROP);
    conn.exec(
      ['records_generation_insert', 'records_generation_update', 'records_generation_delete']
        .map((t, i) => `CREATE TRIGGER ${t} AFTER ${['INSERT', 'UPDATE', 'DELETE'][i]} ON records BEGIN
          INSERT INTO record_generations (dataset, generation, stamp_mark) VALUES (${i === 2 ? 'OLD' : 'NEW'}.dataset, 1, hex(randomblob(16)))
            ON CONFLICT (dataset) DO UPDATE SET generation = generation + 1, stamp_mark = excluded.stamp_mark;
        END;`)
        .join('\n'),
    );
  },
  // Not a migration: the cost of a per-row lookup that writes only once per arming (a stamp would arm it).
  armed: (conn) => {
    conn.exec(DROP);
    conn.exec('ALTER TABLE record_generations ADD COLUMN armed INTEGER NOT NULL DEFAULT 1');
    conn.exec(UPDATE_FORM.replaceAll('generation = generation + 1 WHERE', 'generation = generation + 1, armed = 0 WHERE armed = 1 AND'));
    conn.prepare('INSERT OR IGNORE INTO record_generations (dataset, generation) VALUES (?, 1)').run('shop');
  },
};

function once(variant) {
  const dir = mkdtempSync(join(tmpdir(), 'gen-trig-'));
  try {
    const db = openStateDb(join(dir, 'state.db'));
    db.snapshot('shop');
    variants[variant](db.conn);
    const upsert = db.conn.prepare(UPSERT);
    const current = db.conn.prepare('SELECT owned, json FROM records WHERE dataset = ? AND record_id = ?');
    const t0 = performance.now();
    db.conn.transaction(() => {
      for (let i = 0; i < N; i++) {
        const id = `r-${String(i).padStart(7, '0')}`;
        const json = `{"record_id":"${id}","display_name":"Item ${i}","api_value":"code-${i}","aliases":[],"attributes":{"stock":"${i % 97}"},"active":true}`;
        current.get('shop', id);
        upsert.run('shop', id, json, String(i), null);
      }
    })();
    const ms = performance.now() - t0;
    db.close();
    return ms;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const times = Object.fromEntries(Object.keys(variants).map((v) => [v, []]));
for (let r = 0; r < RUNS; r++) for (const v of Object.keys(variants)) times[v].push(once(v));
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const base = median(times.none);
for (const [v, xs] of Object.entries(times)) console.log(`${v.padEnd(10)} ${N.toLocaleString('en')} records confirmed: median ${median(xs).toFixed(0)} ms (${xs.map((x) => x.toFixed(0)).join(', ')})  ${v === 'none' ? '' : `+${(((median(xs) - base) / base) * 100).toFixed(1)}%`}`);
