import { Writable } from 'node:stream';

/** A stream a terminal is behind (process.stderr, or a fake in tests). */
export interface TerminalStream {
  write(s: string): unknown;
  isTTY?: boolean;
}

/** What the progress line knows so far, from the log events of one command. */
interface ProgressState {
  rows: number | null;
  path: string | null;
  planned: number | null;
  sent: number;
  job: string | null;
  waiting: string | null;
}

const LEVELS: Record<number | string, string> = { 40: 'warning', 50: 'error', 60: 'fatal', warn: 'warning', error: 'error', fatal: 'fatal' };

/**
 * Progress of a long command on a terminal, drawn from the log events the
 * command writes anyway (pino JSON lines, this stream is their destination):
 * rows read, requests sent of those planned, the job being waited on, and why
 * nothing moves (the rate budget, a job in progress on the server, the
 * server's rate limit). One line, redrawn in place on `out`; warnings and
 * errors are printed above it as text. Only the command's own terminal sees
 * it: the daemon's journal gets nothing extra.
 */
export class TerminalProgress extends Writable {
  readonly #out: TerminalStream;
  readonly #s: ProgressState = { rows: null, path: null, planned: null, sent: 0, job: null, waiting: null };
  readonly #redraw: boolean;
  #drawn = false;
  #buf = '';

  /** Warnings and errors go to `out` always; the progress line only when it is a terminal. */
  constructor(out: TerminalStream) {
    super();
    this.#out = out;
    this.#redraw = out.isTTY === true;
  }

  override _write(chunk: Buffer | string, _enc: BufferEncoding, done: (err?: Error | null) => void): void {
    this.#buf += String(chunk);
    let i: number;
    while ((i = this.#buf.indexOf('\n')) >= 0) {
      const line = this.#buf.slice(0, i);
      this.#buf = this.#buf.slice(i + 1);
      try {
        this.#take(JSON.parse(line) as Record<string, unknown>);
      } catch {
        // Not a JSON line: nothing to show.
      }
    }
    done();
  }

  /** Take the progress line off the terminal (before the command's own summary). */
  clear(): void {
    if (this.#drawn) this.#out.write('\r\x1b[K');
    this.#drawn = false;
  }

  /** The progress line for the current state (exported for tests through `line`). */
  get line(): string {
    const s = this.#s;
    const parts: string[] = [];
    if (s.rows !== null) parts.push(`${s.rows.toLocaleString('en')} rows read`);
    if (s.path !== null && s.path !== 'none') parts.push(`path ${s.path}`);
    const sent = plural(s.sent, 'request');
    if (s.sent > 0 || s.planned !== null) parts.push(s.planned === null ? `${sent} sent` : `${sent} sent, ${plural(s.planned, 'change')} planned`);
    if (s.job) parts.push(`job ${s.job}`);
    if (s.waiting) parts.push(s.waiting);
    return parts.join(' · ');
  }

  #take(l: Record<string, unknown>): void {
    const level = LEVELS[l.level as string] ?? null;
    switch (l.event) {
      case 'sync.planned':
        this.#s.rows = num(l.source) ?? this.#s.rows;
        this.#s.path = typeof l.path === 'string' ? l.path : null;
        this.#s.planned = (num(l.adds) ?? 0) + (num(l.changes) ?? 0) + (num(l.deletes) ?? 0);
        break;
      case 'api.request': {
        this.#s.sent++;
        this.#s.waiting = null;
        const job = typeof l.path === 'string' ? /\/jobs\/([^/?]+)/.exec(l.path) : null;
        if (job) this.#s.job = `${job[1]} running`;
        break;
      }
      case 'api.waiting':
        this.#s.waiting = `waiting ${secs(l.wait_ms)} for the rate budget (api.rate_per_minute)`;
        break;
      case 'api.rate_limited':
        this.#s.waiting =
          l.code === 'JOB_IN_PROGRESS'
            ? `waiting ${secs(l.delay_ms)}: a job is in progress on the server`
            : `waiting ${secs(l.delay_ms)}: the server's rate limit (${String(l.code ?? l.status)})`;
        break;
      case 'api.retry':
        this.#s.waiting = `retrying in ${secs(l.delay_ms)} (${String(l.code ?? l.status)})`;
        break;
      case 'sync.summary':
        this.#s.rows = num(l.rows) ?? this.#s.rows;
        this.#s.waiting = null;
        this.#s.job = null;
        break;
      default:
        break;
    }
    if (level && l.event !== 'sync.summary') {
      this.clear();
      const what = [l.code, l.file, l.message].filter((v) => typeof v === 'string' && v !== '').join(', ');
      this.#out.write(`${level}: ${String(l.msg ?? '')}${what ? ` (${what})` : ''}\n`);
    }
    this.#draw();
  }

  #draw(): void {
    const line = this.line;
    if (line === '' || !this.#redraw) return;
    this.#out.write(`\r\x1b[K${line}`);
    this.#drawn = true;
  }
}

function num(v: unknown): number | null {
  return typeof v === 'number' && Number.isFinite(v) ? v : null;
}

function secs(ms: unknown): string {
  const n = num(ms) ?? 0;
  return n >= 10_000 ? `${Math.round(n / 1000)} s` : `${(n / 1000).toFixed(1)} s`;
}

const plural = (n: number, word: string) => `${n.toLocaleString('en')} ${word}${n === 1 ? '' : 's'}`;
