import { stat } from 'node:fs/promises';
import { basename, resolve } from 'node:path';
import type { Logger } from 'pino';
import { ConnectorError } from '../errors.js';
import { feedView } from '../feeds/view.js';
import { runFanOutJob } from '../files/fan-out-job.js';
import { ExportTakers, type Taker } from '../snapshot/export-takers.js';
import type { SyncSummary } from '../sync/outcome.js';
import type { CliEngine } from './engine.js';
import type { Config } from '../config/schema.js';

/**
 * `sync --export E --file F`: what the daemon does with a file of a shared
 * export, by hand (the daemon down): every dataset taking it syncs it, one
 * after another, except those already done with this very file (the daemon's
 * record, both ways). The file is never moved. Returns the summaries of the
 * syncs run; a dataset done before is logged and left out.
 */
export async function syncExport(cli: CliEngine, config: Config, name: string, takers: readonly Taker[], file: string, opts: { publish?: false }, logger: Logger): Promise<SyncSummary[]> {
  const path = resolve(file);
  const st = await stat(path).catch((err: NodeJS.ErrnoException) => {
    throw new ConnectorError(err.code === 'ENOENT' ? 'FILE_NOT_FOUND' : 'FILE_UNREADABLE', `cannot read ${path}: ${err.code ?? err.message}`, { action: 'reject', context: { file: path } });
  });
  const count = new Map<string, number>();
  for (const t of takers) count.set(t.dataset, (count.get(t.dataset) ?? 0) + 1);
  const summaries: SyncSummary[] = [];
  const exp = config.exports[name]!;
  await runFanOutJob(
    name,
    exp,
    takers.map((t) => ({ ...t, view: feedView(cli.dataset(t.dataset), t.feed), tag: count.get(t.dataset)! > 1 ? `${t.dataset}-${t.feed}` : t.dataset })),
    { file: { path, name: basename(path), size: st.size, mtimeMs: st.mtimeMs }, origin: 'cli' },
    {
      engine: cli.engine,
      marks: new ExportTakers(cli.db.conn),
      logger: logger.child({ export: name }),
      health: { set: () => undefined, clear: () => undefined },
      timezone: config.timezone,
      clock: cli.clock,
      ...(opts.publish === false ? { publish: false as const } : {}),
      onSummary: (_dataset, s) => summaries.push(s),
    },
  );
  return summaries;
}
