import type { Command } from 'commander';
import { ExitCode } from '../exit-codes.js';
import { humanOutput, loadConfigFor, loggerFor, runAction } from '../context.js';

/** `why <dataset> <record_id> [--json]`: where each published value of a record came from (offline: the state database only). */
export function register(program: Command): void {
  program
    .command('why')
    .description('where each field of a published record came from (file, line, sync, version, when) and its earlier values; for a deleted record which export deleted it; offline')
    .argument('<dataset>', 'dataset name from the configuration')
    .argument('<record_id>', 'the record')
    .option('--json', 'print one JSON object (the default when stdout is not a terminal)')
    .action(
      runAction(async (name: string, recordId: string, opts: { json?: boolean }, cmd: Command) => {
        const config = await loadConfigFor(cmd);
        const { cliEngine } = await import('../engine.js');
        const { why, whyLines } = await import('../../history/why.js');
        const cli = await cliEngine(config, loggerFor(cmd, config, process.stderr), []);
        try {
          const ds = cli.dataset(name);
          const report = why(cli.db.conn, ds.name, recordId);
          process.stdout.write(humanOutput(opts) ? `${whyLines(report).join('\n')}\n` : `${JSON.stringify(report)}\n`);
          if (report.status !== 'unknown') return ExitCode.OK;
          process.stderr.write(`unknown record [RECORD_UNKNOWN] (dataset ${ds.name}): ${recordId} is neither published nor in the history kept\n`);
          process.stderr.write('  check the record_id (ids are case-sensitive); a record deleted before the oldest version kept is no longer known\n');
          return ExitCode.FAILURE;
        } finally {
          await cli.close();
        }
      }),
    );
}
