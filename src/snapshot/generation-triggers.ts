import type Database from 'better-sqlite3';

/** Rows a writer writes with migration 17's triggers before it suspends them (the suspension costs about a millisecond). */
export const SUSPEND_AFTER = 1000;

/**
 * Migration 17's triggers bump a dataset's generation on every row of its
 * records written, so that no writer can forget to: a few microseconds a row,
 * a fifth of the confirm of a 200,000-record first sync (issue 18). A writer
 * of many rows of one dataset, inside its own transaction, tells this of each
 * write; after SUSPEND_AFTER rows (each of which bumped the generation, so it
 * has moved already in this transaction) the triggers are dropped, and
 * restore() creates them again from their SQL as the database held it, before
 * the transaction ends. The triggers are there at every commit: a write by any
 * other path, or by this one after restore(), bumps as before; a throw rolls
 * the drop back with the writes (better-sqlite3's transaction()), and no other
 * connection sees the schema between (SQLite's isolation).
 */
export class GenerationTriggers {
  #rows = 0;
  /** The dropped triggers' SQL, while suspended. */
  #dropped: string[] | null = null;

  constructor(private readonly conn: Database.Database) {}

  /** After a statement that wrote `rows` rows of the dataset's records (its changes). */
  wrote(rows: number): void {
    this.#rows += rows;
    if (this.#rows >= SUSPEND_AFTER && this.#dropped === null) this.#suspend();
  }

  /** Create the triggers again (nothing when they were not suspended). Call before the transaction ends. */
  restore(): void {
    if (this.#dropped === null) return;
    for (const sql of this.#dropped) this.conn.exec(sql);
    this.#dropped = null;
  }

  #suspend(): void {
    if (!this.conn.inTransaction) throw new Error('generation triggers are suspended only inside the writer\'s transaction');
    const triggers = this.conn
      .prepare(`SELECT name, sql FROM sqlite_schema WHERE type = 'trigger' AND tbl_name = 'records' AND name GLOB 'records_generation_*' ORDER BY name`)
      .all() as Array<{ name: string; sql: string }>;
    for (const t of triggers) this.conn.exec(`DROP TRIGGER "${t.name}"`);
    this.#dropped = triggers.map((t) => t.sql);
  }
}
