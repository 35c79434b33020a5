import { randomBytes } from 'node:crypto';
import { readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { makePrivateDir } from '../disk/changeset-files.js';
import { ensurePlanDir } from './plan-files.js';

/**
 * One sync's scratch folder in the plan folder: the export sorted on disk and
 * the changeset of each diff (issue 18). A changeset that becomes a plan's is
 * moved out beside the plan file; the rest goes when the sync ends. What a
 * crash left is removed by the dataset's next sync (under its lock, so no
 * other process is using it).
 */
export class WorkDir {
  #n = 0;

  private constructor(readonly dir: string) {}

  /** Remove the dataset's leftover scratch folders and make a new one. */
  static open(planDir: string, dataset: string): WorkDir {
    ensurePlanDir(planDir);
    // Dataset names have no dots, so one dataset's prefix never matches another's.
    const prefix = `work.${dataset}.`;
    for (const name of readdirSync(planDir)) if (name.startsWith(prefix)) rmSync(join(planDir, name), { recursive: true, force: true });
    const dir = join(planDir, `${prefix}${randomBytes(6).toString('hex')}`);
    makePrivateDir(dir);
    return new WorkDir(dir);
  }

  /** A new folder for one diff's changeset. */
  changesetDir(): string {
    return join(this.dir, `changeset-${++this.#n}`);
  }

  remove(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }
}
