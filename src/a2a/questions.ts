import type { TaskEvent } from './wire.js';

/**
 * Which questions have been answered (rule 1 of issue 15). The document does
 * not show the state right after an answer, and public A2A servers take
 * answers asynchronously: for a moment the task may still show the question
 * just answered. A question is identified by its message id; without one, by
 * its text and position (the same text with nothing else seen since the
 * answer is the same question). Pure: it sees events in order and says what
 * each one is.
 */
export type Seen =
  /** A question not answered yet: answer it. */
  | 'question'
  /** The question just answered, shown again: wait for the service to move on. */
  | 'repeat'
  /** Anything that is not a question. */
  | 'other';

interface Asked {
  messageId: string | undefined;
  text: string;
}

export class AnsweredQuestions {
  #answered: Asked | undefined;
  /** Something other than the answered question was seen since it was answered. */
  #movedOn = false;

  /** What `ev`, the next event of the task, is. */
  see(ev: TaskEvent): Seen {
    if (ev.state !== 'input-required') {
      this.#movedOn = true;
      return 'other';
    }
    const asked = askedOf(ev);
    const a = this.#answered;
    if (a && sameQuestion(a, asked, this.#movedOn)) return 'repeat';
    this.#movedOn = true;
    return 'question';
  }

  /** `ev`'s question was answered (or may have been: an answer whose reply was lost counts too). */
  answered(ev: TaskEvent): void {
    this.#answered = askedOf(ev);
    this.#movedOn = false;
  }
}

function askedOf(ev: TaskEvent): Asked {
  return { messageId: ev.message?.messageId, text: (ev.message?.text ?? '').trim() };
}

function sameQuestion(answered: Asked, seen: Asked, movedOn: boolean): boolean {
  if (answered.messageId !== undefined && seen.messageId !== undefined) return answered.messageId === seen.messageId;
  return !movedOn && answered.text === seen.text;
}
