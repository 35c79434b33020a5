import type { Command } from 'commander';
import type { Finding } from '../doctor/checks.js';
import { loadConfigFor, runAction } from '../context.js';
import { unknownDataset } from '../../config/errors.js';
import { ExitCode } from '../exit-codes.js';

interface DoctorOptions {
  dataset?: string;
  json?: boolean;
}

const MARK: Record<Finding['status'], string> = { ok: 'ok  ', warn: 'WARN', fail: 'FAIL', info: 'note' };

/** `doctor`: check each dataset's key, reachability, roles and folders, and that the state db is private (reads only; sends no write). */
export function register(program: Command): void {
  program
    .command('doctor')
    .description("check each dataset's key, API switch, reachability (read-only requests) and folder permissions, and warn when others can read the state db; exit 1 when something is wrong")
    .option('-d, --dataset <name>', 'check only this dataset')
    .option('--json', 'print one JSON object per finding')
    .action(
      runAction(async (opts: DoctorOptions, cmd: Command) => {
        const config = await loadConfigFor(cmd);
        const { checkDataset } = await import('../doctor/checks.js');
        const datasets = Object.values(config.datasets).filter((d) => opts.dataset === undefined || d.name === opts.dataset);
        if (datasets.length === 0) throw unknownDataset(opts.dataset ?? '', Object.keys(config.datasets));
        const print = (findings: Finding[]) => {
          for (const f of findings) {
            process.stdout.write(opts.json ? `${JSON.stringify(f)}\n` : `${f.dataset ?? '*'}  ${MARK[f.status]}  ${f.check.padEnd(8)}  ${f.message}\n`);
          }
        };
        // Shared by every dataset: the state db and plans (warnings, or a failure when no start could create it).
        const { checkStateFiles, openExistingStateDb } = await import('../doctor/state-files.js');
        print(await checkStateFiles(config.state_dir));
        const state = openExistingStateDb(config.state_dir);
        print(state.findings);
        let failed = state.findings.some((f) => f.status === 'fail');
        try {
          for (const ds of datasets) {
            const findings = await checkDataset(ds, process.env, state.db?.rateWindow);
            failed ||= findings.some((f) => f.status === 'fail');
            print(findings);
          }
        } finally {
          state.db?.close();
        }
        return failed ? ExitCode.FAILURE : ExitCode.OK;
      }),
    );
}
