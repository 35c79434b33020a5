import type { TaskEvent } from './wire.js';

/**
 * The conversation as a person reads it, one line per event. Stateful only to
 * say "connected" once and to skip repeats of the same state and text (a
 * resubscribe may start with a snapshot of what was already shown).
 */
export class Transcript {
  #last = '';
  #connected = false;

  /** The lines for one event (often one, sometimes none). */
  lines(e: TaskEvent): string[] {
    const key = `${e.taskId}|${e.state}|${e.message?.text ?? ''}`;
    if (key === this.#last) return [];
    this.#last = key;
    const text = e.message?.text?.trim();
    switch (e.state) {
      case 'submitted':
        return [`call accepted (task ${e.taskId}); the phone has not rung yet`];
      case 'working': {
        const out: string[] = [];
        if (!this.#connected) {
          this.#connected = true;
          out.push('connected');
        }
        if (text) out.push(`  them: ${text}`);
        return out;
      }
      case 'input-required':
        return [`  agent asks: ${text ?? '(no text)'}`];
      case 'completed':
        return [text ? `  ${text}` : null, 'call completed'].filter((l): l is string => l !== null);
      case 'failed':
        return [`call failed${text ? `: ${text}` : ''}`];
      case 'canceled':
        return [`call canceled${text ? `: ${text}` : ''}`];
      // A27-states: A2A 0.3 states the document does not list.
      case 'rejected':
        return [
          this.#connected
            ? `call rejected by the service${text ? `: ${text}` : ''}`
            : `call refused by the service, not placed${text ? `: ${text}` : ''}`,
        ];
      case 'auth-required':
        return [`call stopped: the service wants an authorisation the A2A key does not give${text ? ` (${text})` : ''}`];
      case 'unknown':
        return [`the service reports the call state as unknown${text ? `: ${text}` : ''}`];
    }
  }
}
