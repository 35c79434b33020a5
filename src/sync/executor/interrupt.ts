import { ConnectorError } from '../../errors.js';
import type { ExecContext } from './context.js';

/** The sync was asked to stop (the daemon is stopping): its plan stays open in the journal for resume. */
export class InterruptedError extends ConnectorError {
  constructor(dataset: string, cause?: unknown) {
    super('INTERRUPTED', `the sync of ${dataset} was stopped between two steps; the next start resumes it from the journal`, {
      action: 'retry',
      cause,
      context: { dataset },
    });
  }
}

/** Between journaled steps (never mid-request): stop here when the caller's signal asked to. */
export function checkpoint(ctx: Pick<ExecContext, 'dataset' | 'signal'>): void {
  if (ctx.signal?.aborted) throw new InterruptedError(ctx.dataset, ctx.signal.reason);
}
