import type { Command } from 'commander';
import { runAction } from '../context.js';
import { ExitCode } from '../exit-codes.js';
import { exitWhenStdoutCloses } from '../terminal-text.js';

interface InitOptions {
  file: string;
  sheet?: string;
  dataset?: string;
}

/** A dataset name (the schema's DATASET_NAME) from a file name: "Shop 1 items.csv" → "shop-1-items". */
function datasetFromFile(file: string): string {
  const base = file.split('/').pop()!.replace(/\.(csv|tsv|txt|xlsx|zip|gz)$/gi, '');
  const name = base.normalize('NFKC').toLowerCase().replace(/[^a-z0-9_-]+/g, '-').replace(/^[-_]+|-+$/g, '').slice(0, 64);
  return /^[a-z0-9]/.test(name) ? name : 'shop-1';
}

/**
 * `init --file F`: read an export and print a first configuration for it on
 * stdout (commented YAML that passes `validate`), then a preview of the
 * first records read with that configuration on stderr.
 */
export function register(program: Command): void {
  program
    .command('init')
    .description('read an export and print a first configuration for it (commented YAML, on stdout), then preview its first records with it (on stderr)')
    .requiredOption('--file <path>', 'an export file (CSV, .csv.gz, a .zip of one CSV, or XLSX)')
    .option('--sheet <name>', 'XLSX: the worksheet to map (default: the one that holds a table)')
    .option('--dataset <name>', 'the dataset name in the configuration (default: from the file name)')
    .action(
      runAction(async (opts: InitOptions) => {
        const { DATASET_NAME } = await import('../../config/schema.js');
        const dataset = opts.dataset ?? datasetFromFile(opts.file);
        if (!DATASET_NAME.test(dataset)) {
          process.stderr.write(`error: --dataset ${JSON.stringify(dataset)}: expected 1–64 of a-z 0-9 _ -, starting with a letter or digit\n`);
          return ExitCode.USAGE;
        }
        const { proposeConfig } = await import('../init/run.js');
        exitWhenStdoutCloses();
        return proposeConfig(opts.file, { dataset, ...(opts.sheet !== undefined ? { sheet: opts.sheet } : {}) }, process.stdout, process.stderr);
      }),
    );
}
