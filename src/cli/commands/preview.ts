import { join } from 'node:path';
import type { Command } from 'commander';
import { unknownDataset } from '../../config/errors.js';
import { loadConfigFor, runAction } from '../context.js';
import { ExitCode } from '../exit-codes.js';
import { exitWhenStdoutCloses } from '../terminal-text.js';

import { feedView, readerMapping } from '../../feeds/view.js';
import { fieldsOf } from '../../config/feed-fields.js';
import { commandColumnName } from '../../feeds/merge-changes.js';
import { openCurrentStateDb } from '../../snapshot/db.js';

interface PreviewOptions {
  dataset: string;
  file: string;
  json?: boolean;
  limit: string;
  feed?: string;
}

/**
 * `preview --dataset D --file F`: read an export through the dataset's source
 * and mapping and show the mapped records and every row error; sends nothing.
 * Every row is mapped (bad rows do not stop the preview); the verdict under
 * the dataset's real on_row_errors policy is printed at the end.
 */
export function register(program: Command): void {
  program
    .command('preview')
    .description("read an export through a dataset's source and mapping; print mapped records, every row error and counts (sends nothing)")
    .requiredOption('--dataset <name>', 'dataset name from the configuration')
    .requiredOption('--file <path>', 'the export file to read')
    .option('--feed <name>', "the feed whose source and mapping read the file (issue 13); default: the dataset's full feed")
    .option('--json', 'print every record and row error as JSON lines, then a summary line')
    .option('--limit <n>', 'records shown in the table', '20')
    .action(
      runAction(async (opts: PreviewOptions, cmd: Command) => {
        const config = await loadConfigFor(cmd);
        const configured = config.datasets[opts.dataset];
        if (!configured) throw unknownDataset(opts.dataset, Object.keys(config.datasets));
        const ds = feedView(configured, opts.feed);
        exitWhenStdoutCloses();
        const limit = Math.max(0, Number.parseInt(opts.limit, 10) || 0);
        const { previewExport } = await import('../preview-report.js');
        const feed = ds.feeds?.[ds.feed];
        const changes =
          feed?.role === 'changes' && feed.commands
            ? { commands: feed.commands, column: commandColumnName(feed.commands), hasRequired: fieldsOf(feed).includes('display_name') && fieldsOf(feed).includes('api_value') }
            : undefined;
        // A change list's upsert of a record the snapshot lacks creates it (and needs its fields), as plan and sync judge it: read, never made or changed.
        const db = changes ? openCurrentStateDb(join(config.state_dir, 'state.db')) : undefined;
        try {
          const exists = db ? (id: string) => db.snapshot(ds.name).get(id) !== null : () => false;
          const { rejected } = await previewExport(opts.file, ds.source, readerMapping(ds, exists), process.stdout, { limit, json: opts.json, ...(changes ? { changes } : {}) });
          return rejected ? ExitCode.FAILURE : ExitCode.OK;
        } finally {
          db?.close();
        }
      }),
    );
}
