import { describe, expect, it } from 'vitest';
import { CoalesceWindow } from '../../src/daemon/coalesce-window.js';
import { ManualClock } from './service-harness.js';

describe('CoalesceWindow: the wait of a ready file for the files other feed folders still receive', () => {
  it('does not wait when nothing is arriving, or when coalesce_ms is 0', () => {
    const clock = new ManualClock();
    const w = new CoalesceWindow(clock);
    expect(w.wait(() => [], 3000, new AbortController().signal)).toBeNull();
    expect(w.wait(() => ['stock'], 0, new AbortController().signal)).toBeNull();
    expect(clock.labels()).toEqual([]);
  });

  it('ends when a look finds nothing arriving, and cancels its timer', async () => {
    const clock = new ManualClock();
    const w = new CoalesceWindow(clock);
    let arriving = ['stock'];
    const end = w.wait(() => arriving, 3000, new AbortController().signal)!;
    w.look();
    expect(clock.labels()).toEqual(['coalesce']);
    arriving = [];
    w.look();
    expect(await end).toBe('quiet');
    expect(clock.labels()).toEqual([]);
  });

  it('a stream of arrivals never moves the bound: one timer of coalesce_ms, and it ends the wait', async () => {
    const clock = new ManualClock();
    const w = new CoalesceWindow(clock);
    let n = 1;
    const end = w.wait(() => [`file-${n}`], 3000, new AbortController().signal)!;
    for (; n < 50; n++) w.look();
    expect(clock.pending.map((t) => [t.label, t.ms])).toEqual([['coalesce', 3000]]);
    clock.fire('coalesce');
    expect(await end).toBe('interval');
  });

  it('ends at stop', async () => {
    const clock = new ManualClock();
    const w = new CoalesceWindow(clock);
    const stop = new AbortController();
    const end = w.wait(() => ['stock'], 3000, stop.signal)!;
    stop.abort();
    expect(await end).toBe('stopped');
    expect(clock.labels()).toEqual([]);
  });
});
