import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createSocket, type UnixDgramSocket } from 'unix-dgram';
import { afterEach, describe, expect, it } from 'vitest';
import { systemdNotifier } from '../../src/daemon/sd-notify.js';
import { DaemonProcess, emulatorFixture, scenario } from './harness.js';

/** A fake systemd: a datagram socket at NOTIFY_SOCKET collecting each message's KEY=value lines. */
async function fakeSystemd() {
  const path = join(await mkdtemp(join(tmpdir(), 'dc-notify-')), 'notify');
  const messages: Record<string, string>[] = [];
  let wake: (() => void) | undefined;
  const socket: UnixDgramSocket = createSocket('unix_dgram', (buf) => {
    messages.push(Object.fromEntries(buf.toString('utf8').split('\n').map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)])));
    wake?.();
  });
  socket.bind(path);
  return {
    path,
    messages,
    /** Wait until `count` messages with this key (and value) arrived; resolves with the last of them. */
    async waitFor(key: string, value = '1', count = 1, timeoutMs = 20_000): Promise<Record<string, string>> {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const found = messages.filter((m) => m[key] === value);
        if (found.length >= count) return found[count - 1]!;
        if (Date.now() > deadline) throw new Error(`no ${count}× ${key}=${value}; got ${JSON.stringify(messages)}`);
        await new Promise<void>((r) => {
          const t = setTimeout(r, 200);
          wake = () => {
            clearTimeout(t);
            r();
          };
        });
      }
    },
    close: () => socket.close(),
  };
}

const sockets: Array<{ close(): void }> = [];
afterEach(() => {
  for (const s of sockets.splice(0)) s.close();
});

// Issue 17 (systemd): Type=notify with READY once the datasets have started, watchdog pings from the event loop.
describe('sd_notify: the daemon speaks to a NOTIFY_SOCKET', () => {
  const fx = emulatorFixture();

  it('READY=1 with a STATUS once the datasets started; WATCHDOG=1 at half of WATCHDOG_USEC; RELOADING/READY on SIGHUP; STOPPING=1 on SIGTERM', async () => {
    const systemd = await fakeSystemd();
    sockets.push(systemd);
    const s = await scenario(fx.emu, 'e2e-notify');
    await s.writeConfig({ shop: s.dataset() });
    const d = new DaemonProcess(['run', '--config', s.configPath], { ...s.env, NOTIFY_SOCKET: systemd.path, WATCHDOG_USEC: '400000' });
    try {
      const ready = await systemd.waitFor('READY');
      expect(ready.STATUS).toMatch(/^ok: 1 dataset\(s\)$/);
      await d.waitFor('dataset.started', { dataset: 'shop' });
      // The pings come from a timer of the event loop, every 200 ms here.
      const before = systemd.messages.filter((m) => m.WATCHDOG === '1').length;
      await systemd.waitFor('WATCHDOG', '1', before + 3);

      d.child.kill('SIGHUP');
      await systemd.waitFor('RELOADING');
      await systemd.waitFor('READY', '1', 2);
      const i = systemd.messages.findIndex((m) => m.RELOADING === '1');
      expect(systemd.messages.slice(i).findIndex((m) => m.READY === '1')).toBeGreaterThan(0);
    } finally {
      expect(await d.stop()).toBe(0);
    }
    expect(systemd.messages.filter((m) => m.STOPPING === '1')).toEqual([{ STOPPING: '1', STATUS: expect.stringContaining('stopping (SIGTERM)') }]);
    // The daemon's log says nothing about the channel when it works.
    expect(d.events('daemon.notify_failed')).toEqual([]);
  });
});

describe('systemdNotifier', () => {
  it('sends one datagram per notify, takes the variables out of the environment, and watches only when WATCHDOG_PID is this process', async () => {
    const systemd = await fakeSystemd();
    sockets.push(systemd);
    const errors: unknown[] = [];
    const env: NodeJS.ProcessEnv = { NOTIFY_SOCKET: systemd.path, WATCHDOG_USEC: '30000000', WATCHDOG_PID: '4242', OTHER: 'x' };
    const n = (await systemdNotifier(env, 4242, (e) => errors.push(e)))!;
    sockets.push(n);
    expect(env).toEqual({ OTHER: 'x' });
    expect(n.watchdogMs).toBe(30_000);
    n.notify({ READY: '1', STATUS: 'two\nlines' });
    expect(await systemd.waitFor('READY')).toEqual({ READY: '1', STATUS: 'two lines' });

    const other = (await systemdNotifier({ NOTIFY_SOCKET: systemd.path, WATCHDOG_USEC: '30000000', WATCHDOG_PID: '1' }, 4242, (e) => errors.push(e)))!;
    sockets.push(other);
    expect(other.watchdogMs).toBeNull();
    expect(await systemdNotifier({}, 4242, (e) => errors.push(e))).toBeNull();
    expect(errors).toEqual([]);
    // An abstract socket is said, not silently ignored.
    expect(await systemdNotifier({ NOTIFY_SOCKET: '@/org/freedesktop/systemd1/notify' }, 4242, (e) => errors.push(e))).toBeNull();
    expect(errors).toMatchObject([{ code: 'NOTIFY_SOCKET_ABSTRACT' }]);
  });
});
