import type { CallOutcome } from './call-outcome.js';

/** How an outcome reads for a person: a summary line, and what went wrong with what to do, when something did. */
export interface OutcomeReport {
  summary: string;
  /** For stderr: what happened and what to do; absent when the call simply ended. */
  problem?: string;
}

/** Said wherever a call may exist that the connector cannot vouch for: never "call again". */
const CHECK_FIRST = 'check the call history in the portal before placing another call';

/**
 * The words for a call's outcome (`dataset-connector call`). A call that
 * ended is reported as ended, with its state or as "outcome unknown", never
 * as refused; where a call may exist, the report says so and never suggests
 * calling again (rules 2 and 4 of issue 15).
 */
export function describeOutcome(o: CallOutcome, ctx: { patience: string }): OutcomeReport {
  const task = o.taskId ? `task ${o.taskId}` : 'task id unknown';
  const answers = `${o.answers} answer${o.answers === 1 ? '' : 's'} given`;
  const reason = o.reason ? ` (${o.reason})` : '';
  const learned = o.learnedBy === 'tasks/get' ? '; the service would not reopen the ended task, its state came from tasks/get' : '';
  const cancelFailed = `the connector could not cancel ${task}${o.code ? ` (${o.code})` : ''}: it may still be live; cancel it in the portal and ${CHECK_FIRST}`;

  switch (o.endedBy) {
    case 'interrupt':
      if (!o.taskId) {
        return {
          summary: 'interrupted before the service said which task the call is: a call may be ringing; task id unknown',
          problem: `interrupted: a call may be ringing; task id unknown. It could not be canceled from here: ${CHECK_FIRST}.`,
        };
      }
      if (o.cancel === 'failed') return { summary: `interrupted; ${task} could not be canceled`, problem: `interrupted: ${cancelFailed}.` };
      return { summary: `interrupted; ${task} was canceled (${answers})` };
    case 'no_answer':
      return withCancel(o, cancelFailed, 'The agent asked a question and there was no answer to give (no terminal, or no answers left); the call was ended.');
    case 'patience':
      return withCancel(
        o,
        cancelFailed,
        `The call service kept the call waiting for ${ctx.patience} without going on (${o.code === 'CALL_NOT_CONNECTED' ? 'the call did not connect' : 'no progress after the last answer'}); the connector canceled ${task}.`,
        `the call was canceled after ${ctx.patience} without progress (--patience-minutes sets how long to wait).`,
      );
    case 'lost':
      if (!o.taskId) {
        return {
          summary: 'outcome unknown: the answer to the call start was lost; task id unknown',
          problem: `the answer to the call start was lost: a call may have been placed; task id unknown. It is not retried: ${CHECK_FIRST}.`,
        };
      }
      if (!o.ended) return { summary: `lost track of the call; ${task}`, problem: `lost track of the call${o.code ? ` (${o.code})` : ''}: ${cancelFailed}.` };
      return {
        summary: `outcome: ${o.state}${reason}; ${answers}; ${task} (the connector lost track of the call and canceled it)`,
        problem: `lost track of the call${o.code ? ` (${o.code})` : ''}, so ${task} was canceled. It is not placed again.`,
      };
    case 'call':
      break;
  }
  if (o.state === 'unknown') {
    if (o.ended) {
      return {
        summary: `outcome: ended, outcome unknown; ${answers}; ${task}`,
        problem: `the call has ended but the service does not say how (it refuses to reopen the ended task and has no tasks/get): ${CHECK_FIRST}.`,
      };
    }
    return {
      summary: `outcome: unknown${reason}; ${answers}; ${task}. The call service could not say how the call went, so it may have been placed; it is not placed again: check before calling again.`,
      problem: `the call service could not say how the call went (state unknown); it may have been placed: check ${task} before calling again`,
    };
  }
  const summary = `outcome: ${o.state}${reason}; ${answers}; ${task}${learned}`;
  // A27-states: outcomes the document does not list say what went wrong; none is retried.
  if (o.state === 'rejected') return { summary: `${summary}. The call service refused the call; it is not retried.`, problem: 'the call service refused the call (rejected); it is not retried' };
  if (o.state === 'auth-required') {
    return {
      summary: `${summary}. The call service wants an authorisation the A2A key does not give: check the key and its connected agent in the portal, then call again. Nothing is retried.`,
      problem: 'the call service wants an authorisation the A2A key does not give (auth-required): check the key and its connected agent in the portal',
    };
  }
  return { summary };
}

/** An outcome the connector brought about by canceling: the summary, or the failed cancel. */
function withCancel(o: CallOutcome, cancelFailed: string, summary: string, problem?: string): OutcomeReport {
  if (!o.ended && o.cancel !== 'requested') return { summary, problem: cancelFailed };
  return problem ? { summary, problem } : { summary };
}
