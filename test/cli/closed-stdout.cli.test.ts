import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../..', import.meta.url));

/** Run the built CLI with its stdout's reader gone before it writes (`... | head -0`): its exit code and stderr. */
function withClosedStdout(args: string[]): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['dist/cli/main.js', ...args], { cwd: root, env: { PATH: process.env.PATH }, stdio: ['ignore', 'pipe', 'pipe'] });
    // The read end closes at once: the node child takes far longer to start than this, so its first write meets EPIPE.
    child.stdout.destroy();
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += String(d)));
    child.on('close', (code) => resolve({ code, stderr }));
  });
}

// Review of #13: `status ... | head -0` ended with an EPIPE stack trace; a closed stdout ends any command quietly.
describe('a command whose stdout is closed by its reader', () => {
  it.each([[['--help']], [['schema']]])('%j ends quietly: exit 0, nothing on stderr', async (args) => {
    const r = await withClosedStdout(args);
    expect(r.stderr).not.toMatch(/EPIPE|Unhandled/);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
  });
});
