import type { Command } from 'commander';
import { ConfigError, formatIssue } from '../../config/errors.js';
import { resolveKeyDetailed } from '../../config/key.js';
import { ConnectorError } from '../../errors.js';
import { globalOptions, loadConfigFor, runAction } from '../context.js';
import { ExitCode } from '../exit-codes.js';

interface ValidateOptions {
  keys?: boolean;
  json?: boolean;
}

/**
 * `validate`: check the configuration without touching the network (exit 78
 * when it is bad), and what on this machine would make the service useless
 * (a key file others can read, a watch folder that is not there). It is the
 * unit's ExecStartPre.
 */
export function register(program: Command): void {
  program
    .command('validate')
    .description(
      'check connector.yaml and conf.d/*.yaml, key file permissions and watch folders, without touching the network; exit 78 when the service could not work',
    )
    .option('--keys', 'also check that every dataset key can be read from its source (local only, nothing is sent)')
    .option('--json', 'print the result as one JSON object')
    .action(
      runAction(async (opts: ValidateOptions, cmd: Command) => {
        const path = globalOptions(cmd).config;
        let config;
        try {
          config = await loadConfigFor(cmd, { local: true });
        } catch (err) {
          if (!(err instanceof ConfigError) || !opts.json) throw err;
          process.stdout.write(`${JSON.stringify({ ok: false, config: path, issues: err.issues })}\n`);
          return ExitCode.CONFIG;
        }
        const keyProblems: { dataset: string; code: string; message: string }[] = [];
        const keyWarnings: { dataset: string; message: string }[] = [];
        if (opts.keys) {
          for (const ds of Object.values(config.datasets)) {
            try {
              const r = await resolveKeyDetailed(ds.api.key);
              for (const w of r.warnings) keyWarnings.push({ dataset: ds.name, message: w });
            } catch (err) {
              if (!(err instanceof ConnectorError)) throw err;
              keyProblems.push({ dataset: ds.name, code: err.code, message: err.message });
            }
          }
        }
        const names = Object.keys(config.datasets);
        if (opts.json) {
          process.stdout.write(
            `${JSON.stringify({ ok: keyProblems.length === 0, config: path, files: config.files, datasets: names, warnings: config.warnings, keyProblems, keyWarnings })}\n`,
          );
        } else {
          for (const w of config.warnings) process.stderr.write(`warning: ${formatIssue(w)}\n`);
          for (const w of keyWarnings) process.stderr.write(`warning: dataset ${w.dataset}: ${w.message}\n`);
          for (const p of keyProblems) process.stderr.write(`error [${p.code}]: dataset ${p.dataset}: ${p.message}\n`);
          if (keyProblems.length === 0) {
            process.stdout.write(`configuration OK: ${names.length} dataset${names.length === 1 ? '' : 's'} (${names.join(', ')}) from ${config.files.join(', ')}\n`);
          }
        }
        return keyProblems.length === 0 ? ExitCode.OK : ExitCode.CONFIG;
      }),
    );
}
