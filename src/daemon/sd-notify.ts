import type { UnixDgramSocket } from 'unix-dgram';

/**
 * The service manager's notification channel (sd_notify(3)): state lines
 * such as `READY=1`, `STOPPING=1`, `WATCHDOG=1`, `STATUS=…` sent as one
 * datagram each to the AF_UNIX socket named in $NOTIFY_SOCKET.
 */
export interface Notifier {
  /** Send `KEY=value` lines in one datagram; a failure is reported once through `onError`, never thrown. */
  notify(state: Record<string, string>): void;
  /** The watchdog interval systemd expects pings within ($WATCHDOG_USEC), or null when it watches nothing. */
  readonly watchdogMs: number | null;
  close(): void;
}

/** What systemdNotifier reports a send that failed with (the daemon logs it). */
export type NotifyErrorHandler = (err: Error & { code?: unknown }, socketPath: string) => void;

/**
 * A Notifier for $NOTIFY_SOCKET, or null when the process was not started by
 * systemd with Type=notify. Node has no AF_UNIX datagram socket in core;
 * unix-dgram (a small native addon by a Node core maintainer, built like
 * better-sqlite3) gives one, so every ping is one sendto() from this process:
 * systemd accepts it under the default NotifyAccess=main, where the
 * systemd-notify binary would need NotifyAccess=all and a process per ping,
 * and on systemd before 254 races its own exit (the message arrives after the
 * sender is gone and cannot be attributed to the service).
 *
 * The variables are removed from `env` as sd_notify(3) does with
 * unset_environment, so export commands the daemon starts cannot speak for it.
 * An abstract socket (`@…`) is not supported by unix-dgram: null, with
 * `onError` told why.
 */
export async function systemdNotifier(env: NodeJS.ProcessEnv, pid: number, onError: NotifyErrorHandler): Promise<Notifier | null> {
  const path = env.NOTIFY_SOCKET;
  const watchdogUsec = Number(env.WATCHDOG_USEC);
  const watchdogPid = env.WATCHDOG_PID === undefined ? pid : Number(env.WATCHDOG_PID);
  delete env.NOTIFY_SOCKET;
  delete env.WATCHDOG_USEC;
  delete env.WATCHDOG_PID;
  if (!path) return null;
  if (!path.startsWith('/')) {
    onError(Object.assign(new Error('abstract notification sockets are not supported'), { code: 'NOTIFY_SOCKET_ABSTRACT' }), path);
    return null;
  }
  let socket: UnixDgramSocket;
  try {
    // An optional dependency: without a C++ toolchain it is not built, and install.sh installs the unit as Type=exec.
    const { createSocket } = await import('unix-dgram');
    socket = createSocket('unix_dgram');
  } catch (err) {
    onError(Object.assign(new Error(`unix-dgram cannot be loaded: ${(err as Error).message}`), { code: 'NOTIFY_UNAVAILABLE' }), path);
    return null;
  }
  let failed = false;
  const report = (err: Error & { code?: unknown }) => {
    // One report: a watchdog ping every few seconds would repeat the same line for ever.
    if (failed) return;
    failed = true;
    onError(err, path);
  };
  socket.on('error', report);
  let open = true;
  return {
    watchdogMs: Number.isSafeInteger(watchdogUsec) && watchdogUsec > 0 && watchdogPid === pid ? Math.floor(watchdogUsec / 1000) : null,
    notify(state) {
      if (!open) return;
      const buf = Buffer.from(Object.entries(state).map(([k, v]) => `${k}=${v.replace(/\n/g, ' ')}`).join('\n'));
      socket.send(buf, 0, buf.length, path, (err) => {
        if (err) report(err);
      });
    },
    close() {
      if (!open) return;
      open = false;
      socket.close();
    },
  };
}
