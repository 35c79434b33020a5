import { randomBytes } from 'node:crypto';
import { readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { DatasetConfig } from '../../config/schema.js';
import { readerMapping } from '../../feeds/view.js';
import { canonicalJson } from '../../model/canonical.js';
import type { LinkPolicy } from '../../sources/open-file.js';
import { makePrivateDir } from '../disk/changeset-files.js';
import { ensurePlanDir } from './plan-files.js';
import { readSources, type SourceRead } from './source-read.js';
import { diffsAsRead } from './feed-desired.js';

/**
 * A shared export read once for several datasets taking it (issue 13's
 * fan-out): each dataset's read, null for one that reads the file itself,
 * and the scratch folder holding their sorted records until `dispose`.
 */
export interface SharedRead {
  readonly reads: ReadonlyArray<SourceRead | null>;
  dispose(): void;
}

/** Scratch folders of shared reads in the plan folder: `shared.<pid>.<random>` (no dataset's work folder starts so). */
const PREFIX = 'shared.';

/**
 * Read `input.file` once for the datasets `views` (each seen through its
 * taking feed): one decode and parse, each dataset's rows filter, mapping and
 * sort (readSources), the sorted records in the plan folder, so that a plan's
 * changeset links them as it links a sync's own. Datasets reading the file
 * with another source than the first (never, when all take it from one
 * export) get null and read it in their own sync. No dataset's lock is
 * needed: nothing of a dataset is read or written, only the file.
 */
export async function readShared(planDir: string, views: readonly DatasetConfig[], input: { file: string; links?: LinkPolicy; sha256?: string }): Promise<SharedRead> {
  if (views.length === 0) return { reads: [], dispose: () => undefined };
  ensurePlanDir(planDir);
  removeOrphans(planDir);
  const dir = join(planDir, `${PREFIX}${process.pid}.${randomBytes(6).toString('hex')}`);
  makePrivateDir(dir);
  const dispose = () => rmSync(dir, { recursive: true, force: true });
  try {
    const source = canonicalJson(views[0]!.source);
    const taking = views.map((ds, i) => (canonicalJson(ds.source) === source ? i : -1)).filter((i) => i >= 0);
    const takers = taking.map((i) => {
      const workDir = join(dir, String(i));
      makePrivateDir(workDir);
      return { mapping: readerMapping(views[i]!), workDir, valueFlags: diffsAsRead(views[i]!) };
    });
    const read = await readSources(input.file, views[0]!.source, takers, { ...(input.links ? { links: input.links } : {}), ...(input.sha256 ? { sha256: input.sha256 } : {}) });
    const reads: Array<SourceRead | null> = views.map(() => null);
    taking.forEach((i, k) => (reads[i] = read[k]!));
    return { reads, dispose };
  } catch (err) {
    dispose();
    throw err;
  }
}

/** The scratch folders of shared reads whose process is gone (it crashed mid fan-out). */
function removeOrphans(planDir: string): void {
  for (const name of readdirSync(planDir)) {
    if (!name.startsWith(PREFIX)) continue;
    const pid = Number(name.slice(PREFIX.length, name.indexOf('.', PREFIX.length)));
    if (Number.isInteger(pid) && pid !== process.pid && !alive(pid)) rmSync(join(planDir, name), { recursive: true, force: true });
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
