import type Database from 'better-sqlite3';
import { FieldBaseCounts } from '../model/value-flags.js';

/**
 * Issue 13's speed: a dataset's record counts and its owned records'
 * value-guard bases (per field, how many could be zeroed and how many hold a
 * non-zero number), kept in the state db (migration 15) and changed in the
 * transaction of every write of snapshot records (store.ts confirm and adopt,
 * rebuild.ts commit). An indexed merge then reads these instead of counting
 * the whole snapshot, and takes away the records it read. Must equal
 * recount() at every commit (test/snapshot/tallies.test.ts).
 */

/** What the snapshot keeps of a dataset's records as a whole. */
export interface SnapshotTallies {
  records: number;
  owned: number;
  /** The owned records' bases, per field (TOP_FIELDS, `attributes.<key>`); a field not here has none. */
  bases: Record<string, { zeroable: number; nonzero: number }>;
}

/** The changes of one transaction's writes to a dataset's records, applied at its end (apply). */
export class TallyDelta {
  records = 0;
  owned = 0;
  readonly #bases = new FieldBaseCounts();

  /** A record that is now in the snapshot (`owned`: counted in the bases). */
  added(json: string, owned: boolean): void {
    this.records++;
    if (owned) this.own(json);
  }

  /** A record no longer in the snapshot, as it was. */
  removed(json: string, owned: boolean): void {
    this.records--;
    if (owned) this.disown(json);
  }

  /** An owned record's text changes (it stays owned). */
  changed(before: string, after: string): void {
    this.#bases.add(before, -1);
    this.#bases.add(after, 1);
  }

  /** A record becomes owned, as it is now. */
  own(json: string): void {
    this.owned++;
    this.#bases.add(json, 1);
  }

  disown(json: string): void {
    this.owned--;
    this.#bases.add(json, -1);
  }

  /**
   * Add this to the dataset's tallies, in the caller's transaction. `known`: whether the dataset had tallies
   * when the writes began (tracked); when it had none the writes are recounted instead (the first write of
   * a dataset, or a database whose tallies were lost).
   */
  apply(conn: Database.Database, dataset: string, known: boolean): void {
    if (!known) {
      store(conn, dataset, recount(conn, dataset));
      return;
    }
    conn.prepare('UPDATE record_tallies SET records = records + ?, owned = owned + ? WHERE dataset = ?').run(this.records, this.owned, dataset);
    const add = conn.prepare(
      `INSERT INTO value_bases (dataset, field, zeroable, nonzero) VALUES (?, ?, ?, ?)
       ON CONFLICT (dataset, field) DO UPDATE SET zeroable = zeroable + excluded.zeroable, nonzero = nonzero + excluded.nonzero`,
    );
    for (const [f, b] of Object.entries(this.#bases.bases())) add.run(dataset, f, b.zeroable, b.nonzero);
    conn.prepare('DELETE FROM value_bases WHERE dataset = ? AND zeroable = 0 AND nonzero = 0').run(dataset);
  }
}

/** Records counted between two turns of the event loop by TallyAhead. */
const AHEAD_SLICE = 2000;

/**
 * Issue 18: what a confirm of a plan's upserts adds to the tallies of a dataset that has no records (a first sync:
 * each upsert an owned record added), counted ahead of the confirm while the server works on the change, in
 * slices that give the event loop its turn: reading 200,000 records' values takes about half a second that the
 * confirm, which runs after the publish answer, no longer pays. Only a hint: confirm() takes it only when the
 * dataset is still without records and it counts exactly the records the confirm inserted, else recounts.
 */
export class TallyAhead {
  #delta: TallyDelta | null = null;
  #stopped = false;
  #started = false;

  constructor(readonly planId: string) {}

  /** Count `upserts` (once; a second call is ignored), unless stopped first. Never throws: what it cannot read (a plan's files removed meanwhile) it leaves to the confirm. */
  async count(upserts: Iterable<{ json: string }>): Promise<void> {
    if (this.#started) return;
    this.#started = true;
    const delta = new TallyDelta();
    let n = 0;
    try {
      for (const u of upserts) {
        if (this.#stopped) return;
        delta.added(u.json, true);
        if (++n % AHEAD_SLICE === 0) await new Promise<void>((resolve) => setImmediate(resolve));
      }
    } catch {
      return;
    }
    if (!this.#stopped) this.#delta = delta;
  }

  /** Stop counting; the delta if it was counted to the end (null otherwise). */
  take(): TallyDelta | null {
    this.#stopped = true;
    return this.#delta;
  }
}

/**
 * Whether the dataset's tallies are kept (read before its writes, in their transaction): true also for a
 * dataset with no records yet, whose tallies start at zero here.
 */
export function talliesKept(conn: Database.Database, dataset: string): boolean {
  if (conn.prepare('SELECT 1 FROM record_tallies WHERE dataset = ?').get(dataset) !== undefined) return true;
  if (hasRecords(conn, dataset)) return false;
  conn.prepare('INSERT INTO record_tallies (dataset, records, owned) VALUES (?, 0, 0)').run(dataset);
  return true;
}

/** The dataset's tallies as kept (none yet of a dataset without records); null when they are not kept (the caller counts the records instead). */
export function readTallies(conn: Database.Database, dataset: string): SnapshotTallies | null {
  const row = conn.prepare('SELECT records, owned FROM record_tallies WHERE dataset = ?').get(dataset) as { records: number; owned: number } | undefined;
  if (!row) return hasRecords(conn, dataset) ? null : { records: 0, owned: 0, bases: {} };
  const bases: SnapshotTallies['bases'] = {};
  for (const b of conn.prepare('SELECT field, zeroable, nonzero FROM value_bases WHERE dataset = ? ORDER BY field').all(dataset) as Array<{ field: string; zeroable: number; nonzero: number }>) {
    bases[b.field] = { zeroable: b.zeroable, nonzero: b.nonzero };
  }
  return { records: row.records, owned: row.owned, bases };
}

/** The tallies counted from the records themselves (every record read: migration 15, a dataset without them, tests). */
export function recount(conn: Database.Database, dataset: string): SnapshotTallies {
  const counts = new FieldBaseCounts();
  let records = 0;
  let owned = 0;
  const page = conn.prepare('SELECT record_id, owned, json FROM records WHERE dataset = ? AND record_id > ? ORDER BY record_id LIMIT 1000');
  for (let after = ''; ; ) {
    const rows = page.all(dataset, after) as Array<{ record_id: string; owned: number; json: string }>;
    for (const r of rows) {
      records++;
      if (r.owned !== 1) continue;
      owned++;
      counts.add(r.json);
    }
    if (rows.length < 1000) break;
    after = rows.at(-1)!.record_id;
  }
  return { records, owned, bases: counts.bases() };
}

/** Set the dataset's tallies to `t`. */
function store(conn: Database.Database, dataset: string, t: SnapshotTallies): void {
  conn.prepare('INSERT OR REPLACE INTO record_tallies (dataset, records, owned) VALUES (?, ?, ?)').run(dataset, t.records, t.owned);
  conn.prepare('DELETE FROM value_bases WHERE dataset = ?').run(dataset);
  const add = conn.prepare('INSERT INTO value_bases (dataset, field, zeroable, nonzero) VALUES (?, ?, ?, ?)');
  for (const [f, b] of Object.entries(t.bases)) add.run(dataset, f, b.zeroable, b.nonzero);
}

/** Migration 15's fill: the tallies of every dataset that has records, counted. */
export function fillTallies(conn: Database.Database): void {
  for (const ds of datasetsWithRecords(conn)) store(conn, ds, recount(conn, ds));
}

/**
 * The datasets that have records, found by a seek a dataset in the primary key (dataset, record_id):
 * SELECT DISTINCT dataset reads every record (0.7 s at 1,000,000 before the fill has read one).
 */
function datasetsWithRecords(conn: Database.Database): string[] {
  return conn
    .prepare(
      `WITH RECURSIVE ds(name) AS (
         SELECT min(dataset) FROM records
         UNION ALL SELECT (SELECT min(dataset) FROM records WHERE dataset > ds.name) FROM ds WHERE ds.name IS NOT NULL
       ) SELECT name FROM ds WHERE name IS NOT NULL`,
    )
    .pluck()
    .all() as string[];
}

function hasRecords(conn: Database.Database, dataset: string): boolean {
  return conn.prepare('SELECT 1 FROM records WHERE dataset = ? LIMIT 1').get(dataset) !== undefined;
}
