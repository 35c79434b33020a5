import { event } from '../log/events.js';
import { Service, type ServiceOptions } from './service.js';

/**
 * Run the daemon until SIGTERM or SIGINT; SIGHUP reloads the config. Reloads
 * and the stop run one after another, never interleaved. A second stop signal
 * exits at once (the journal makes that safe: the next start resumes).
 * Resolves with the exit code.
 */
export async function runDaemon(opts: ServiceOptions, proc: NodeJS.Process = process): Promise<number> {
  const log = opts.logger;
  // The handlers go in before the start: a signal that came between 'daemon.started' and
  // their installation would take its default action and kill the process outright.
  const starting = Service.start(opts);
  let chain: Promise<unknown> = starting;
  let stopping = false;
  // The daemon's own timers are unref'd: with no folder watched (missing at start), no schedule and no
  // listener, nothing else would hold the event loop, and Node would exit (13) with the daemon "running".
  const keepAlive = setInterval(() => undefined, 2 ** 30);
  return new Promise<number>((resolve, reject) => {
    const off = () => {
      clearInterval(keepAlive);
      proc.off('SIGHUP', onHup);
      proc.off('SIGTERM', onStop);
      proc.off('SIGINT', onStop);
    };
    const onHup = () => {
      if (stopping) return;
      chain = chain
        .then(() => starting)
        .then((service) => service.reload())
        .catch((err: unknown) => log.error(event('config.rejected', { err }), 'reload failed'));
    };
    const onStop = (signal: NodeJS.Signals) => {
      if (stopping) {
        log.warn(event('daemon.stopped', { signal, code: 'FORCED' }), 'second stop signal: exiting now');
        proc.exit(1);
      }
      stopping = true;
      log.info(event('daemon.stopping', { signal }), 'stop signal received');
      chain = chain
        .catch(() => undefined)
        .then(() => starting)
        .then((service) => service.stop())
        .then(
          () => {
            off();
            resolve(0);
          },
          (err: unknown) => {
            off();
            reject(err);
          },
        );
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
