import type Database from 'better-sqlite3';
import type { PauseState } from './dataset-state.js';

/** A paused feed (issue 14 with feeds): its name with who paused it and when. */
export interface FeedPause extends PauseState {
  feed: string;
}

/**
 * The feeds of a dataset paused by a person (`pause <dataset> --feed F`,
 * migration 13): their files wait in their folders and `sync --feed` refuses
 * them (FEED_PAUSED) while the dataset's other feeds go on. Read at each file
 * job, so the running daemon notices a pause or resume without a restart.
 */
export class FeedPauses {
  constructor(
    private readonly conn: Database.Database,
    private readonly dataset: string,
  ) {}

  /** Pause `feed` (kept if already paused: the first pause's time stays); returns the pause in force. */
  pause(feed: string, p: PauseState): PauseState {
    this.conn.prepare('INSERT INTO feed_pauses (dataset, feed, at, by) VALUES (?, ?, ?, ?) ON CONFLICT (dataset, feed) DO NOTHING').run(this.dataset, feed, p.at, p.by);
    return this.paused(feed)!;
  }

  /** Take `feed`'s exports again; the pause it ended, or null. */
  unpause(feed: string): PauseState | null {
    const was = this.paused(feed);
    if (was) this.conn.prepare('DELETE FROM feed_pauses WHERE dataset = ? AND feed = ?').run(this.dataset, feed);
    return was;
  }

  /** The pause of `feed` in force, or null. */
  paused(feed: string): PauseState | null {
    const r = this.conn.prepare('SELECT at, by FROM feed_pauses WHERE dataset = ? AND feed = ?').get(this.dataset, feed) as PauseState | undefined;
    return r ?? null;
  }

  /** Every paused feed of the dataset, by name. */
  all(): FeedPause[] {
    return this.conn.prepare('SELECT feed, at, by FROM feed_pauses WHERE dataset = ? ORDER BY feed').all(this.dataset) as FeedPause[];
  }
}
