import { execFileSync } from 'node:child_process';
import { lstat, mkdir, readFile, readdir, stat, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { disposeFile } from '../../src/files/dispose.js';
import { watchConfigSchema, type WatchConfig } from '../../src/config/watch.js';
import { FolderWatcher } from '../../src/triggers/watcher.js';
import type { ReadyFile } from '../../src/files/ready-file.js';
import { SECRET, secretOutside } from '../sources/helpers.js';

// Issue 11 point 6: a link or any non-regular file in a watch folder is never handed on (nor opened), and said once.
const watchers: FolderWatcher[] = [];
afterEach(async () => {
  await Promise.all(watchers.splice(0).map((w) => w.close()));
});

function cfg(dir: string, extra: Partial<WatchConfig> = {}): WatchConfig {
  return watchConfigSchema.parse({ path: dir, settle_ms: 100, poll_interval_ms: 30, ...extra });
}

/** A watcher with its log lines and what it reported. */
async function start(c: WatchConfig) {
  const lines: Array<Record<string, unknown>> = [];
  let raw = '';
  const logger = pino(
    { level: 'debug' },
    new Writable({
      write(chunk, _e, cb) {
        raw += String(chunk);
        for (const l of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(l) as Record<string, unknown>);
        cb();
      },
    }),
  );
  const ready: ReadyFile[] = [];
  const superseded: ReadyFile[] = [];
  const w = new FolderWatcher(c, { onReady: (f) => ready.push(f), onSuperseded: (f) => superseded.push(f) }, { logger });
  watchers.push(w);
  await w.start();
  const until = async (what: string, ok: () => boolean) => {
    for (const end = Date.now() + 10_000; !ok(); await new Promise((r) => setTimeout(r, 10))) {
      if (Date.now() > end) throw new Error(`timed out waiting for ${what}: ${raw}`);
    }
  };
  const skips = (file: string) => lines.filter((l) => l.event === 'file.skipped' && l.file === file);
  return { w, lines, ready, superseded, raw: () => raw, until, skips };
}

describe('watch folder: links and other non-regular files', () => {
  for (const polling of [false, true]) {
    it(`a link to a file outside is skipped with one log line, never handed on (polling: ${polling})`, async () => {
      const { inbox, secret } = await secretOutside();
      const h = await start(cfg(inbox, { polling }));
      const link = join(inbox, 'stock.csv');
      await symlink(secret, link);
      await h.until('the skip line', () => h.skips(link).length > 0);
      expect(h.skips(link)[0]).toMatchObject({ reason: 'symlink', level: 40 });
      // A real export after it: once it is handed on, the watcher has looked at the folder many times over.
      await writeFile(secret, `${SECRET}\nchanged\n`);
      const real = join(inbox, 'real.csv');
      await writeFile(real, 'a\n');
      await h.until('the real file', () => h.ready.length > 0);
      expect(h.ready.map((f) => f.path)).toEqual([real]);
      expect(h.skips(link)).toHaveLength(1);
      expect(h.raw()).not.toContain('SECRET');
    });
  }

  it('at start-up: a link found there is skipped with one line; regular files go on as before', async () => {
    const { inbox, secret } = await secretOutside();
    await symlink(secret, join(inbox, 'a-link.csv'));
    await writeFile(join(inbox, 'b.csv'), 'b\n');
    const h = await start(cfg(inbox));
    await h.until('b.csv', () => h.ready.length > 0);
    expect(h.ready.map((f) => f.name)).toEqual(['b.csv']);
    expect(h.superseded).toEqual([]);
    expect(h.skips(join(inbox, 'a-link.csv'))).toHaveLength(1);
  });

  it.skipIf(process.platform === 'win32')('a FIFO is skipped (never opened, so nothing blocks) and a folder passes silently', async () => {
    const { inbox } = await secretOutside();
    const h = await start(cfg(inbox));
    const fifo = join(inbox, 'stock.csv');
    execFileSync('mkfifo', [fifo]);
    await mkdir(join(inbox, 'sub.csv'));
    await h.until('the FIFO line', () => h.skips(fifo).length > 0);
    expect(h.skips(fifo)[0]).toMatchObject({ reason: 'not_regular_file', why: expect.stringMatching(/named pipe/) });
    await writeFile(join(inbox, 'real.csv'), 'a\n');
    await h.until('the real file', () => h.ready.length > 0);
    expect(h.ready.map((f) => f.name)).toEqual(['real.csv']);
    expect(h.skips(join(inbox, 'sub.csv'))).toEqual([]);
  });

  it('follow_symlinks: a link into the watch folder is handed on (as a link); one out of it is still skipped', async () => {
    const { inbox, secret } = await secretOutside();
    await mkdir(join(inbox, 'archive'));
    const target = join(inbox, 'archive', 'stock-0412.csv');
    await writeFile(target, 'sku\nA-1\n');
    const h = await start(cfg(inbox, { follow_symlinks: true }));
    const out = join(inbox, 'out.csv');
    await symlink(secret, out);
    await h.until('the skip line', () => h.skips(out).length > 0);
    expect(h.skips(out)[0]?.why).toMatch(/leads out of the watch folder/);
    const inside = join(inbox, 'stock.csv');
    await symlink(target, inside);
    await h.until('the link inside', () => h.ready.length > 0);
    expect(h.ready).toEqual([expect.objectContaining({ path: inside, viaLink: true, size: 'sku\nA-1\n'.length })]);
  });
});

describe('dispose never moves what a link points to', () => {
  const opts = { now: Date.UTC(2024, 3, 12, 3, 15), timezone: 'UTC' };

  it('a file swapped for a link after it was read is left where it is (kept_changed), target untouched', async () => {
    const { inbox, secret } = await secretOutside();
    const path = join(inbox, 'stock.csv');
    const st = await stat(secret);
    // What was read had the target's size and time: only the kind of entry differs now.
    await symlink(secret, path);
    const d = await disposeFile({ path, name: 'stock.csv', size: st.size, mtimeMs: st.mtimeMs }, 'processed', cfg(inbox), opts);
    expect(d).toEqual({ action: 'kept_changed' });
    expect((await lstat(path)).isSymbolicLink()).toBe(true);
    expect(await readFile(secret, 'utf8')).toBe(`${SECRET}\n`);
  });

  it('a followed link is moved as the link: processed/ holds a link, the target stays where it was', async () => {
    const { inbox } = await secretOutside();
    const target = join(inbox, 'archive.csv');
    await writeFile(target, 'sku\n');
    const path = join(inbox, 'stock.csv');
    await symlink(target, path);
    const st = await stat(target);
    const d = await disposeFile({ path, name: 'stock.csv', size: st.size, mtimeMs: st.mtimeMs, viaLink: true }, 'processed', cfg(inbox, { follow_symlinks: true }), opts);
    expect(d).toMatchObject({ action: 'moved' });
    const moved = join(inbox, 'processed', (await readdir(join(inbox, 'processed')))[0]!);
    expect((await lstat(moved)).isSymbolicLink()).toBe(true);
    expect(await readFile(target, 'utf8')).toBe('sku\n');
  });

  it('a reject file that is a link is not moved along', async () => {
    const { inbox, secret } = await secretOutside();
    const path = join(inbox, 'stock.csv');
    await writeFile(path, 'x\n');
    const st = await stat(path);
    const rejectSource = join(inbox, 'stock.rejected.csv');
    await symlink(secret, rejectSource);
    const d = await disposeFile({ path, name: 'stock.csv', size: st.size, mtimeMs: st.mtimeMs }, 'failed', cfg(inbox), { ...opts, rejectSource });
    expect(d).toEqual({ action: 'moved', to: expect.stringContaining('failed') });
    expect((await lstat(rejectSource)).isSymbolicLink()).toBe(true);
  });
});

describe('which files of a dataset may be links', () => {
  it('watch, start-up and reapply files follow the watch; reread and command paths (named by the operator) are followed', async () => {
    const { linkPolicyFor } = await import('../../src/files/links.js');
    const plain = cfg('/srv/in');
    const follow = cfg('/srv/in', { follow_symlinks: true, processed_dir: '/archive/done' });
    for (const origin of ['watch', 'startup', 'reapply'] as const) {
      expect(linkPolicyFor(origin, plain)).toEqual({ follow: 'never' });
      expect(linkPolicyFor(origin, follow)).toEqual({ follow: 'within', roots: ['/srv/in', '/archive/done', '/srv/in/failed'] });
    }
    for (const origin of ['reread', 'command'] as const) expect(linkPolicyFor(origin, plain)).toEqual({ follow: 'always' });
    expect(linkPolicyFor('watch', undefined)).toEqual({ follow: 'never' });
  });
});
