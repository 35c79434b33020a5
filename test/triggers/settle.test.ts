import { describe, expect, it } from 'vitest';
import { SettleTracker } from '../../src/triggers/settle.js';

const at = (size: number, mtimeMs: number) => ({ size, mtimeMs });

describe('settle tracker', () => {
  it('settles a file unchanged over settle_ms', () => {
    const t = new SettleTracker(1000);
    expect(t.observe('a', at(10, 5), 0)).toEqual({ state: 'waiting', dueAt: 1000 });
    expect(t.observe('a', at(10, 5), 999)).toEqual({ state: 'waiting', dueAt: 1000 });
    expect(t.observe('a', at(10, 5), 1000)).toEqual({ state: 'settled' });
  });

  it('keeps a slow writer waiting until it stops', () => {
    const t = new SettleTracker(1000);
    t.observe('a', at(10, 5), 0);
    expect(t.observe('a', at(20, 900), 900)).toEqual({ state: 'waiting', dueAt: 1900 });
    expect(t.observe('a', at(30, 1800), 1900)).toEqual({ state: 'waiting', dueAt: 2900 });
    expect(t.observe('a', at(30, 1800), 2900)).toEqual({ state: 'settled' });
  });

  it('holds a 0-byte file for max(60 s, 10 x settle_ms): an exporter may create it and write it later', () => {
    const t = new SettleTracker(1000);
    // Looked at again every settle_ms (its content may come without an event), complete only at 60 s.
    expect(t.observe('a', at(0, 5), 0)).toEqual({ state: 'waiting', dueAt: 1000 });
    expect(t.observe('a', at(0, 5), 1000)).toEqual({ state: 'waiting', dueAt: 2000 });
    expect(t.observe('a', at(0, 5), 59_500)).toEqual({ state: 'waiting', dueAt: 60_000 });
    expect(t.pendingEmpty('a')).toBe(true);
    // Written at last: settles as any file, over settle_ms from then.
    expect(t.observe('a', at(10, 30_000), 30_000)).toEqual({ state: 'waiting', dueAt: 31_000 });
    expect(t.pendingEmpty('a')).toBe(false);
    expect(t.observe('a', at(10, 30_000), 31_000)).toEqual({ state: 'settled' });
    // A truly empty export is still handed on, once it has stayed empty that long.
    const slow = new SettleTracker(10_000);
    expect(slow.observe('b', at(0, 5), 0)).toEqual({ state: 'waiting', dueAt: 10_000 });
    expect(slow.observe('b', at(0, 5), 10_000)).toEqual({ state: 'waiting', dueAt: 20_000 });
    expect(slow.observe('b', at(0, 5), 100_000)).toEqual({ state: 'settled' });
  });

  it('treats a change of mtime alone as a change (same-size overwrite)', () => {
    const t = new SettleTracker(1000);
    t.observe('a', at(10, 5), 0);
    expect(t.observe('a', at(10, 600), 1000)).toEqual({ state: 'waiting', dueAt: 2000 });
  });

  it('does not emit the same state twice, but does emit an overwrite', () => {
    const t = new SettleTracker(100);
    t.observe('a', at(10, 5), 0);
    expect(t.observe('a', at(10, 5), 100)).toEqual({ state: 'settled' });
    t.markEmitted('a', at(10, 5));
    expect(t.observe('a', at(10, 5), 500)).toEqual({ state: 'unchanged' });
    expect(t.observe('a', at(10, 700), 700)).toEqual({ state: 'waiting', dueAt: 800 });
    expect(t.observe('a', at(10, 700), 800)).toEqual({ state: 'settled' });
  });

  it('emits another file under the same name, size and mtime (new inode or change time)', () => {
    const t = new SettleTracker(100);
    const first = { ...at(10, 5), ino: 7, ctimeMs: 50 };
    t.observe('a', first, 0);
    t.observe('a', first, 100);
    t.markEmitted('a', first);
    expect(t.observe('a', { ...first }, 200)).toEqual({ state: 'unchanged' });
    expect(t.observe('a', { ...first, ino: 8, ctimeMs: 300 }, 300)).toEqual({ state: 'waiting', dueAt: 400 });
    expect(t.observe('a', { ...first, ino: 8, ctimeMs: 300 }, 400)).toEqual({ state: 'settled' });
    t.markEmitted('a', { ...first, ino: 8, ctimeMs: 300 });
    // An inode reused after a delete: the change time still tells them apart.
    expect(t.observe('a', { ...first, ino: 8, ctimeMs: 500 }, 500)).toEqual({ state: 'waiting', dueAt: 600 });
  });

  it('starts over for a path that was forgotten', () => {
    const t = new SettleTracker(100);
    t.observe('a', at(10, 5), 0);
    t.markEmitted('a', at(10, 5));
    t.forget('a');
    expect(t.observe('a', at(10, 5), 1000)).toEqual({ state: 'waiting', dueAt: 1100 });
    expect(t.pending()).toEqual(['a']);
  });

  it('with settle_ms 0 still needs two equal observations', () => {
    const t = new SettleTracker(0);
    expect(t.observe('a', at(1, 1), 0)).toEqual({ state: 'waiting', dueAt: 1 });
    expect(t.observe('a', at(1, 1), 1)).toEqual({ state: 'settled' });
  });
});
