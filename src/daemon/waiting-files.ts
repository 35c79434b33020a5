import { stat } from 'node:fs/promises';
import { DISPOSE_FAILED, type WaitingFile } from '../snapshot/waiting-files.js';
import type { SyncSummary } from '../sync/outcome.js';
import type { Clock } from '../clock.js';
import type { StuckFiles } from '../files/dispose-reported.js';
import type { DaemonState } from './ports.js';

/**
 * Pure: what a sync of a dataset's own files says of their wait for a person
 * (D7 of issue 13). A sync that ended `waiting` (a held change of another
 * feed, a draft the connector did not make) keeps its files: each waits, with
 * the sync's code and message. A file the sync refused on its own, or could
 * not read now (a code of its own), is not waiting for a person; it and every
 * file of a sync that ended otherwise wait no more. `feed`: the feed of a
 * summary that names none (a dataset's single source).
 */
export function waitsOf(s: SyncSummary, feed: string, now: number): { wait: WaitingFile[]; done: string[] } {
  const files = s.files ?? (s.file === null ? [] : [{ file: s.file, feed: s.feed?.name ?? feed, outcome: 'planned' as const, code: null }]);
  const wait: WaitingFile[] = [];
  const done: string[] = [];
  for (const f of files) {
    if (s.result === 'waiting' && f.outcome !== 'rejected' && f.code === null) wait.push({ file: f.file, feed: f.feed, code: s.code ?? 'WAITING', message: s.message, since: now });
    else done.push(f.file);
  }
  return { wait, done };
}

/** Note in the state db what a sync of the dataset's own files says of their wait (status reads it). */
export function noteWaits(state: DaemonState, dataset: string, s: SyncSummary, feed: string, now: number): void {
  if (!state.waiting) return;
  const { wait, done } = waitsOf(s, feed, now);
  for (const w of wait) state.waiting.wait(dataset, w);
  for (const f of done) state.waiting.done(dataset, f);
}

/** At start: the waits of files no longer there (moved by hand, or gone while the daemon was stopped) go. */
export async function forgetGoneWaits(state: DaemonState, dataset: string): Promise<void> {
  for (const w of state.waiting?.all(dataset) ?? []) {
    if (!(await stat(w.file).catch(() => undefined))?.isFile()) state.waiting!.done(dataset, w.file);
  }
}

/**
 * A file that cannot be moved after its sync, noted as waiting in each dataset that took it (`takers`: the
 * dataset and its feed; a shared export's file, every store's), so that `status` names it with what to do:
 * the log line and /healthz say it too, but `status` reads the state db. A later move clears it.
 */
export function stuckFilesOf(state: DaemonState, takers: () => ReadonlyArray<{ dataset: string; feed: string }>, clock: Clock): StuckFiles {
  return {
    stuck(file, feed, message) {
      for (const t of takers()) state.waiting?.wait(t.dataset, { file, feed: feed ?? t.feed, code: DISPOSE_FAILED, message, since: clock.now() });
    },
    moved(file) {
      for (const t of takers()) state.waiting?.done(t.dataset, file);
    },
  };
}
