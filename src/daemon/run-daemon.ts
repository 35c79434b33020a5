import { event } from '../log/events.js';
import { systemdNotifier, type Notifier } from './sd-notify.js';
import { Service, type ServiceOptions } from './service.js';

/**
 * Run the daemon until SIGTERM or SIGINT; SIGHUP reloads the config. Reloads
 * and the stop run one after another, never interleaved. A second stop signal
 * exits at once (the journal makes that safe: the next start resumes).
 * Under systemd (Type=notify) it says READY=1 once every dataset has started,
 * RELOADING=1/READY=1 around a reload, STOPPING=1 at the stop, and pings the
 * watchdog from the event loop, so a loop that hangs gets the service restarted.
 * Resolves with the exit code.
 */
export async function runDaemon(opts: ServiceOptions, proc: NodeJS.Process = process): Promise<number> {
  const log = opts.logger;
  const notifier = await systemdNotifier(proc.env, proc.pid, (err, socket) =>
    log.error(
      event('daemon.notify_failed', { socket, code: err.code, reason: err.message, hint: 'systemd cannot be told the service is ready: check NOTIFY_SOCKET and that the unit allows AF_UNIX' }),
      'cannot notify systemd',
    ),
  );
  const watchdog = startWatchdog(notifier);
  // The handlers go in before the start: a signal that came between 'daemon.started' and
  // their installation would take its default action and kill the process outright.
  let lost = () => {};
  const starting = Service.start({ ...opts, onStateDirLost: () => lost() });
  let chain: Promise<unknown> = starting;
  let stopping = false;
  let exitCode = 0;
  // The daemon's own timers are unref'd: with no folder watched (missing at start), no schedule and no
  // listener, nothing else would hold the event loop, and Node would exit (13) with the daemon "running".
  const keepAlive = setInterval(() => undefined, 2 ** 30);
  void starting.then(
    (service) => {
      if (!stopping) notifier?.notify({ READY: '1', STATUS: statusLine(service) });
    },
    () => undefined,
  );
  return new Promise<number>((resolve, reject) => {
    const off = () => {
      clearInterval(keepAlive);
      clearInterval(watchdog);
      notifier?.close();
      proc.off('SIGHUP', onHup);
      proc.off('SIGTERM', onStop);
      proc.off('SIGINT', onStop);
    };
    const onHup = () => {
      if (stopping) return;
      chain = chain
        .then(() => starting)
        .then(async (service) => {
          notifier?.notify({ RELOADING: '1', STATUS: 'reloading the configuration' });
          try {
            await service.reload();
          } finally {
            if (!stopping) notifier?.notify({ READY: '1', STATUS: statusLine(service) });
          }
        })
        .catch((err: unknown) => log.error(event('config.rejected', { err }), 'reload failed'));
    };
    /** A stop signal, or another daemon having taken over the state_dir (Service logged why). */
    const onStop = (signal: NodeJS.Signals | 'STATE_DIR_TAKEN') => {
      if (stopping) {
        log.warn(event('daemon.stopped', { signal, code: 'FORCED' }), 'second stop signal: exiting now');
        proc.exit(1);
      }
      stopping = true;
      notifier?.notify({ STOPPING: '1', STATUS: `stopping (${signal}): finishing the running sync step` });
      log.info(event('daemon.stopping', { signal }), 'stop signal received');
      chain = chain
        .catch(() => undefined)
        .then(() => starting)
        .then((service) => service.stop())
        .then(
          () => {
            off();
            resolve(exitCode);
          },
          (err: unknown) => {
            off();
            reject(err);
          },
        );
    };
    // Exit 75 (EX_TEMPFAIL): systemd starts this one again later, when the other one is gone.
    lost = () => {
      if (stopping) return;
      exitCode = 75;
      onStop('STATE_DIR_TAKEN');
    };
    proc.on('SIGHUP', onHup);
    proc.on('SIGTERM', onStop);
    proc.on('SIGINT', onStop);
    // A start that fails (bad config, corrupt state) rejects; the CLI maps the error to its exit code.
    starting.catch((err: unknown) => {
      off();
      reject(err);
    });
  });
}

/**
 * WATCHDOG=1 every half of $WATCHDOG_USEC, from a timer of the event loop: a
 * loop stuck in a synchronous stretch stops the pings and systemd restarts the
 * service (the journal resumes the sync). Unref'd: it is not what keeps the daemon up.
 */
function startWatchdog(notifier: Notifier | null): NodeJS.Timeout | undefined {
  if (!notifier?.watchdogMs) return undefined;
  notifier.notify({ WATCHDOG: '1' });
  const t = setInterval(() => notifier.notify({ WATCHDOG: '1' }), Math.max(1, Math.floor(notifier.watchdogMs / 2)));
  t.unref();
  return t;
}

/** The STATUS= line `systemctl status` shows. */
function statusLine(service: Service): string {
  const h = service.health.report();
  return `${h.status}: ${h.datasets.length} dataset(s)${h.reasons.length ? `; ${h.reasons.length} problem(s), see /healthz or the log` : ''}`;
}
