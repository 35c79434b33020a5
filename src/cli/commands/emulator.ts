import { InvalidArgumentError, type Command } from 'commander';
import type { EmulatorSeed } from '../../emulator/index.js';
import { runAction } from '../context.js';
import { ExitCode } from '../exit-codes.js';

interface EmulatorOptions {
  port: number;
  host: string;
  dataset?: string;
  key?: string;
  roles?: string;
  legacy?: boolean;
  seed?: string;
}

function port(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new InvalidArgumentError('expected a port number 0–65535');
  return n;
}

/** `emulator`: run the local emulator of the dataset API until SIGINT or SIGTERM. */
export function register(program: Command): void {
  program
    .command('emulator')
    .description('run a local emulator of the Business Dataset Editing API (for trying a configuration; not the real service)')
    .option('-p, --port <port>', 'port to listen on (0 picks a free one)', port, 8787)
    .option('--host <address>', 'address to listen on', '127.0.0.1')
    .option('-d, --dataset <id>', 'create this dataset')
    .option('-k, --key <key>', 'dataset key to accept for --dataset (tbd_live_…); made up when absent')
    .option('--roles <list>', 'roles of that key, comma-separated: read,write,replace,publish (default all)')
    .option('--legacy', 'make that key a legacy key (every role, always publishes, A12)')
    .option('--seed <file>', 'YAML or JSON seed with datasets, keys and records')
    .action(
      runAction(async (opts: EmulatorOptions) => {
        if (!opts.dataset && !opts.seed) {
          process.stderr.write('error: give --dataset <id> and/or --seed <file>\n');
          return ExitCode.USAGE;
        }
        const { emulatorSeedFromArgs, generateDatasetKey, loadEmulatorSeed, mergeEmulatorSeeds, startEmulator } = await import('../../emulator/index.js');
        const seeds: EmulatorSeed[] = [];
        if (opts.seed) seeds.push(await loadEmulatorSeed(opts.seed));
        const madeUpKey = opts.dataset && !opts.key ? generateDatasetKey() : undefined;
        if (opts.dataset) {
          seeds.push(
            emulatorSeedFromArgs({
              dataset: opts.dataset,
              key: opts.key ?? (madeUpKey as string),
              ...(opts.roles ? { roles: opts.roles } : {}),
              legacy: opts.legacy ?? false,
            }),
          );
        }
        const running = await startEmulator({ port: opts.port, host: opts.host, seed: mergeEmulatorSeeds(...seeds) });
        const out = process.stdout;
        out.write(`emulator listening on ${running.url}\n`);
        for (const id of running.emulator.datasets.keys()) out.write(`  dataset ${id}: ${running.url}/api/v1/business-datasets/${id}\n`);
        if (madeUpKey) out.write(`  key for ${opts.dataset} (made up, emulator only): ${madeUpKey}\n`);
        out.write('press Ctrl-C to stop\n');
        const signal = await new Promise<NodeJS.Signals>((resolve) => {
          process.once('SIGINT', () => resolve('SIGINT'));
          process.once('SIGTERM', () => resolve('SIGTERM'));
        });
        await running.close();
        out.write(`emulator stopped (${signal})\n`);
        return ExitCode.OK;
      }),
    );
}
