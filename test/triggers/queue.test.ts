import { describe, expect, it } from 'vitest';
import { DatasetQueue, type DatasetJob } from '../../src/triggers/queue.js';

function file(name: string, mtimeMs: number): DatasetJob {
  return { kind: 'file', origin: 'watch', file: { path: `/in/${name}`, name, size: 1, mtimeMs } };
}

/** A queue whose jobs finish only when the test says so. */
function harness() {
  const ran: string[] = [];
  const superseded: string[] = [];
  const depths: number[] = [];
  const gates: Array<() => void> = [];
  const q = new DatasetQueue({
    run: async (job) => {
      ran.push(job.kind === 'file' ? job.file.name : job.kind);
      await new Promise<void>((r) => gates.push(r));
    },
    superseded: (job, by) => superseded.push(`${job.kind === 'file' ? job.file.name : ''}<${by.name}`),
    depthChanged: (d) => depths.push(d),
  });
  const release = async () => {
    gates.shift()?.();
    await new Promise((r) => setImmediate(r));
  };
  return { q, ran, superseded, depths, release };
}

describe('dataset queue', () => {
  it('runs one job at a time', async () => {
    const h = harness();
    h.q.push(file('a.csv', 1));
    h.q.push({ kind: 'reconcile' });
    expect(h.ran).toEqual(['a.csv']);
    expect(h.q.depth).toBe(2);
    await h.release();
    expect(h.ran).toEqual(['a.csv', 'reconcile']);
    await h.release();
    await h.q.idle();
    expect(h.q.depth).toBe(0);
  });

  it('coalesces files arriving during a sync: the next sync reads the newest only', async () => {
    const h = harness();
    h.q.push(file('a.csv', 1));
    h.q.push(file('b.csv', 2));
    h.q.push(file('c.csv', 3));
    h.q.push(file('d.csv', 4));
    expect(h.superseded).toEqual(['b.csv<c.csv', 'c.csv<d.csv']);
    expect(h.q.depth).toBe(2);
    await h.release();
    await h.release();
    await h.q.idle();
    expect(h.ran).toEqual(['a.csv', 'd.csv']);
  });

  it('keeps the newer file when an older one arrives late', async () => {
    const h = harness();
    h.q.push(file('a.csv', 1));
    h.q.push(file('new.csv', 9));
    h.q.push(file('old.csv', 5));
    expect(h.superseded).toEqual(['old.csv<new.csv']);
    await h.release();
    expect(h.ran).toEqual(['a.csv', 'new.csv']);
  });

  it('does not archive a file superseded by a newer state of the same path', async () => {
    const h = harness();
    h.q.push(file('a.csv', 1));
    h.q.push(file('x.csv', 2));
    h.q.push(file('x.csv', 3));
    expect(h.superseded).toEqual([]);
    expect(h.q.depth).toBe(2);
  });

  it('queues each whole-dataset task once', async () => {
    const h = harness();
    h.q.push(file('a.csv', 1));
    h.q.push({ kind: 'reconcile' });
    h.q.push({ kind: 'reconcile' });
    expect(h.q.depth).toBe(2);
  });

  it('stop lets the running job finish and hands back the waiting ones', async () => {
    const h = harness();
    h.q.push(file('a.csv', 1));
    h.q.push(file('b.csv', 2));
    let stopped = false;
    const stopping = h.q.stop().then((left) => {
      stopped = true;
      return left;
    });
    await new Promise((r) => setImmediate(r));
    expect(stopped).toBe(false);
    expect(h.q.push(file('c.csv', 3))).toBe(false);
    await h.release();
    const left = await stopping;
    expect(left.map((j) => (j.kind === 'file' ? j.file.name : j.kind))).toEqual(['b.csv']);
    expect(h.ran).toEqual(['a.csv']);
  });

  it('goes on after a failing job and runs cleanup', async () => {
    const cleaned: string[] = [];
    const ran: string[] = [];
    const q = new DatasetQueue({
      run: async (job) => {
        ran.push(job.kind);
        if (job.kind === 'file') throw new Error('boom');
      },
      superseded: () => undefined,
    });
    q.push({ ...file('a.csv', 1), cleanup: async () => void cleaned.push('a') } as DatasetJob);
    q.push({ kind: 'reconcile' });
    await q.idle();
    expect(ran).toEqual(['file', 'reconcile']);
    expect(cleaned).toEqual(['a']);
  });
});
