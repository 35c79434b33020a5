import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/**
 * Build dist/ once before the slow project, so tests that start the real CLI as a child process run what ships.
 * The fast project runs src/ in process and never needs it (a build is ~23 s of CPU).
 */
export default function setup(): void {
  if (process.env.DC_TEST_BUILT === String(process.pid)) return;
  process.env.DC_TEST_BUILT = String(process.pid);
  execFileSync(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.json'], {
    cwd: fileURLToPath(new URL('..', import.meta.url)),
    stdio: 'inherit',
  });
}
