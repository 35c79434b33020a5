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
  a2aPort?: number;
  a2aKey?: string;
  a2aMode: string[];
}

function collectMode(value: string, previous: string[]): string[] {
  return [...previous, value];
}

function port(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new InvalidArgumentError('expected a port number 0–65535');
  return n;
}

/** `emulator`: run the local emulator of the dataset API (and of the call API) until SIGINT or SIGTERM. */
export function register(program: Command): void {
  program
    .command('emulator')
    .description(
      'run a local emulator of the Business Dataset Editing API, and with --a2a-port of the call API (for trying a configuration; not the real service)',
    )
    .option('-p, --port <port>', 'port to listen on (0 picks a free one)', port, 8787)
    .option('--host <address>', 'address to listen on', '127.0.0.1')
    .option('-d, --dataset <id>', 'create this dataset')
    .option('-k, --key <key>', 'dataset key to accept for --dataset (tbd_live_…); made up when absent')
    .option('--roles <list>', 'roles of that key, comma-separated: read,write,replace,publish (default all)')
    .option('--legacy', 'make that key a legacy key (every role, always publishes, A12)')
    .option('--seed <file>', 'YAML or JSON seed with datasets, keys and records')
    .option('--a2a-port <port>', 'also run the agent-to-agent call emulator on this port (0 picks a free one)', port)
    .option('--a2a-key <key>', 'A2A key the call emulator accepts; made up when absent')
    .option(
      '--a2a-mode <name>',
      'call emulator server behaviour (repeatable): lag-after-answer, refused-resubscribe, errors-as-sse, late-first-event, final-without-close, … (the list: GET {a2a}/__emulator/modes)',
      collectMode,
      [],
    )
    .action(
      runAction(async (opts: EmulatorOptions) => {
        if (!opts.dataset && !opts.seed && opts.a2aPort === undefined) {
          process.stderr.write('error: give --dataset <id>, --seed <file> and/or --a2a-port <port>\n');
          return ExitCode.USAGE;
        }
        const { isModePreset, MODE_PRESETS } = await import('../../emulator/a2a/modes.js');
        const unknown = opts.a2aMode.filter((m) => !isModePreset(m));
        if (unknown.length > 0) {
          process.stderr.write(`error: unknown --a2a-mode ${unknown.join(', ')}; known: ${Object.keys(MODE_PRESETS).join(', ')}\n`);
          return ExitCode.USAGE;
        }
        if (opts.a2aMode.length > 0 && opts.a2aPort === undefined) {
          process.stderr.write('error: --a2a-mode needs --a2a-port\n');
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
        const out = process.stdout;
        const running = opts.dataset || opts.seed ? await startEmulator({ port: opts.port, host: opts.host, seed: mergeEmulatorSeeds(...seeds) }) : undefined;
        if (running) {
          out.write(`emulator listening on ${running.url}\n`);
          for (const id of running.emulator.datasets.keys()) out.write(`  dataset ${id}: ${running.url}/api/v1/business-datasets/${id}\n`);
          if (madeUpKey) out.write(`  key for ${opts.dataset} (made up, emulator only): ${madeUpKey}\n`);
        }
        const a2a = opts.a2aPort === undefined ? undefined : await startCallEmulator(opts, out);
        out.write('press Ctrl-C to stop\n');
        const signal = await new Promise<NodeJS.Signals>((resolve) => {
          process.once('SIGINT', () => resolve('SIGINT'));
          process.once('SIGTERM', () => resolve('SIGTERM'));
        });
        await Promise.all([running?.close(), a2a?.close()]);
        out.write(`emulator stopped (${signal})\n`);
        return ExitCode.OK;
      }),
    );
}

/** The call emulator of `--a2a-port`: its address, key and modes, printed for a person. */
async function startCallEmulator(opts: EmulatorOptions, out: NodeJS.WritableStream): Promise<{ close(): Promise<void> }> {
  const { randomBytes } = await import('node:crypto');
  const { startA2aEmulator, A2A_ADMIN_PATH } = await import('../../emulator/a2a/server.js');
  const key = opts.a2aKey ?? `a2a_emulator_${randomBytes(8).toString('hex')}`;
  const presets = opts.a2aMode as import('../../emulator/a2a/modes.js').ModePresetName[];
  const a2a = await startA2aEmulator({ port: opts.a2aPort ?? 0, host: opts.host, keys: { [key]: 'emulator' }, presets, stepDelayMs: 150 });
  out.write(`call emulator (A2A) listening on ${a2a.url}: no real call is placed\n`);
  if (!opts.a2aKey) out.write(`  A2A key (made up, emulator only): ${key}\n`);
  out.write(`  server behaviour: ${presets.length > 0 ? presets.join(', ') : 'document'}; switch with POST ${a2a.url}${A2A_ADMIN_PATH}/modes\n`);
  return a2a;
}
