import type Database from 'better-sqlite3';

/**
 * One transaction's writes of a dataset's records bumping its generation once
 * (migration 20), not once a record: the first write bumps it through
 * migration 17's triggers as any write does; then the dataset is held
 * (record_generations.held = 1), which the triggers skip, until release().
 * Call release() before the transaction ends: a hold left at a commit would let
 * a later writer's rows go unbumped. A throw before release() rolls the hold
 * back with the writes (better-sqlite3's transaction()).
 */
export class GenerationHold {
  #held = false;

  constructor(
    private readonly conn: Database.Database,
    private readonly dataset: string,
  ) {}

  /** After a statement that wrote `rows` of the dataset's records (its changes). */
  wrote(rows: number): void {
    if (rows === 0 || this.#held) return;
    // The row is there and not held: the write just made bumped it through its trigger (inserting it if new).
    const held = this.conn.prepare('UPDATE record_generations SET held = 1 WHERE dataset = ? AND held = 0').run(this.dataset).changes;
    if (held !== 1) throw new Error(`record_generations of dataset ${this.dataset} was held outside its writer's transaction: its generation did not move`);
    this.#held = true;
  }

  release(): void {
    if (!this.#held) return;
    this.conn.prepare('UPDATE record_generations SET held = 0 WHERE dataset = ?').run(this.dataset);
    this.#held = false;
  }
}
