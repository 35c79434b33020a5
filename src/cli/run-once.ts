import { ExitCode, exitCodeFor, exitCodeForSync, worstExitCode, type ExitCodeValue } from './exit-codes.js';

export { worstExitCode };
import { event } from '../log/events.js';
import type { SyncSummary } from '../sync/outcome.js';
import { Service, type ServiceOptions } from '../daemon/service.js';

/**
 * `run --once`: resume each dataset's journal, take the newest export waiting
 * in each watched folder (older ones are superseded, as at a start), run
 * nothing scheduled, and exit with the `sync` codes (the worst over all
 * datasets; 0 when nothing waited). SIGTERM or SIGINT stops at the next
 * journaled step and exits 75 (the next run resumes).
 */
export async function runOnce(opts: ServiceOptions, proc: NodeJS.Process = process): Promise<number> {
  const codes: ExitCodeValue[] = [];
  const summaries: SyncSummary[] = [];
  const service = await Service.start({
    ...opts,
    once: true,
    onSummary: (s) => {
      summaries.push(s);
      codes.push(exitCodeForSync(s));
    },
    onError: (_dataset, err) => codes.push(exitCodeFor(err)),
  });
  let interrupted = false;
  let stopped!: () => void;
  const stop = new Promise<void>((r) => (stopped = r));
  const onStop = () => {
    interrupted = true;
    stopped();
  };
  proc.once('SIGTERM', onStop);
  proc.once('SIGINT', onStop);
  try {
    await Promise.race([service.idle(), stop]);
  } finally {
    proc.off('SIGTERM', onStop);
    proc.off('SIGINT', onStop);
    await service.stop();
  }
  const code = interrupted ? ExitCode.TEMPFAIL : worstExitCode(codes);
  const how = summaries.length > 0 ? 'run --once done' : codes.length > 0 ? 'run --once: nothing was synced; the errors above say why' : 'run --once: nothing was waiting';
  opts.logger.info(event('daemon.stopped', { once: true, syncs: summaries.length, exit_code: code }), how);
  return code;
}
