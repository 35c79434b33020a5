import type { SnapshotReader } from '../../model/snapshot-reader.js';
import type { Changeset } from '../core/changeset.js';
import { mergeJoin, type DiffOptions } from '../core/diff.js';
import { ChangesetFiles } from './changeset-files.js';
import type { SortedSource } from './sorted-source.js';

/**
 * Diff an export sorted on disk against the snapshot, into a changeset on
 * disk in `dir` (issue 18): both sides are streamed in record_id byte order
 * and merge-joined, so memory does not grow with the dataset. Records are
 * compared as canonical JSON text, and parsed only when they differ.
 */
export async function diffSource(source: SortedSource, snapshot: SnapshotReader, options: DiffOptions, dir: string): Promise<Changeset> {
  const files = new ChangesetFiles(dir, source);
  try {
    const steps = mergeJoin(source.entries(), snapshot, options, files, source);
    for (;;) {
      const step = steps.next();
      if (step.done) return files.finish(step.value);
      await new Promise<void>((resolve) => setImmediate(resolve)); // let timers and other datasets run
    }
  } finally {
    files.close();
  }
}
