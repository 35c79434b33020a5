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
  let lost = () => {};
  const starting = Service.start({ ...opts, onStateDirLost: () => lost() });
  let chain: Promise<unknown> = starting;
  let stopping = false;
  let exitCode = 0;
  return new Promise<number>((resolve, reject) => {
    const off = () => {
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
    /** A stop signal, or another daemon having taken over the state_dir (Service logged why). */
    const onStop = (signal: NodeJS.Signals | 'STATE_DIR_TAKEN') => {
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
