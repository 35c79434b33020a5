import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, open, rm, stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { ConnectorError } from '../errors.js';
import { rejectFilePath } from '../sources/reject-file.js';
import { COMMAND_BASE_ENV, type ScheduleConfig } from '../config/schedules.js';

/** A `command` schedule's settings. */
export type CommandSchedule = Extract<ScheduleConfig, { type: 'command' }>;

/** What an export command produced. */
export interface CommandOutput {
  /** The file to sync: the command's output_file, or its stdout saved to a temp file. */
  path: string;
  /** Removes the temp file of stdout (a no-op for output_file). */
  cleanup(): Promise<void>;
  /** The tail of standard error, at most max_stderr_bytes (for the log). */
  stderr: string;
  durationMs: number;
}

/** Options of runExportCommand. */
export interface RunCommandOptions {
  /** Folder for the temp file that holds stdout. */
  tmpDir: string;
  /** Extension of the temp file (the source type, e.g. "csv"). */
  extension: string;
  signal?: AbortSignal;
}

/**
 * Run an export command: an argument list, never a shell, with a minimal
 * environment (commandEnv); killed with its
 * whole process group after timeout_ms or when `signal` aborts; a non-zero
 * exit or a missing output is an error with the tail of stderr in its
 * context. Stdout goes straight to a temp file, so large exports are never
 * held in memory.
 */
export async function runExportCommand(s: CommandSchedule, opts: RunCommandOptions): Promise<CommandOutput> {
  const [program, ...args] = s.command as [string, ...string[]];
  const started = Date.now();
  let outPath: string | undefined;
  let stdout: 'ignore' | number = 'ignore';
  let fh: Awaited<ReturnType<typeof open>> | undefined;
  if (s.output_file === undefined) {
    await mkdir(opts.tmpDir, { recursive: true, mode: 0o700 });
    outPath = join(opts.tmpDir, `export-${randomBytes(6).toString('hex')}.${opts.extension}`);
    fh = await open(outPath, 'w', 0o600);
    stdout = fh.fd;
  }
  const cleanup = async () => {
    // The read may have written a reject file beside the temp output.
    if (outPath) await Promise.all([rm(outPath, { force: true }), rm(rejectFilePath(outPath), { force: true })]);
  };
  try {
    const { code, signal, stderr, spawnError, killed } = await run(program, args, s, stdout, opts.signal);
    const context = { command: program, exit_code: code, signal, stderr };
    if (spawnError) {
      throw new ConnectorError('COMMAND_FAILED', `cannot start export command ${program}`, {
        action: 'retry',
        cause: spawnError,
        context,
      });
    }
    if (killed === 'timeout') {
      throw new ConnectorError('COMMAND_TIMEOUT', `export command ran over ${s.timeout_ms} ms and was killed`, { action: 'retry', context });
    }
    if (killed === 'abort') {
      throw new ConnectorError('COMMAND_CANCELLED', 'export command killed: the daemon is stopping', { action: 'retry', context });
    }
    if (signal !== null) {
      throw new ConnectorError('COMMAND_FAILED', `export command ended by ${signal}`, { action: 'retry', context });
    }
    if (code !== 0) {
      throw new ConnectorError('COMMAND_FAILED', `export command exited with ${code}`, { action: 'retry', context });
    }
    const path = outPath ?? resolve(s.cwd ?? '.', s.output_file!);
    if (!(await stat(path).catch(() => undefined))?.isFile()) {
      throw new ConnectorError('COMMAND_NO_OUTPUT', `export command left no file at ${path}`, {
        action: 'retry',
        context: { ...context, file: path },
      });
    }
    return { path, cleanup, stderr, durationMs: Date.now() - started };
  } catch (err) {
    await fh?.close().catch(() => undefined);
    fh = undefined;
    await cleanup();
    throw err;
  } finally {
    await fh?.close();
  }
}

interface Ended {
  code: number | null;
  signal: NodeJS.Signals | null;
  stderr: string;
  spawnError?: Error;
  /** We killed it: it ran over timeout_ms, or the daemon stopped. */
  killed?: 'timeout' | 'abort';
}

/** A minimal environment: a key given to the daemon through env: must not reach the command. */
export function commandEnv(s: CommandSchedule, from: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const name of COMMAND_BASE_ENV) if (from[name] !== undefined) env[name] = from[name];
  return { ...env, ...s.env };
}

/** After the command exits, how long its pipes may stay open (held by a process it left behind). */
const PIPE_GRACE_MS = 500;

function run(
  program: string,
  args: string[],
  s: CommandSchedule,
  stdout: 'ignore' | number,
  signal: AbortSignal | undefined,
): Promise<Ended> {
  return new Promise((done) => {
    // Its own process group (detached), so a kill reaches every process it started.
    const child = spawn(program, args, { shell: false, cwd: s.cwd, env: commandEnv(s), stdio: ['ignore', stdout, 'pipe'], detached: true });
    let err = Buffer.alloc(0);
    child.stderr?.on('data', (chunk: Buffer) => {
      // Keep the tail: the last lines usually say what went wrong.
      err = Buffer.concat([err, chunk]);
      if (err.length > s.max_stderr_bytes) err = err.subarray(err.length - s.max_stderr_bytes);
    });
    let killed: Ended['killed'];
    let spawnError: Error | undefined;
    let exit: { code: number | null; sig: NodeJS.Signals | null } | undefined;
    let grace: NodeJS.Timeout | undefined;
    const killGroup = () => {
      if (child.pid === undefined) return;
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        // The group is already gone.
      }
    };
    const kill = (why: 'timeout' | 'abort') => {
      killed ??= why;
      killGroup();
    };
    const timer = setTimeout(() => kill('timeout'), s.timeout_ms);
    const onAbort = () => kill('abort');
    if (signal?.aborted) onAbort();
    else signal?.addEventListener('abort', onAbort, { once: true });
    let finished = false;
    const finish = () => {
      if (finished) return;
      finished = true;
      clearTimeout(timer);
      clearTimeout(grace);
      signal?.removeEventListener('abort', onAbort);
      child.stderr?.destroy();
      const stderr = err.toString('utf8').trim();
      done({
        code: exit?.code ?? null,
        signal: exit?.sig ?? null,
        stderr,
        ...(spawnError ? { spawnError } : {}),
        ...(killed ? { killed } : {}),
      });
    };
    child.on('error', (e) => {
      spawnError = e;
      if (child.pid === undefined) finish();
    });
    child.on('exit', (code, sig) => {
      exit = { code, sig };
      // A process it left behind may hold stderr open, and 'close' never comes: kill the rest and stop waiting.
      grace = setTimeout(() => {
        killGroup();
        finish();
      }, PIPE_GRACE_MS);
    });
    child.on('close', finish);
  });
}
