import type { Command } from 'commander';
import type { HeldAction } from '../held-report.js';
import { commandLogger, humanOutput, loadConfigFor, onDataset, processStreams, runAction } from '../context.js';
import { ExitCode } from '../exit-codes.js';

export type { HeldAction };

interface HeldActionOptions {
  json?: boolean;
  yes?: boolean;
}

/**
 * Register `approve <dataset>` or `discard <dataset>`: run the engine's action
 * on the held change under the dataset lock and say what it did, with the
 * exit code of the README's table (held-report.ts): one line for a person on
 * a terminal, one JSON object when piped or with --json, and what to do on
 * stderr when it was not done. For a thrown error, the code reportError gives
 * (75 when the API cannot be reached or the daemon works on the dataset).
 * On a terminal `approve` first shows what it will publish (counts, the
 * guard, a few records) and asks; --yes skips the question. Piped, it does not ask.
 */
export function registerHeldAction(program: Command, action: HeldAction, description: string): void {
  const command = program
    .command(action)
    .description(description)
    .argument('<dataset>', 'dataset name from the configuration')
    .option('--json', 'print the result as one JSON object (the default when stdout is not a terminal)');
  if (action === 'approve') command.option('-y, --yes', 'publish without showing the change and asking (a terminal asks; a pipe never does)');
  command.action(
    runAction(async (name: string, opts: HeldActionOptions, cmd: Command) => {
      const io = processStreams();
      const config = await loadConfigFor(cmd);
      const human = humanOutput(opts, io);
      const { logger, progress } = await commandLogger(cmd, config, human, io, process.stderr);
      const { cliEngine } = await import('../engine.js');
      const { heldResultReport, nothingHeldReport, printHeldReport } = await import('../held-report.js');
      const cli = await cliEngine(config, logger, [name], action);
      try {
        const ds = cli.dataset(name);
        if (action === 'approve' && human && !opts.yes && io.stdin.isTTY) {
          const { heldPreviewLines } = await import('../../sync/executor/held-preview.js');
          const preview = cli.engine.heldPreview(ds);
          // Nothing held: the engine's approve says so in its own words.
          if (preview) {
            io.stdout.write(`${heldPreviewLines(preview).join('\n')}\n`);
            const { confirm } = await import('../../a2a/answer-sources.js');
            if (!(await confirm('Publish this change?', io.stdin, process.stdout))) {
              io.stdout.write(`${name}: not approved; nothing was published (the change stays held)\n`);
              return ExitCode.FAILURE;
            }
          }
        }
        let report;
        try {
          report = heldResultReport(name, await onDataset(name, () => (action === 'approve' ? cli.engine.approve(ds) : cli.engine.discard(ds))));
        } catch (err) {
          report = nothingHeldReport(action, name, err);
          if (!report) throw err;
        }
        progress?.clear();
        return printHeldReport(report, human, io.stdout, io.stderr);
      } finally {
        progress?.clear();
        await cli.close();
      }
    }),
  );
}
