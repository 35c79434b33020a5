/**
 * Pure: which file of a shared export goes next, and to which takers (issue
 * 13's per-taker progress). Each taker goes through the export's files on its
 * own: an update or changes taker every file, oldest first; a full taker only
 * its newest (an older one is superseded for it alone). A blocked taker (it
 * keeps a file: paused, waiting for its retry) is left out, and holds back no
 * one else. The takers whose next file is the same one take it together, so
 * the file is read once for them.
 */

export interface PlanFile {
  path: string;
  mtimeMs: number;
}

export interface PlanTaker {
  key: string;
  /** A full feed: only its newest file counts. */
  full: boolean;
  /** Keeps a file (paused, retrying): takes nothing now. */
  blocked: boolean;
}

export interface FanOutStep<F extends PlanFile> {
  /** The file some takers take now, with them; null when this step only supersedes. */
  take: { file: F; takers: string[] } | null;
  /** Files a taker skips, each for that taker only: a full taker's files older than its newest, and any file older than one the taker is done with (it came late). */
  superseded: Array<{ taker: string; file: F }>;
}

/** The export's files in the order takers go through them: by modification time, then path. */
export function fileOrder<F extends PlanFile>(files: Iterable<F>): F[] {
  return [...files].sort((a, b) => a.mtimeMs - b.mtimeMs || (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

/** The next file some free taker has not taken (the oldest such), with every free taker whose next file it is; null when there is nothing to do. */
export function nextStep<F extends PlanFile>(ordered: readonly F[], takers: readonly PlanTaker[], done: (taker: string, file: F) => boolean): FanOutStep<F> | null {
  const next = new Map<string, number>();
  const superseded: FanOutStep<F>['superseded'] = [];
  for (const t of takers) {
    if (t.blocked) continue;
    const isDone = ordered.map((f) => done(t.key, f));
    const last = isDone.lastIndexOf(true);
    const todo = ordered.map((_, i) => i).filter((i) => !isDone[i]);
    const after = todo.filter((i) => i > last);
    const pick = after.length === 0 ? undefined : t.full ? after[after.length - 1]! : after[0]!;
    for (const i of todo) if (i < last || (t.full && pick !== undefined && i < pick)) superseded.push({ taker: t.key, file: ordered[i]! });
    if (pick !== undefined) next.set(t.key, pick);
  }
  if (next.size === 0) return superseded.length === 0 ? null : { take: null, superseded };
  const at = Math.min(...next.values());
  return { take: { file: ordered[at]!, takers: [...next].filter(([, i]) => i === at).map(([k]) => k) }, superseded };
}

/** The files every taker is done with, from the oldest on up to the first one some taker is not (files are archived in their order). */
export function archivable<F extends PlanFile>(ordered: readonly F[], takers: readonly string[], done: (taker: string, file: F) => boolean): F[] {
  const out: F[] = [];
  for (const f of ordered) {
    if (!takers.every((t) => done(t, f))) break;
    out.push(f);
  }
  return out;
}
