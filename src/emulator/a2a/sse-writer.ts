import type { ServerResponse } from 'node:http';
import type { TaskEventRecord } from './tasks.js';

/** How the emulator writes its SSE streams; tests change it to exercise the client's tolerant reader (A28). */
export interface SseStyle {
  /** Line ending: LF (default), CRLF or CR. */
  lineEnding: '\n' | '\r\n' | '\r';
  /** Add `event: task` / `event: statusUpdate` lines. */
  eventNames: boolean;
  /** Wrap results as `{"task": …}` / `{"statusUpdate": …}` instead of the plain A28 form. */
  wrapped: boolean;
  /** Split the JSON over several `data:` lines. */
  multiLineData: boolean;
  /** Write a `: keep-alive` comment before each event. */
  comments: boolean;
  /** Write each event in pieces of this many bytes (0: whole), to split it at awkward boundaries. */
  chunkBytes: number;
}

export const DEFAULT_SSE_STYLE: SseStyle = {
  lineEnding: '\n',
  eventNames: false,
  wrapped: false,
  multiLineData: false,
  comments: false,
  chunkBytes: 0,
};

/** The bytes of one SSE event carrying a JSON-RPC response (A28). */
export function formatEvent(rpcId: unknown, ev: TaskEventRecord, style: SseStyle): string {
  const result = style.wrapped ? { [ev.name]: ev.result } : ev.result;
  const json = JSON.stringify({ jsonrpc: '2.0', id: rpcId, result }, null, style.multiLineData ? 1 : undefined);
  const nl = style.lineEnding;
  let out = style.comments ? `: keep-alive${nl}` : '';
  if (style.eventNames) out += `event: ${ev.name}${nl}`;
  for (const line of json.split('\n')) out += `data: ${line}${nl}`;
  return out + nl;
}

/** Writes events to one HTTP response in order, in pieces when the style says so. */
export class SseResponseWriter {
  #queue: Promise<void> = Promise.resolve();
  #ended = false;

  constructor(
    private readonly res: ServerResponse,
    private readonly rpcId: unknown,
    private readonly style: SseStyle,
    /** Destroy the socket after this many events (a broken stream), or never. */
    private breakAfter: number | undefined,
  ) {
    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
    if (style.comments) res.write(`: stream open${style.lineEnding}`);
  }

  write(ev: TaskEventRecord): void {
    const bytes = Buffer.from(formatEvent(this.rpcId, ev, this.style), 'utf8');
    this.#enqueue(async () => {
      if (this.res.destroyed) return;
      const size = this.style.chunkBytes > 0 ? this.style.chunkBytes : bytes.length;
      for (let i = 0; i < bytes.length; i += size) {
        this.res.write(bytes.subarray(i, i + size));
        if (size < bytes.length) await new Promise((r) => setImmediate(r));
      }
      if (this.breakAfter !== undefined && --this.breakAfter <= 0) this.res.destroy();
    });
  }

  end(): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#enqueue(async () => {
      if (!this.res.destroyed) this.res.end();
    });
  }

  #enqueue(work: () => Promise<void>): void {
    this.#queue = this.#queue.then(work).catch(() => undefined);
  }
}
