import { event } from '../log/events.js';
import { Service, type ServiceOptions } from './service.js';

/**
 * Run the daemon until SIGTERM or SIGINT; SIGHUP reloads the config. Reloads
 * and the stop run one after another, never interleaved. A second stop signal
 * exits at once (the journal makes that safe: the next start resumes).
 * Resolves with the exit code.
 */
export async function runDaemon(opts: ServiceOptions, proc: NodeJS.Process = process): Promise<number> {
  const service = await Service.start(opts);
  const log = opts.logger;
  let chain: Promise<unknown> = Promise.resolve();
  let stopping = false;
  return new Promise<number>((resolve) => {
    const onHup = () => {
      if (stopping) return;
      chain = chain.then(() => service.reload()).catch((err: unknown) => log.error(event('config.rejected', { err }), 'reload failed'));
    };
    const onStop = (signal: NodeJS.Signals) => {
      if (stopping) {
        log.warn(event('daemon.stopped', { signal, code: 'FORCED' }), 'second stop signal: exiting now');
        proc.exit(1);
      }
      stopping = true;
      log.info(event('daemon.stopping', { signal }), 'stop signal received');
      chain = chain
        .then(() => service.stop())
        .then(() => {
          proc.off('SIGHUP', onHup);
          proc.off('SIGTERM', onStop);
          proc.off('SIGINT', onStop);
          resolve(0);
        });
    };
    proc.on('SIGHUP', onHup);
    proc.on('SIGTERM', onStop);
    proc.on('SIGINT', onStop);
  });
}
