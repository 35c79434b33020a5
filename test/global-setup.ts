import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** Build dist/ once, so tests that start the real CLI as a child process run what ships. */
export default function setup(): void {
  // Each project of test/vitest.config.ts names this file; one run builds once.
  if (process.env.DC_TEST_BUILT === String(process.pid)) return;
  process.env.DC_TEST_BUILT = String(process.pid);
  const root = fileURLToPath(new URL('..', import.meta.url));
  execFileSync(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.json'], {
    cwd: root,
    stdio: 'inherit',
  });
}
