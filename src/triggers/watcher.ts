import type { Stats } from 'node:fs';
import { lstat, readdir, stat } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { watch, type FSWatcher } from 'chokidar';
import type { Logger } from 'pino';
import { systemClock, type Clock } from '../clock.js';
import { event } from '../log/events.js';
import { fileKind, linkRefusal, type LinkPolicy } from '../sources/open-file.js';
import type { WatchConfig } from '../config/watch.js';
import { watchLinkPolicy } from '../files/links.js';
import { compileMarker, type Marker } from '../config/marker.js';
import { nameFilter, type NameFilter } from './patterns.js';
import { emptySettleMs, SettleTracker } from './settle.js';
import type { ReadyFile } from '../files/ready-file.js';

/** Callbacks of a folder watcher. */
export interface FolderWatcherEvents {
  /** A file is complete and should be processed. */
  onReady(file: ReadyFile): void;
  /** A file found at start-up that a newer one supersedes. */
  onSuperseded(file: ReadyFile): void;
  /**
   * The watched folder itself went away (removed, renamed, unmounted): no
   * more events will come. The owner closes this watcher and starts a new one
   * once the folder is back.
   */
  onLost?(reason: string): void;
  /** A file that was settling went away before it was ready (removed, moved): `settling` dropped. */
  onSettleDropped?(): void;
}

/**
 * Watches one export folder (chokidar) and says when a file is complete:
 * size and mtime stable over settle_ms (a 0-byte file: emptySettleMs), not ignored, marker present when
 * configured. It never reads the content. A symbolic link (unless
 * follow_symlinks lets it lead into the watch's own folders), a FIFO, a
 * socket or a device is never handed on: one file.skipped line names it
 * (once, until it changes), and it is left alone. Sub-folders are not
 * watched and pass silently.
 */
export class FolderWatcher {
  readonly dir: string;
  readonly #cfg: WatchConfig;
  readonly #filter: NameFilter;
  readonly #marker: Marker | undefined;
  readonly #tracker: SettleTracker;
  /** Each waiting path's settle check, cancelled by the function clock.after gave. */
  readonly #timers = new Map<string, () => void>();
  readonly #events: FolderWatcherEvents;
  readonly #clock: Clock;
  readonly #log: Logger | undefined;
  readonly #inflight = new Set<string>();
  readonly #again = new Set<string>();
  readonly #links: LinkPolicy;
  /** Entries skipped and already logged, by path: what was said of them, so the line is not repeated each poll. */
  readonly #skipped = new Map<string, string>();
  #fsw: FSWatcher | undefined;
  #closed = false;
  /** Device and inode of the folder when watching began: a folder recreated or remounted under the same path is another. */
  #root: { dev: number; ino: number } | undefined;
  #lost = false;
  /** Every file found at start-up is handed on, oldest first (an update feed or change list, issue 13), not only the newest. */
  readonly #keepAll: boolean;
  /**
   * Complete files not yet handed on because an older file of the folder is still settling (by path). Which of
   * two files settles first is chance (the order stat calls return, a poll): an update feed's or change list's
   * newer file taken before its older one would put the older values over the newer, or skip the older file.
   */
  readonly #held = new Map<string, ReadyFile>();
  /** Files found at start-up not yet looked at, with their modification time: older than them waits too. */
  readonly #unlooked = new Map<string, number>();
  /** Settled files waiting for their marker: they hold nothing back (a marker may never come). */
  readonly #markerWait = new Set<string>();

  constructor(cfg: WatchConfig, events: FolderWatcherEvents, opts: { clock?: Clock; logger?: Logger; keepAll?: boolean } = {}) {
    this.#cfg = cfg;
    this.dir = resolve(cfg.path);
    this.#filter = nameFilter(cfg.include, cfg.ignore);
    this.#marker = cfg.marker === undefined ? undefined : compileMarker(cfg.marker);
    this.#tracker = new SettleTracker(cfg.settle_ms);
    this.#events = events;
    this.#clock = opts.clock ?? systemClock;
    this.#log = opts.logger;
    this.#links = watchLinkPolicy(cfg);
    this.#keepAll = opts.keepAll ?? false;
  }

  /** True when `name` is a candidate export of this watch. */
  accepts(name: string): boolean {
    return this.#filter.accepts(name) && !(this.#marker?.isMarker(name) ?? false);
  }

  /** Scan what is already there (newest first, older superseded; with keepAll every file), then follow changes. */
  async start(): Promise<void> {
    const fsw = watch(this.dir, {
      depth: 0,
      ignoreInitial: true,
      usePolling: this.#cfg.polling,
      interval: this.#cfg.poll_interval_ms,
      binaryInterval: this.#cfg.poll_interval_ms,
      // Links are looked at by #inspect; chokidar follows them only when they may be read (to see their target change).
      followSymlinks: this.#cfg.follow_symlinks,
    });
    this.#fsw = fsw;
    fsw.on('add', (p) => this.#onEvent(p));
    fsw.on('change', (p) => this.#onEvent(p));
    fsw.on('unlink', (p) => this.forget(p));
    fsw.on('unlinkDir', (p) => {
      if (resolve(p) === this.dir) this.#markLost('the watched folder was removed');
    });
    // Chokidar does not always report the folder itself going (a race with rm -r, a rename): look at it on any raw event.
    fsw.on('raw', (_event: string, path: unknown) => {
      this.#checkRoot();
      // Polling reports a change only when the size differs or the mtime moves forward: a new export with the
      // name, size and mtime of the one just moved away shows only as a raw stat change (another inode).
      if (this.#cfg.polling && typeof path === 'string' && dirname(resolve(path)) === this.dir) this.#onEvent(path);
    });
    fsw.on('error', (err) => {
      this.#log?.warn(event('watch.error', { dir: this.dir, err }), 'watch error');
      // An error about one file (e.g. EACCES) is not the end of the watch; a folder that went away is.
      this.#checkRoot();
    });
    await new Promise<void>((res) => fsw.once('ready', () => res()));
    const st = await stat(this.dir);
    if (!st.isDirectory()) throw Object.assign(new Error(`${this.dir} is not a folder`), { code: 'ENOTDIR' });
    this.#root = { dev: st.dev, ino: st.ino };

    // Scan after the watcher is up, so nothing written in between is missed.
    const existing = await this.#scan();
    existing.sort((a, b) => b.mtimeMs - a.mtimeMs);
    if (this.#keepAll) {
      // Each file of an update feed or change list says something the others may not: none is superseded.
      for (const f of existing) this.#unlooked.set(f.path, f.mtimeMs);
      for (const f of existing.reverse()) void this.#check(f.path);
      return;
    }
    const [newest, ...older] = existing;
    for (const f of older) this.#events.onSuperseded(f);
    if (newest) void this.#check(newest.path);
  }

  /**
   * What is waiting in the folder now, newest first, without watching it
   * (`run --once`): candidate exports that are complete (unchanged over
   * settle_ms: a file written less than settle_ms ago is looked at again once
   * that has passed, and left when it changed meanwhile) and flagged by their
   * marker when one is configured. Throws (errno in `code`) when the folder
   * cannot be read.
   */
  async waiting(): Promise<ReadyFile[]> {
    const out: ReadyFile[] = [];
    for (const f of await this.#scan()) {
      if (f.size === 0 && f.mtimeMs + emptySettleMs(this.#cfg.settle_ms) > this.#clock.now()) {
        // Most likely still to be written (see emptySettleMs): left for a later run rather than waited for.
        this.#log?.info(event('file.skipped', { file: f.path, reason: 'still_empty' }), 'file left for a later run: 0 bytes, its writer may not have written it yet');
        continue;
      }
      // At most settle_ms: a modification time ahead of this clock (an exporting machine's clock, a share's) is no
      // reason to wait longer; the file is complete if it is the same after settle_ms.
      const wait = Math.min(this.#cfg.settle_ms, f.mtimeMs + this.#cfg.settle_ms - this.#clock.now());
      let file: ReadyFile | undefined = f;
      if (wait > 0) {
        await this.#clock.sleep(wait);
        const st = await stat(f.path).catch(() => undefined);
        file = st && st.size === f.size && st.mtimeMs === f.mtimeMs ? f : undefined;
      }
      if (!file) continue;
      if (this.#marker) {
        const markerPath = join(this.dir, this.#marker.markerFor(file.name));
        if (!(await stat(markerPath).catch(() => undefined))) continue;
        file = { ...file, markerPath };
      }
      out.push(file);
    }
    return out.sort((a, b) => b.mtimeMs - a.mtimeMs);
  }

  /**
   * Why the watched folder is no longer the one watched (gone, not a folder,
   * another device or inode), or null while it is. Chokidar may say nothing
   * when a folder is renamed away or a share remounted: the owner calls this
   * now and then.
   */
  async rootChanged(): Promise<string | null> {
    if (!this.#root) return null;
    const st = await stat(this.dir).catch((err: NodeJS.ErrnoException) => err);
    if (st instanceof Error) return `the watched folder cannot be read: ${st.code ?? st.message}`;
    if (!st.isDirectory()) return 'the watched path is no longer a folder';
    if (st.dev !== this.#root.dev || st.ino !== this.#root.ino) return 'the watched folder was replaced or remounted';
    return null;
  }

  /** True once the folder went away (onLost was called). */
  get lost(): boolean {
    return this.#lost;
  }

  #rootCheck: Promise<void> | undefined;

  #checkRoot(): void {
    if (this.#lost || this.#closed || this.#rootCheck) return;
    this.#rootCheck = this.rootChanged()
      .then((why) => {
        if (why) this.#markLost(why);
      })
      .finally(() => (this.#rootCheck = undefined));
  }

  #markLost(reason: string): void {
    if (this.#lost || this.#closed) return;
    this.#lost = true;
    this.#events.onLost?.(reason);
  }

  /** Forget a path (moved, deleted), so a new file of the same name is seen afresh. */
  forget(path: string): void {
    const abs = resolve(path);
    const wasSettling = this.#tracker.isPending(abs);
    this.#timers.get(abs)?.();
    this.#timers.delete(abs);
    this.#tracker.forget(abs);
    this.#skipped.delete(abs);
    this.#held.delete(abs);
    this.#unlooked.delete(abs);
    this.#markerWait.delete(abs);
    if (wasSettling) this.#events.onSettleDropped?.();
    this.#handOn();
  }

  /** How many files are being received: seen, not yet complete (or complete and waiting for their marker). */
  get settling(): number {
    return this.#tracker.pendingCount;
  }

  /** Stop watching; pending settle checks are dropped. */
  async close(): Promise<void> {
    this.#closed = true;
    this.#held.clear();
    for (const cancel of this.#timers.values()) cancel();
    this.#timers.clear();
    await this.#fsw?.close();
  }

  async #scan(): Promise<ReadyFile[]> {
    const entries = await readdir(this.dir, { withFileTypes: true });
    const out: ReadyFile[] = [];
    for (const e of entries) {
      if (e.isDirectory() || !this.accepts(e.name)) continue;
      const p = join(this.dir, e.name);
      const seen = await this.#inspect(p);
      if (seen) out.push({ path: p, name: e.name, size: seen.st.size, mtimeMs: seen.st.mtimeMs, ...(seen.viaLink ? { viaLink: true } : {}) });
    }
    return out;
  }

  /**
   * What may be read at `path`: a regular file, or a link followed as the
   * watch allows (its target's stat then). Anything else is skipped with one
   * log line per entry (issue 11: a link could lead to any file the service
   * user can read; opening a FIFO would block); null then, and when it is gone.
   */
  async #inspect(path: string): Promise<{ st: Stats; viaLink: boolean } | null> {
    const l = await lstat(path).catch(() => undefined);
    if (!l || l.isDirectory()) return null;
    if (l.isFile()) {
      this.#skipped.delete(path);
      return { st: l, viaLink: false };
    }
    if (!l.isSymbolicLink()) {
      this.#skip(path, l, 'not_regular_file', `${fileKind(l)}, not a regular file`);
      return null;
    }
    const verdict = await linkRefusal(path, this.#links);
    if ('refused' in verdict) {
      this.#skip(path, l, 'symlink', `a symbolic link: ${verdict.refused}`);
      return null;
    }
    const st = await stat(path).catch(() => undefined);
    if (!st) return null;
    if (!st.isFile()) {
      this.#skip(path, l, 'not_regular_file', `a symbolic link to ${fileKind(st)}, not a regular file`);
      return null;
    }
    this.#skipped.delete(path);
    return { st, viaLink: true };
  }

  /** Log once that `path` is not read, and why (again only when the entry is replaced or the reason changes). */
  #skip(path: string, l: Stats, reason: string, why: string): void {
    const said = `${l.ino}:${why}`;
    if (this.#skipped.get(path) === said) return;
    this.#skipped.set(path, said);
    this.#log?.warn(event('file.skipped', { file: path, reason, why }), `not opened: ${why}`);
  }

  #onEvent(path: string): void {
    const abs = resolve(path);
    const name = basename(abs);
    if (this.#marker?.isMarker(name)) {
      // A marker arrived: look again at every file still waiting for one.
      for (const p of this.#tracker.pending()) void this.#check(p);
      return;
    }
    if (this.accepts(name)) void this.#check(abs);
  }

  #schedule(path: string, atMs: number): void {
    if (this.#closed) return;
    this.#timers.get(path)?.();
    const cancel = this.#clock.after(Math.max(0, atMs - this.#clock.now()), () => {
      this.#timers.delete(path);
      void this.#check(path);
    }, `settle ${path}`);
    this.#timers.set(path, cancel);
  }

  /** One check per path at a time; a check asked for meanwhile runs right after. */
  async #check(path: string): Promise<void> {
    if (this.#inflight.has(path)) {
      this.#again.add(path);
      return;
    }
    this.#inflight.add(path);
    try {
      await this.#checkOnce(path);
    } finally {
      this.#inflight.delete(path);
      if (this.#unlooked.delete(path)) this.#handOn();
    }
    if (this.#again.delete(path)) await this.#check(path);
  }

  async #checkOnce(path: string): Promise<void> {
    if (this.#closed) return;
    const seen = await this.#inspect(path);
    if (this.#closed) return;
    if (!seen) {
      const said = this.#skipped.get(path);
      this.forget(path);
      if (said !== undefined) this.#skipped.set(path, said);
      return;
    }
    const { st, viaLink } = seen;
    const obs = { size: st.size, mtimeMs: st.mtimeMs };
    const identity = { ino: st.ino, ctimeMs: st.ctimeMs };
    const now = this.#clock.now();
    const verdict = this.#tracker.observe(path, { ...obs, ...identity }, now);
    if (verdict.state === 'unchanged') return;
    if (verdict.state === 'waiting') {
      this.#schedule(path, verdict.dueAt);
      return;
    }
    const name = basename(path);
    let markerPath: string | undefined;
    if (this.#marker) {
      markerPath = join(this.dir, this.#marker.markerFor(name));
      // A marker is a flag by its name only: never opened, and a link as good as a file (lstat: not followed).
      const m = await lstat(markerPath).catch(() => undefined);
      if (!m) {
        // Settled but not yet flagged: look again later (the marker's add event may come first).
        if (!this.#markerWait.has(path)) {
          this.#markerWait.add(path);
          this.#handOn();
        }
        this.#schedule(path, now + this.#cfg.poll_interval_ms);
        return;
      }
    }
    this.#markerWait.delete(path);
    this.#tracker.markEmitted(path, { ...obs, ...identity });
    this.#held.set(path, { path, name, ...obs, ...(markerPath ? { markerPath } : {}), ...(viaLink ? { viaLink: true } : {}) });
    this.#handOn();
  }

  /** Hand on the complete files, oldest first, each once no older file of the folder is still settling or unlooked at. */
  #handOn(): void {
    if (this.#closed || this.#held.size === 0) return;
    const ready = [...this.#held.values()].sort((a, b) => a.mtimeMs - b.mtimeMs || (a.path < b.path ? -1 : 1));
    let oldestWaiting = Infinity;
    for (const [p, m] of this.#unlooked) if (!this.#held.has(p)) oldestWaiting = Math.min(oldestWaiting, m);
    for (const p of this.#tracker.pending()) {
      // A 0-byte file still to be written holds nothing back: once written, its mtime is newer than any complete file.
      if (this.#markerWait.has(p) || this.#tracker.pendingEmpty(p)) continue;
      const m = this.#tracker.pendingMtime(p);
      if (m !== undefined) oldestWaiting = Math.min(oldestWaiting, m);
    }
    for (const f of ready) {
      if (f.mtimeMs >= oldestWaiting) break;
      this.#held.delete(f.path);
      this.#events.onReady(f);
    }
  }
}
