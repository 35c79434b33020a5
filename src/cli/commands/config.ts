import type { Command } from 'commander';
import { formatIssue } from '../../config/errors.js';
import { globalOptions, loadConfigFor, runAction } from '../context.js';

/**
 * `config [--json]`: the configuration the connector runs with: conf.d merged,
 * defaults filled in, relative paths resolved, and where each key is read
 * from (credential, file, env). It never holds a key: keys are not in the
 * YAML, and nothing here reads one.
 */
export function register(program: Command): void {
  program
    .command('config')
    .description('print the effective configuration: conf.d merged, defaults filled in, paths resolved, key sources named (never a key)')
    .option('--json', 'print it as JSON')
    .action(
      runAction(async (opts: { json?: boolean }, cmd: Command) => {
        const config = await loadConfigFor(cmd);
        const { files, warnings, ...effective } = config;
        const datasets = Object.fromEntries(Object.entries(effective.datasets).map(([name, { name: _n, ...ds }]) => [name, ds]));
        const shown = { ...effective, datasets };
        if (opts.json) {
          process.stdout.write(`${JSON.stringify({ config: globalOptions(cmd).config, files, warnings, effective: shown })}\n`);
          return;
        }
        const { stringify } = await import('yaml');
        const head = [
          `# Effective configuration of dataset-connector, from ${files.join(', ')}`,
          '# (conf.d merged, defaults filled in, paths resolved; keys are never shown, only where they are read from)',
          ...warnings.map((w) => `# warning: ${formatIssue(w)}`),
        ];
        process.stdout.write(`${head.join('\n')}\n${stringify(shown, { lineWidth: 0 })}`);
      }),
    );
}
