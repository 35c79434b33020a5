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
  /** Ctrl-C while the terminal asks: readline takes it from the process, so it is passed on here. */
  onInterrupt?: () => void;
}

/**
 * Answers from a list first, then from a person at the terminal; null when
 * neither can answer (no terminal, nothing left), which ends the call.
 */
export function answerSource(opts: AnswerSourceOptions): Answerer {
  const queue = [...(opts.answers ?? [])];
  return async (question, ctx) => {
    const next = queue.shift();
    if (next !== undefined) {
      opts.onAnswer?.(next, 'file');
      return next;
    }
    const t = opts.terminal;
    if (!t?.input.isTTY) return null;
    const rl = createInterface({ input: t.input, output: t.output });
    if (opts.onInterrupt) rl.on('SIGINT', opts.onInterrupt);
    try {
      const prompt = `answer to "${question}" (empty line ends the call): `;
      const typed = (await rl.question(prompt, ctx.signal ? { signal: ctx.signal } : {})).trim();
      if (typed === '') return null;
      opts.onAnswer?.(typed, 'terminal');
      return typed;
    } finally {
      rl.close();
    }
  };
}

/** Ask a yes/no question at the terminal; false unless the person types y or yes (Ctrl-C is a no). */
export async function confirm(question: string, input: NodeJS.ReadableStream, output: NodeJS.WritableStream): Promise<boolean> {
  const rl = createInterface({ input, output });
  const abort = new AbortController();
  // readline takes Ctrl-C from the process while it asks; without this the question would wait on.
  rl.on('SIGINT', () => abort.abort());
  try {
    return /^(y|yes)$/i.test((await rl.question(`${question} [y/N] `, { signal: abort.signal })).trim());
  } catch (err) {
    if (abort.signal.aborted) return false;
    throw err;
  } finally {
    rl.close();
  }
}
