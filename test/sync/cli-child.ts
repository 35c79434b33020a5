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
