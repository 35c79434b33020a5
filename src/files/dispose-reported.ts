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
    return null;
  }
}
