import { readFile } from 'node:fs/promises';
import { createInterface } from 'node:readline/promises';
import type { Answerer } from './conversation.js';

/** The non-empty lines of an answers file, in order (one answer per line). */
export async function readAnswersFile(path: string): Promise<string[]> {
  const text = await readFile(path, 'utf8');
  return text
    .split(/\r\n|\n|\r/)
    .map((l) => l.trim())
    .filter((l) => l !== '');
}

export interface AnswerSourceOptions {
  /** Prepared answers, used first. */
  answers?: string[];
  /** Ask a person in the terminal when prepared answers run out (only when stdin is a TTY). */
  terminal?: { input: NodeJS.ReadableStream & { isTTY?: boolean }; output: NodeJS.WritableStream } | undefined;
  /** Each answer given, for printing. */
  onAnswer?: (text: string, from: 'file' | 'terminal') => void;
}

/**
 * Answers from a list first, then from a person at the terminal; null when
 * neither can answer (no terminal, nothing left), which ends the call.
 */
export function answerSource(opts: AnswerSourceOptions): Answerer {
  const queue = [...(opts.answers ?? [])];
  return async (question) => {
    const next = queue.shift();
    if (next !== undefined) {
      opts.onAnswer?.(next, 'file');
      return next;
    }
    const t = opts.terminal;
    if (!t?.input.isTTY) return null;
    const rl = createInterface({ input: t.input, output: t.output });
    try {
      const typed = (await rl.question(`answer to "${question}" (empty line ends the call): `)).trim();
      if (typed === '') return null;
      opts.onAnswer?.(typed, 'terminal');
      return typed;
    } finally {
      rl.close();
    }
  };
}

/** Ask a yes/no question at the terminal; false unless the person types y or yes. */
export async function confirm(question: string, input: NodeJS.ReadableStream, output: NodeJS.WritableStream): Promise<boolean> {
  const rl = createInterface({ input, output });
  try {
    return /^(y|yes)$/i.test((await rl.question(`${question} [y/N] `)).trim());
  } finally {
    rl.close();
  }
}
