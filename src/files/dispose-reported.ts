import type { Logger } from 'pino';
import type { DatasetConfig } from '../config/schema.js';
import { event } from '../log/events.js';
import { disposeFile, type Disposal, type DisposeOptions } from './dispose.js';
import { fateDir, type FileFate } from './archive.js';
import type { WatchConfig } from '../config/watch.js';
import type { ReadyFile } from './ready-file.js';
import type { HealthReasons } from './ports.js';
import type { Clock } from '../clock.js';

/** What disposeReported needs. */
export interface DisposeDeps {
  logger: Logger;
  health: HealthReasons;
  /** The one clock (src/clock.ts). */
  clock: Clock;
  /** When the caller tries the disposal again if this one fails (ms): the failure's line says so. */
  retryInMs?: number;
  /** Where a file that cannot be moved is noted for `status` (it reads the state db, not /healthz), and unnoted once it is. */
  stuck?: StuckFiles;
}

/** The state db's note of files that stay in their folder because their `after` failed (waiting_files, code DISPOSE_FAILED). */
export interface StuckFiles {
  /** `file` of `feed` (undefined: the caller knows it) could not be moved or deleted: `message` says why and what to do. */
  stuck(file: string, feed: string | undefined, message: string): void;
  /** `file` was moved or deleted after all. */
  moved(file: string): void;
}

/**
 * Apply the watch's `after` to a file and say when it fails:
 * a file.dispose_failed line with the folder, errno and what to check, and a
 * `dispose` reason in /healthz until a later disposal of the dataset succeeds.
 * Returns null when it failed; the file (and its marker) then stay in the folder.
 */
export async function disposeReported(
  ds: Pick<DatasetConfig, 'name'> & { watch: WatchConfig },
  file: ReadyFile,
  fate: FileFate,
  opts: DisposeOptions,
  deps: DisposeDeps,
): Promise<Disposal | null> {
  try {
    const d = await disposeFile(file, fate, ds.watch, opts);
    deps.health.clear(ds.name, 'dispose');
    deps.stuck?.moved(file.path);
    return d;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? 'INTERNAL';
    const dir = fateDir(ds.watch, fate);
    const what = ds.watch.after === 'delete' ? `delete ${file.path}` : `move ${file.path} to ${dir}`;
    const hint =
      `check that the service user may write ${ds.watch.path}` +
      (ds.watch.after === 'delete' ? '' : ` and ${dir}`) +
      ' (under systemd, list the folders in ReadWritePaths=)';
    const retry = deps.retryInMs === undefined ? {} : { retry_in_ms: deps.retryInMs };
    deps.logger.error(
      event('file.dispose_failed', { file: file.path, fate, after: ds.watch.after, dir, code, hint, ...retry, err }),
      deps.retryInMs === undefined ? 'cannot move the file after its sync' : `cannot move the file after its sync: it stays in the folder and is tried again in ${Math.round(deps.retryInMs / 1000)} s`,
    );
    deps.health.set(ds.name, 'dispose', 'DISPOSE_FAILED', `cannot ${what}: ${code}; ${hint}`, deps.clock.now());
    const when = deps.retryInMs === undefined ? 'the daemon tries again after its next sync' : 'the daemon tries again on a back-off while it runs';
    deps.stuck?.stuck(file.path, (ds as { feed?: string }).feed, `cannot ${what} (${code}): ${hint}; ${when}`);
    return null;
  }
}
