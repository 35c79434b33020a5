import type { Command } from 'commander';
import { commandLogger, humanOutput, loadConfigFor, processStreams, runAction } from '../context.js';
import { ExitCode } from '../exit-codes.js';

/** What a person can do with a held change: the engine method of the same name. */
export type HeldAction = 'approve' | 'discard';

interface HeldActionOptions {
  json?: boolean;
  yes?: boolean;
}

/**
 * Register `approve <dataset>` or `discard <dataset>`: run the engine's action
 * on the held change under the dataset lock and say what it did (one line on a
 * terminal, one JSON object when piped or with --json); 0 when published or
 * discarded, 1 when not (expired, left staged), and for a thrown error the
 * code reportError gives (75 when the API cannot be reached). On a terminal
 * `approve` first shows what it will publish (counts, the guard, a few
 * records) and asks; --yes skips the question. Piped, it does not ask.
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
      const { cliEngine } = await import('../../sync/cli-engine.js');
      const cli = await cliEngine(config, logger, [name], action);
      try {
        const ds = cli.dataset(name);
        if (action === 'approve' && human && !opts.yes && io.stdin.isTTY) {
          const { heldPreviewLines } = await import('../../sync/held-preview.js');
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
        const r = action === 'approve' ? await cli.engine.approve(ds) : await cli.engine.discard(ds);
        progress?.clear();
        io.stdout.write(human ? `${name}: ${r.action}${r.version === null ? '' : ` (version ${r.version})`}: ${r.message}\n` : `${JSON.stringify(r)}\n`);
        return r.action === 'published' || r.action === 'discarded' ? 0 : 1;
      } finally {
        progress?.clear();
        await cli.close();
      }
    }),
  );
}
