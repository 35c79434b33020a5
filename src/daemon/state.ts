import type { StateDb } from '../snapshot/db.js';
import type { DaemonState } from './ports.js';
import { FeedPauses } from '../snapshot/feed-pauses.js';
import { WaitingFiles } from '../snapshot/waiting-files.js';

/** The daemon's view of the state db (one per daemon; the tests build it on their own temp db). */
export function daemonState(db: StateDb): DaemonState {
  return {
    lastFileHash: (dataset) => db.snapshot(dataset).state().lastSource?.fileHash ?? null,
    held: (dataset) => db.snapshot(dataset).held(),
    forgetFileHash: (dataset, reapply) => db.snapshot(dataset).forgetSourceHash(reapply),
    lastReapply: (dataset) => db.snapshot(dataset).reapply(),
    markReapply: (dataset, hash, status) => db.snapshot(dataset).markReapply(hash, status),
    paused: (dataset) => db.snapshot(dataset).paused(),
    feedPaused: (dataset, feed) => new FeedPauses(db.conn, dataset).paused(feed),
    waiting: {
      wait: (dataset, w) => new WaitingFiles(db.conn, dataset).wait(w),
      done: (dataset, file) => new WaitingFiles(db.conn, dataset).done(file),
      all: (dataset) => new WaitingFiles(db.conn, dataset).all(),
    },
  };
}
