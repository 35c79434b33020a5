import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Give the run a temporary folder of its own (TMPDIR, which os.tmpdir() and the CLI children follow), removed at
 * the end, so that thousands of test state dirs do not pile up in /tmp. KEEP_TEST_TMP=1 keeps it to look into a failure.
 */
export default function setup(): () => void {
  // Each project of test/vitest.config.ts names this file; one run makes one TMPDIR.
  if (process.env.DC_TEST_TMP === String(process.pid)) return () => undefined;
  process.env.DC_TEST_TMP = String(process.pid);
  const runTmp = mkdtempSync(join(tmpdir(), 'dc-test-run-'));
  // As /tmp is: tests that run the daemon as another user (install, unreadable files) must reach their own dirs.
  chmodSync(runTmp, 0o1777);
  process.env['TMPDIR'] = runTmp;
  return () => {
    if (process.env['KEEP_TEST_TMP'] === '1') {
      process.stderr.write(`test temporary files kept in ${runTmp}\n`);
      return;
    }
    rmSync(runTmp, { recursive: true, force: true, maxRetries: 3 });
  };
}
