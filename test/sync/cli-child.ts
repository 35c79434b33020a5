import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../..', import.meta.url));

/** How a child CLI run ended. */
export interface ChildRun {
  status: number | null;
  signal: string | null;
  stdout: string;
  stderr: string;
}

/**
 * Run the built CLI (dist/cli/main.js, built by the vitest globalSetup) as a
 * child process without blocking this one, so an emulator in this process
 * answers it meanwhile. Killed after `timeoutMs` (60 s).
 */
export function runCli(args: string[], env: Record<string, string> = {}, timeoutMs = 60_000): Promise<ChildRun> {
  const child = spawn(process.execPath, [join(root, 'dist/cli/main.js'), ...args], { env: { PATH: process.env.PATH ?? '', ...env } });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const timer = setTimeout(() => child.kill('SIGTERM'), timeoutMs);
  return new Promise((resolve) =>
    child.on('close', (status, signal) => {
      clearTimeout(timer);
      resolve({ status, signal, stdout, stderr });
    }),
  );
}

/** A word quoted for sh. */
function shQuote(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

/**
 * Run the built CLI on a pseudo-terminal (util-linux `script`), as a person at
 * a terminal does: stdin, stdout and stderr are a TTY, whatever the test
 * runner's own streams are. `input` is typed into it (answers to questions).
 * The terminal's output (stdout and stderr together) is in `stdout`, with
 * line ends as the terminal shows them turned back into \n.
 */
export function runCliTty(args: string[], env: Record<string, string> = {}, input = ''): Promise<ChildRun> {
  const command = [process.execPath, join(root, 'dist/cli/main.js'), ...args].map(shQuote).join(' ');
  const child = spawn('script', ['-q', '-e', '-f', '-c', command, '/dev/null'], {
    env: { PATH: process.env.PATH ?? '', TERM: 'dumb', ...env },
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  // Typed once the program waits for it: script passes what it reads to the terminal.
  if (input) child.stdin.write(input);
  const timer = setTimeout(() => child.kill('SIGTERM'), 60_000);
  return new Promise((resolve) =>
    child.on('close', (status, signal) => {
      clearTimeout(timer);
      resolve({ status, signal, stdout: stdout.replace(/\r\n/g, '\n'), stderr });
    }),
  );
}
