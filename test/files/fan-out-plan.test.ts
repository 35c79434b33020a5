import { describe, expect, it } from 'vitest';
import { archivable, fileOrder, nextStep, type PlanFile } from '../../src/files/fan-out-plan.js';

// Issue 13, per-taker progress: the pure planner of a shared export's files.

const f = (name: string, mtimeMs: number): PlanFile => ({ path: `/ho/${name}`, mtimeMs });
const F1 = f('s1.csv', 1);
const F2 = f('s2.csv', 2);
const F3 = f('s3.csv', 3);
const files = [F1, F2, F3];
const doneSet = (pairs: Array<[string, PlanFile]>) => (t: string, file: PlanFile) => pairs.some(([k, d]) => k === t && d === file);

describe('fan-out plan (issue 13)', () => {
  it('orders files by modification time, then path', () => {
    expect(fileOrder([F3, f('b.csv', 1), F1]).map((x) => x.path)).toEqual(['/ho/b.csv', '/ho/s1.csv', '/ho/s3.csv']);
  });

  it('hands the oldest file to every free taker at it; a blocked taker holds back no one', () => {
    const takers = [
      { key: 'A', full: false, blocked: true },
      { key: 'B', full: false, blocked: false },
      { key: 'C', full: false, blocked: false },
    ];
    expect(nextStep(files, takers, () => false)).toEqual({ take: { file: F1, takers: ['B', 'C'] }, superseded: [] });
    // B is ahead of C: C takes its next file first (the oldest some free taker has not taken), alone.
    expect(nextStep(files, takers, doneSet([['B', F1], ['B', F2]]))).toEqual({ take: { file: F1, takers: ['C'] }, superseded: [] });
    expect(nextStep(files, takers, doneSet([['B', F1], ['C', F1]]))).toEqual({ take: { file: F2, takers: ['B', 'C'] }, superseded: [] });
    expect(nextStep(files, [{ key: 'A', full: false, blocked: true }], () => false)).toBeNull();
  });

  it('a full taker goes to its newest file and supersedes its older ones for itself only', () => {
    const takers = [
      { key: 'U', full: false, blocked: false },
      { key: 'F', full: true, blocked: false },
    ];
    expect(nextStep(files, takers, () => false)).toEqual({
      take: { file: F1, takers: ['U'] },
      superseded: [
        { taker: 'F', file: F1 },
        { taker: 'F', file: F2 },
      ],
    });
  });

  it('a file older than one the taker is done with (it came late) is superseded for that taker', () => {
    const step = nextStep(files, [{ key: 'U', full: false, blocked: false }], doneSet([['U', F2]]));
    expect(step).toEqual({ take: { file: F3, takers: ['U'] }, superseded: [{ taker: 'U', file: F1 }] });
    expect(nextStep([F1, F2], [{ key: 'U', full: false, blocked: false }], doneSet([['U', F2]]))).toEqual({ take: null, superseded: [{ taker: 'U', file: F1 }] });
  });

  it('archives in order: the files every taker is done with, up to the first one some taker is not', () => {
    const done = doneSet([['A', F1], ['B', F1], ['B', F2], ['A', F3], ['B', F3]]);
    expect(archivable(files, ['A', 'B'], done)).toEqual([F1]);
    expect(archivable(files, ['B'], done)).toEqual([F1, F2, F3]);
  });
});
