import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, open, rm, stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { ConnectorError } from '../errors.js';
import { rejectFilePath } from '../sources/reject-file.js';
import type { ScheduleConfig } from './config.js';

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
 * Run an export command: an argument list, never a shell; killed after
 * timeout_ms; a non-zero exit or a missing output is an error with the tail
 * of stderr in its context. Stdout goes straight to a temp file, so large
 * exports are never held in memory.
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
    const { code, signal, stderr, spawnError } = await run(program, args, s, stdout, opts.signal);
    const context = { command: program, exit_code: code, signal, stderr };
    if (spawnError) {
      throw new ConnectorError('COMMAND_FAILED', `cannot start export command ${program}`, {
        action: 'retry',
        cause: spawnError,
        context,
      });
    }
    if (signal !== null) {
      const timedOut = Date.now() - started >= s.timeout_ms;
      throw new ConnectorError(
        timedOut ? 'COMMAND_TIMEOUT' : 'COMMAND_FAILED',
        timedOut ? `export command ran over ${s.timeout_ms} ms and was killed` : `export command ended by ${signal}`,
        { action: 'retry', context },
      );
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
}

function run(
  program: string,
  args: string[],
  s: CommandSchedule,
  stdout: 'ignore' | number,
  signal: AbortSignal | undefined,
): Promise<Ended> {
  return new Promise((done) => {
    const child = spawn(program, args, {
      shell: false,
      cwd: s.cwd,
      stdio: ['ignore', stdout, 'pipe'],
      timeout: s.timeout_ms,
      killSignal: 'SIGKILL',
      ...(signal ? { signal } : {}),
    });
    let err = Buffer.alloc(0);
    child.stderr?.on('data', (chunk: Buffer) => {
      // Keep the tail: the last lines usually say what went wrong.
      err = Buffer.concat([err, chunk]);
      if (err.length > s.max_stderr_bytes) err = err.subarray(err.length - s.max_stderr_bytes);
    });
    let spawnError: Error | undefined;
    child.on('error', (e) => (spawnError = e));
    child.on('close', (code, sig) => {
      const stderr = err.toString('utf8').trim();
      done({ code, signal: sig, stderr, ...(spawnError ? { spawnError } : {}) });
    });
  });
}
