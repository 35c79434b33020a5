import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { emulatorFixture, freePort, scenario } from './harness.js';

/** True when `pid` has ended (gone, or a zombie that nobody reaped yet). */
async function ended(pid: number): Promise<boolean> {
  const st = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => null);
  if (st === null) return true;
  return st.slice(st.lastIndexOf(')') + 2).startsWith('Z');
}

async function pidsIn(dir: string): Promise<number[]> {
  const names = (await readdir(dir)).filter((n) => n.startsWith('pid-'));
  return Promise.all(names.map(async (n) => Number((await readFile(join(dir, n), 'utf8')).trim())));
}

async function eventually(cond: () => Promise<boolean>, what: string): Promise<void> {
  for (const deadline = Date.now() + 10_000; !(await cond()); ) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

// An export command that starts child processes must not hang its schedule,
// leave orphans behind at a timeout or a stop, or put anything but JSON on stdout.
describe('daemon end to end: export commands', () => {
  const fx = emulatorFixture();

  it('a command whose child outlives it is killed with its group at timeout_ms; the schedule goes on; /healthz says COMMAND_TIMEOUT', async () => {
    const s = await scenario(fx.emu, 'e2e-cmd-hang');
    const port = await freePort();
    // sh starts a sleep that holds stderr open, then waits: killing sh alone leaves the pipe open forever.
    const command = ['sh', '-c', `sleep 1000 & echo $! > ${s.dir}/pid-$$; wait`];
    const { watch: _none, ...ds } = s.dataset({ schedules: [{ type: 'command', name: 'pos', cron: '* * * * * *', command, timeout_ms: 300 }] });
    await s.writeConfig({ shop: ds }, { health: { listen: `127.0.0.1:${port}` } });
    const d = s.start();
    try {
      expect(await d.waitFor('command.failed', { schedule: 'pos' })).toMatchObject({ code: 'COMMAND_TIMEOUT' });
      const health = (await (await fetch(`http://127.0.0.1:${port}/healthz`)).json()) as Record<string, unknown>;
      expect(health).toMatchObject({ status: 'degraded', reasons: [{ topic: 'schedule:pos', code: 'COMMAND_TIMEOUT' }] });
      // Not blocked: the next tick runs it again.
      await d.waitFor('command.failed', { schedule: 'pos', code: 'COMMAND_TIMEOUT' }, 2);
      const pids = await pidsIn(s.dir);
      expect(pids.length).toBeGreaterThanOrEqual(2);
      await eventually(async () => (await Promise.all(pids.slice(0, 2).map(ended))).every(Boolean), 'the sleeps killed');
    } finally {
      expect(await d.stop()).toBe(0);
    }
    // Every stdout line is a JSON log line (node-cron's own coloured lines used to slip in).
    expect(d.lines.filter((l) => l.level === undefined)).toEqual([]);
  });

  it('SIGTERM kills a running export command and its children', async () => {
    const s = await scenario(fx.emu, 'e2e-cmd-stop');
    const command = ['sh', '-c', `sleep 1000 & echo $! > ${s.dir}/pid-$$; wait`];
    const { watch: _none, ...ds } = s.dataset({ schedules: [{ type: 'command', name: 'pos', cron: '* * * * * *', command, timeout_ms: 600_000 }] });
    await s.writeConfig({ shop: ds });
    const d = s.start();
    await d.waitFor('schedule.fired', { schedule: 'pos' });
    await eventually(async () => (await pidsIn(s.dir)).length > 0, 'the command started');
    expect(await d.stop('SIGTERM')).toBe(0);
    const [pid] = await pidsIn(s.dir);
    await eventually(() => ended(pid!), 'the sleep killed');
    expect(d.events('command.failed', { code: 'COMMAND_CANCELLED' })).toHaveLength(1);
    expect(d.lines.filter((l) => l.level === undefined)).toEqual([]);
  });
});
