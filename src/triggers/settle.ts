/** What the watcher saw of a file at one moment. */
export interface FileObservation {
  size: number;
  mtimeMs: number;
}

/**
 * What tells one file under a path from another: inode and change time. A
 * new export of the same name, size and mtime (timestamps kept by a copy, or
 * a coarse clock on a share) is still another file; chokidar may report it as
 * a change of the one just moved away, never as unlink then add.
 */
export interface FileIdentity {
  ino?: number;
  ctimeMs?: number;
}

/** The settle decision for one observation. */
export type SettleVerdict =
  | { state: 'settled' }
  | { state: 'waiting'; dueAt: number }
  /** Settled before and emitted, unchanged since: nothing to do. */
  | { state: 'unchanged' };

/**
 * How long a 0-byte file must stay 0 bytes before it counts as complete. Some exporters create the file, run
 * their query, then write: a file empty for settle_ms is most often one still to be written, and taken then it
 * would be refused EMPTY_FILE and moved to failed/ while its writer still has it open. A truly empty export is
 * still handed on (and refused or held as any other) once this has passed.
 */
export function emptySettleMs(settleMs: number): number {
  return Math.max(60_000, 10 * settleMs);
}

interface Entry extends FileObservation, FileIdentity {
  since: number;
}

/**
 * Pure core of "is this file complete?": a file is complete once its size and
 * mtime (and identity, when given) are the same in two observations at least `settleMs` apart (a 0-byte file:
 * emptySettleMs apart). A slow
 * writer keeps moving `since`; an overwrite of the same name after it was
 * emitted starts over. The caller brings the time and the stat results.
 */
export class SettleTracker {
  readonly #settleMs: number;
  readonly #emptyMs: number;
  readonly #seen = new Map<string, Entry>();
  readonly #emitted = new Map<string, FileObservation & FileIdentity>();

  constructor(settleMs: number) {
    this.#settleMs = settleMs;
    this.#emptyMs = emptySettleMs(settleMs);
  }

  /** Record an observation of `path` at `now` and say whether it has settled. */
  observe(path: string, obs: FileObservation & FileIdentity, now: number): SettleVerdict {
    const done = this.#emitted.get(path);
    if (done && same(done, obs)) return { state: 'unchanged' };
    const prev = this.#seen.get(path);
    if (!prev || !same(prev, obs)) {
      this.#seen.set(path, { ...obs, since: now });
      return { state: 'waiting', dueAt: now + Math.max(this.#settleMs, 1) };
    }
    const settledAt = prev.since + this.#boundOf(obs);
    if (now >= settledAt) return { state: 'settled' };
    // A 0-byte file is looked at again every settle_ms: its content may come without a file-system event.
    return { state: 'waiting', dueAt: Math.min(settledAt, now + Math.max(this.#settleMs, 1)) };
  }

  #boundOf(obs: FileObservation): number {
    return obs.size === 0 ? this.#emptyMs : this.#settleMs;
  }

  /** Remember that `path` was emitted as `obs`, so the same content-state is not emitted twice. */
  markEmitted(path: string, obs: FileObservation & FileIdentity): void {
    this.#emitted.set(path, { size: obs.size, mtimeMs: obs.mtimeMs, ino: obs.ino, ctimeMs: obs.ctimeMs });
    this.#seen.delete(path);
  }

  /** Forget `path` (it was removed, moved away or deleted). */
  forget(path: string): void {
    this.#seen.delete(path);
    this.#emitted.delete(path);
  }

  /** True while `path` is seen but not yet settled. */
  isPending(path: string): boolean {
    return this.#seen.has(path);
  }

  /** How many paths are seen but not yet settled. */
  get pendingCount(): number {
    return this.#seen.size;
  }

  /** Paths seen but not yet settled. */
  pending(): string[] {
    return [...this.#seen.keys()];
  }

  /** True while `path` is pending and was 0 bytes when last seen (its content, and so its mtime, still to come). */
  pendingEmpty(path: string): boolean {
    return this.#seen.get(path)?.size === 0;
  }

  /** The modification time last seen of a path not yet settled; undefined when it is not pending. */
  pendingMtime(path: string): number | undefined {
    return this.#seen.get(path)?.mtimeMs;
  }
}

function same(a: FileObservation & FileIdentity, b: FileObservation & FileIdentity): boolean {
  return a.size === b.size && a.mtimeMs === b.mtimeMs && a.ino === b.ino && a.ctimeMs === b.ctimeMs;
}
