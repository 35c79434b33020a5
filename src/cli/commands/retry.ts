import { lstat, readdir, rm, stat } from 'node:fs/promises';
import { basename, isAbsolute, join } from 'node:path';
import type { Command } from 'commander';
import type { DatasetConfig } from '../../config/schema.js';
import { ConnectorError } from '../../errors.js';
import { fateDir } from '../../files/archive.js';
import type { WatchConfig } from '../../config/watch.js';
import { commandLogger, humanOutput, loadConfigFor, runAction } from '../context.js';
import { reportSync } from '../report-error.js';
import { syncSummaryLine } from './sync.js';

/** The export to send again: `file` (a name in failed/, or a path), else the newest export in failed/. */
async function failedExport(ds: DatasetConfig & { watch: WatchConfig }, file: string | undefined): Promise<string> {
  const dir = fateDir(ds.watch, 'failed');
  if (file !== undefined) {
    const path = isAbsolute(file) || file.includes('/') ? file : join(dir, file);
    if (!(await stat(path).catch(() => undefined))?.isFile()) {
      throw new ConnectorError('FILE_NOT_FOUND', `no export ${path}; the exports in ${dir} are listed by: ls ${dir}`, { action: 'reject', context: { dataset: ds.name, file: path } });
    }
    return path;
  }
  const names = await readdir(dir).catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') return [] as string[];
    throw new ConnectorError('FILE_UNREADABLE', `cannot read ${dir}: ${err.code ?? err.message}`, { action: 'reject', context: { dataset: ds.name, file: dir } });
  });
  const candidates: Array<{ path: string; mtimeMs: number }> = [];
  for (const name of names) {
    if (name.startsWith('.') || name.endsWith('.rejected.csv')) continue;
    const path = join(dir, name);
    // Only what the connector itself moved there: a link or a FIFO in failed/ is never offered (a read would refuse it).
    const st = await lstat(path).catch(() => undefined);
    if (st?.isFile()) candidates.push({ path, mtimeMs: st.mtimeMs });
  }
  const newest = candidates.sort((a, b) => b.mtimeMs - a.mtimeMs)[0];
  if (!newest) throw new ConnectorError('FILE_NOT_FOUND', `no export waits in ${dir}`, { action: 'reject', context: { dataset: ds.name, file: dir } });
  return newest.path;
}

/**
 * `retry <dataset> [file]`: send an export from the dataset's failed/ folder
 * through again, after the mapping or the source settings were fixed: one sync
 * of it (exit codes as `sync`), then, when it was used (published or
 * unchanged), it moves to processed/ and its old reject file goes; otherwise
 * it stays in failed/ with a new reject file.
 */
export function register(program: Command): void {
  program
    .command('retry')
    .description("send an export from the dataset's failed/ folder through again (after fixing the mapping); without [file], the newest one there")
    .argument('<dataset>', 'dataset name from the configuration')
    .argument('[file]', 'the export in failed/ (its name there, or a path)')
    .option('--json', 'JSON log lines on stdout, the sync.summary line last (the default when stdout is not a terminal)')
    .action(
      runAction(async (name: string, file: string | undefined, opts: { json?: boolean }, cmd: Command) => {
        const config = await loadConfigFor(cmd);
        const { cliEngine } = await import('../engine.js');
        const ds = config.datasets[name];
        if (!ds) throw new ConnectorError('UNKNOWN_DATASET', `no dataset "${name}" in the configuration`, { action: 'reject', context: { dataset: name } });
        if (!ds.watch || ds.watch.after !== 'move') {
          throw new ConnectorError('NO_FAILED_FOLDER', `dataset ${name} keeps no failed/ folder (watch.after is not move): send the export with sync ${name} --file <path>`, {
            action: 'reject',
            context: { dataset: name },
          });
        }
        const watched = { ...ds, watch: ds.watch };
        const path = await failedExport(watched, file);
        const human = humanOutput(opts);
        const { logger, progress } = await commandLogger(cmd, config, human);
        const cli = await cliEngine(config, logger, [name], 'retry');
        try {
          const summary = await cli.engine.sync(ds, { file: path });
          progress?.clear();
          if (summary.result === 'published' || summary.result === 'unchanged') {
            const { rejectFilePath } = await import('../../sources/reject-file.js');
            const { disposeFile } = await import('../../files/dispose.js');
            // Beside it: the failed attempt's reject file, or this sync's own when it skipped rows (skip_rows), which goes along.
            const reject = rejectFilePath(path);
            if (summary.rowErrors === 0) await rm(reject, { force: true });
            const st = await stat(path);
            const d = await disposeFile({ path, name: basename(path), size: st.size, mtimeMs: st.mtimeMs }, 'processed', ds.watch, {
              now: Date.now(),
              timezone: config.timezone,
              ...(summary.rowErrors > 0 ? { rejectSource: reject } : {}),
            });
            if (human && d.action === 'moved') process.stdout.write(`moved ${path} to ${d.to}\n`);
          }
          if (human) process.stdout.write(`${syncSummaryLine(summary)}\n`);
          return reportSync(summary);
        } finally {
          progress?.clear();
          await cli.close();
        }
      }),
    );
}
