/**
 * Text from an export shown on a terminal: control characters (ESC, BEL,
 * C1 codes such as CSI, DEL) and the bidirectional overrides that reorder
 * what a person reads are written as visible escapes (`\x1b`, `\u202e`),
 * so that a cell can neither drive the terminal nor disguise itself.
 */
// eslint-disable-next-line no-control-regex
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

export function visible(s: string): string {
  return s.replace(UNSAFE, (c) => {
    const code = c.charCodeAt(0);
    return code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`;
  });
}

/** JSON text of a value with the same characters escaped as \u sequences (JSON.stringify leaves C1 codes and bidi marks as they are). */
export function safeJson(value: unknown): string {
  return JSON.stringify(value).replace(UNSAFE, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/**
 * Exit quietly when stdout's reader has gone (`preview | head`): EPIPE is the
 * reader's choice to stop, not a failure, and must not end in a stack trace.
 * For commands that print and end, not for the daemon.
 */
export function exitWhenStdoutCloses(): void {
  process.stdout.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') process.exit(process.exitCode ?? 0);
    throw err;
  });
}
