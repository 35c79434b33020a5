import { mkdtemp, readFile, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { hasCode } from '../../src/errors.js';
import { runExportCommand, type CommandSchedule } from '../../src/triggers/command.js';
import { scheduleConfigSchema } from '../../src/config/schedules.js';

const node = process.execPath;

function sched(command: string[], extra: Record<string, unknown> = {}): CommandSchedule {
  return scheduleConfigSchema.parse({ type: 'command', cron: '0 3 * * *', command, ...extra }) as CommandSchedule;
}

async function tmp() {
  return mkdtemp(join(tmpdir(), 'dc-cmd-'));
}

describe('export command', () => {
  it('saves stdout to a temp file, with arguments passed verbatim (no shell)', async () => {
    const dir = await tmp();
    const out = await runExportCommand(
      sched([node, '-e', 'process.stdout.write(process.argv.slice(1).join("|"))', '$HOME', 'a b;c']),
      { tmpDir: dir, extension: 'csv' },
    );
    expect(out.path.endsWith('.csv')).toBe(true);
    expect(await readFile(out.path, 'utf8')).toBe('$HOME|a b;c');
    await out.cleanup();
    expect(await stat(out.path).catch(() => 'gone')).toBe('gone');
  });

  it('passes only PATH, HOME, LANG, TZ… and the configured env, never the rest of the daemon\'s environment', async () => {
    const dir = await tmp();
    process.env.DC_TEST_DATASET_KEY = 'sk_live_COMMANDENVCANARY';
    try {
      const out = await runExportCommand(
        sched([node, '-e', 'process.stdout.write(JSON.stringify(process.env))'], { env: { POS_DB: '/srv/pos.db' } }),
        { tmpDir: dir, extension: 'csv' },
      );
      const env = JSON.parse(await readFile(out.path, 'utf8')) as Record<string, string>;
      await out.cleanup();
      expect(env.DC_TEST_DATASET_KEY).toBeUndefined();
      expect(env.POS_DB).toBe('/srv/pos.db');
      expect(env.PATH).toBe(process.env.PATH);
      expect(Object.keys(env).filter((k) => !['PATH', 'HOME', 'LANG', 'LC_ALL', 'LC_CTYPE', 'TZ', 'TMPDIR', 'POS_DB'].includes(k))).toEqual([]);
    } finally {
      delete process.env.DC_TEST_DATASET_KEY;
    }
  });

  it('reads the output file the command writes', async () => {
    const dir = await tmp();
    const out = await runExportCommand(
      sched([node, '-e', 'require("fs").writeFileSync("export.csv", "sku\\nA\\n")'], { cwd: dir, output_file: 'export.csv' }),
      { tmpDir: dir, extension: 'csv' },
    );
    expect(out.path).toBe(join(dir, 'export.csv'));
    await out.cleanup();
    expect(await readFile(out.path, 'utf8')).toBe('sku\nA\n');
  });

  it('fails on a non-zero exit, keeping the tail of stderr and removing the temp file', async () => {
    const dir = await tmp();
    const err = await runExportCommand(
      sched([node, '-e', 'process.stderr.write("x".repeat(100) + "database locked"); process.exit(3)'], {
        max_stderr_bytes: 20,
      }),
      { tmpDir: dir, extension: 'csv' },
    ).catch((e: unknown) => e);
    expect(hasCode(err, 'COMMAND_FAILED')).toBe(true);
    expect(hasCode(err, 'COMMAND_FAILED') && err.context).toMatchObject({ exit_code: 3, stderr: 'xxxxxdatabase locked' });
    const { readdir } = await import('node:fs/promises');
    expect(await readdir(dir)).toEqual([]);
  });

  it('kills a command that runs over timeout_ms', async () => {
    const dir = await tmp();
    const err = await runExportCommand(sched([node, '-e', 'setTimeout(() => {}, 60000)'], { timeout_ms: 200 }), {
      tmpDir: dir,
      extension: 'csv',
    }).catch((e: unknown) => e);
    expect(hasCode(err, 'COMMAND_TIMEOUT')).toBe(true);
  });

  it('kills the whole process group on timeout and on abort, even when a child holds stderr open', async () => {
    const dir = await tmp();
    const hang = (tag: string) => ['sh', '-c', `sleep 1000 & echo $! > ${join(dir, tag)}; wait`];
    const timedOut = await runExportCommand(sched(hang('t'), { timeout_ms: 200 }), { tmpDir: dir, extension: 'csv' }).catch((e: unknown) => e);
    expect(hasCode(timedOut, 'COMMAND_TIMEOUT')).toBe(true);
    const abort = new AbortController();
    const running = runExportCommand(sched(hang('a')), { tmpDir: dir, extension: 'csv', signal: abort.signal }).catch((e: unknown) => e);
    for (const deadline = Date.now() + 5000; !(await stat(join(dir, 'a')).catch(() => null)); ) {
      if (Date.now() > deadline) throw new Error('the command never started');
      await new Promise((r) => setTimeout(r, 20));
    }
    abort.abort();
    expect(hasCode(await running, 'COMMAND_CANCELLED')).toBe(true);
    for (const tag of ['t', 'a']) {
      // Gone, or a zombie when no init process reaps orphans (containers). SIGKILL is delivered, not awaited: on a
      // loaded machine the process can still show its old state for a moment, so wait (with a deadline) for it to end.
      const pid = (await readFile(join(dir, tag), 'utf8')).trim();
      const ended = async () => {
        const st = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => null);
        return st === null || st.slice(st.lastIndexOf(')') + 2).startsWith('Z');
      };
      for (const deadline = Date.now() + 5000; !(await ended()) && Date.now() < deadline; ) await new Promise((r) => setTimeout(r, 20));
      expect(await ended()).toBe(true);
    }
  });

  it('fails when the program does not exist or leaves no output file', async () => {
    const dir = await tmp();
    const missing = await runExportCommand(sched(['/nonexistent/export']), { tmpDir: dir, extension: 'csv' }).catch(
      (e: unknown) => e,
    );
    expect(hasCode(missing, 'COMMAND_FAILED')).toBe(true);
    const noOut = await runExportCommand(sched([node, '-e', ''], { cwd: dir, output_file: 'never.csv' }), {
      tmpDir: dir,
      extension: 'csv',
    }).catch((e: unknown) => e);
    expect(hasCode(noOut, 'COMMAND_NO_OUTPUT')).toBe(true);
  });
});
