import { defineConfig } from 'vitest/config';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));

/**
 * `npm test` runs the fast project with --no-isolate --maxWorkers=2: a fresh process per file cost ~0.75 s of CPU
 * each (146 files), and vitest's default on 2 cores is one worker while most files wait on HTTP, SQLite and the
 * disk as much as they compute. The fast files hold no state between files (each makes its own temp dirs,
 * emulator, state db and clock; the module-global secret registry is emptied per file by
 * test/reset-secrets-setup.ts), so they share their workers' module cache. (Isolation is a pool option, one for
 * both projects in vitest 3.2: a project's `isolate` or `poolOptions.forks.isolate` is not read by the forks pool,
 * which takes it from the root config only (measured: a file still got a fresh registry). So the slow project,
 * and `npm run test:all`, keep a process per file.)
 *
 * The slow project: what starts processes or kills them. A test that runs the
 * CLI as a child process is named `*.cli.test.ts`; one that starts other
 * node processes `*.child-process.test.ts`; one that is slow for another
 * reason `*.slow.test.ts`. The crash suite and the end-to-end suite are slow
 * by folder. Everything else (pure units, emulator scenarios, the daemon
 * in-process) is the fast project, `npm test`.
 */
const SLOW = [
  'test/crash/**/*.test.ts',
  'test/e2e/**/*.test.ts',
  'test/**/*.slow.test.ts',
  'test/**/*.cli.test.ts',
  'test/**/*.child-process.test.ts',
  // Several processes racing for one state db or one dataset lock.
  'test/snapshot/migrate-race.test.ts',
  'test/sync/process-lock.test.ts',
  'test/sync/process-lock-boot.test.ts',
  'test/sync/cli-commands.test.ts',
];

export default defineConfig({
  root,
  test: {
    exclude: ['test/bench/**', 'node_modules/**'],
    // One TMPDIR for the run (global-setup.ts guards a second call); the slow project also builds dist/ (build-dist.ts).
    globalSetup: ['test/global-setup.ts'],
    setupFiles: ['test/fast-check-setup.ts', 'test/reset-secrets-setup.ts'],
    pool: 'forks',
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // .ci/run reads the totals from this file; vitest's own summary is for people.
    reporters: ['default', ['json', { outputFile: 'node_modules/.cache/vitest-results.json' }]],
    projects: [
      {
        extends: true,
        test: {
          name: 'fast',
          include: ['test/**/*.test.ts'],
          exclude: ['test/bench/**', 'node_modules/**', ...SLOW],
        },
      },
      { extends: true, test: { name: 'slow', include: SLOW, globalSetup: ['test/global-setup.ts', 'test/build-dist.ts'] } },
    ],
  },
});
