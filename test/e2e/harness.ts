import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startEmulator, type RunningEmulator } from '../../src/emulator/server.js';
import { events, scenario as baseScenario, type LogLine, type Scenario as BaseScenario } from '../daemon/scenario.js';

export { emulatorFixture, exportCsv, freePort, HEADER, type LogLine } from '../daemon/scenario.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const MAIN = join(ROOT, 'dist/cli/main.js');

/** The real CLI running as a child process, with its log lines parsed. */
export class DaemonProcess {
  readonly lines: LogLine[] = [];
  readonly exited: Promise<number | null>;
  readonly child: ChildProcess;
  #waiters: Array<() => void> = [];
  #stderr = '';

  constructor(args: string[], env: NodeJS.ProcessEnv, as: { uid?: number; gid?: number } = {}) {
    this.child = spawn(process.execPath, [MAIN, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'], ...as });
    let buf = '';
    this.child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      buf += chunk;
      let i: number;
      while ((i = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, i);
        buf = buf.slice(i + 1);
        try {
          this.lines.push(JSON.parse(line) as LogLine);
        } catch {
          this.lines.push({ msg: line });
        }
      }
      this.#waiters.splice(0).forEach((w) => w());
    });
    this.child.stderr!.setEncoding('utf8').on('data', (c: string) => (this.#stderr += c));
    this.exited = new Promise((resolve) => this.child.on('exit', (code) => {
      this.#waiters.splice(0).forEach((w) => w());
      resolve(code);
    }));
  }

  /** Lines with this event (and matching fields). */
  events(name: string, match: Record<string, unknown> = {}): LogLine[] {
    return events(this.lines, name, match);
  }

  /** Wait until `count` lines with this event (and fields) were logged. */
  async waitFor(name: string, match: Record<string, unknown> = {}, count = 1, timeoutMs = 20_000): Promise<LogLine> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.events(name, match);
      if (found.length >= count) return found[count - 1]!;
      if (this.child.exitCode !== null || Date.now() > deadline) {
        throw new Error(
          `no ${count}× ${name} ${JSON.stringify(match)} (exit ${this.child.exitCode}); stderr: ${this.#stderr}\n` +
            this.lines.map((l) => JSON.stringify(l)).join('\n'),
        );
      }
      await new Promise<void>((r) => {
        const t = setTimeout(r, 200);
        this.#waiters.push(() => {
          clearTimeout(t);
          r();
        });
      });
    }
  }

  /** Send a signal and wait for the exit code. */
  async stop(signal: NodeJS.Signals = 'SIGTERM'): Promise<number | null> {
    if (this.child.exitCode === null) this.child.kill(signal);
    return this.exited;
  }
}

/** A scenario of the end-to-end tests: the shared one, plus `run` of the built CLI on its config. */
export interface Scenario extends BaseScenario {
  /** Start `run` on this scenario's config, as another user when `as` says so (the scenario's folder must be theirs). */
  start(as?: { uid?: number; gid?: number }): DaemonProcess;
}

/** Set up a scenario: a dataset and its key on `emu`; waits long enough for a child process on a loaded machine. */
export async function scenario(emu: RunningEmulator, datasetId: string): Promise<Scenario> {
  const s = await baseScenario(emu, datasetId, {
    prefix: 'dc-e2e-',
    keyEnv: `E2E_KEY_${datasetId.replace(/[^A-Za-z0-9]/g, '_').toUpperCase()}`,
    retry: { max_attempts: 3, base_delay_ms: 50, max_delay_ms: 200 },
    settleMs: 250,
    pollMs: 50,
    defaults: { log: { level: 'info' } },
  });
  return { ...s, start: (as) => new DaemonProcess(['run', '--config', s.configPath], s.env, as) };
}

/** Start the emulator for a test file. */
export function emulator(): Promise<RunningEmulator> {
  return startEmulator({ port: 0 });
}
