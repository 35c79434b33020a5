import type { ServerResponse } from 'node:http';

/** One event in a task's history: the JSON-RPC `result` of an SSE event (A28). */
export interface TaskEventRecord {
  seq: number;
  name: 'task' | 'statusUpdate';
  result: Record<string, unknown>;
  /** The stream closes after this event (input-required or terminal). */
  final: boolean;
}

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
  /** Open the stream with a `retry:` field (which a client must ignore or honour, never choke on). */
  retryField: boolean;
  /** Give each event an `id:` field (its sequence number in the task). */
  eventIds: boolean;
  /** Write heartbeats as events before each event: `event: ping` with `data: ping`, and an empty `data:` event. */
  dataHeartbeats: boolean;
}

export const DEFAULT_SSE_STYLE: SseStyle = {
  lineEnding: '\n',
  eventNames: false,
  wrapped: false,
  multiLineData: false,
  comments: false,
  chunkBytes: 0,
  retryField: false,
  eventIds: false,
  dataHeartbeats: false,
};

/** The bytes of one SSE event carrying a JSON-RPC response (A28). */
export function formatEvent(rpcId: unknown, ev: TaskEventRecord, style: SseStyle): string {
  const result = style.wrapped ? { [ev.name]: ev.result } : ev.result;
  const json = JSON.stringify({ jsonrpc: '2.0', id: rpcId, result }, null, style.multiLineData ? 1 : undefined);
  const nl = style.lineEnding;
  let out = style.comments ? `: keep-alive${nl}` : '';
  if (style.dataHeartbeats) out += `event: ping${nl}data: ping${nl}${nl}data:${nl}${nl}`;
  if (style.eventNames) out += `event: ${ev.name}${nl}`;
  if (style.eventIds) out += `id: ${ev.seq}${nl}`;
  for (const line of json.split('\n')) out += `data: ${line}${nl}`;
  return out + nl;
}

/** How one stream is written beyond the style. */
export interface SseWriterOptions {
  /** Destroy the socket after this many events (a broken stream), or never. */
  breakAfter?: number | undefined;
  /** Nothing is written (not even the headers) before this settles: a late first event. */
  gate?: Promise<void>;
  /** `end()` leaves the response open: a server that does not close after `final: true`. */
  keepOpen?: boolean;
}

/** Writes events to one HTTP response in order, in pieces when the style says so. */
export class SseResponseWriter {
  #queue: Promise<void>;
  #ended = false;
  #breakAfter: number | undefined;
  readonly #keepOpen: boolean;

  constructor(
    private readonly res: ServerResponse,
    private readonly rpcId: unknown,
    private readonly style: SseStyle,
    opts: SseWriterOptions = {},
  ) {
    this.#breakAfter = opts.breakAfter;
    this.#keepOpen = opts.keepOpen ?? false;
    const open = () => {
      if (res.destroyed) return;
      res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
      if (style.retryField) res.write(`retry: 3000${style.lineEnding}${style.lineEnding}`);
      if (style.comments) res.write(`: stream open${style.lineEnding}`);
    };
    this.#queue = (opts.gate ?? Promise.resolve()).then(open).catch(() => undefined);
  }

  /** Write a JSON-RPC error as the stream's one event, then close (errors delivered as SSE). */
  writeError(body: Record<string, unknown>): void {
    const nl = this.style.lineEnding;
    this.#enqueue(async () => {
      if (!this.res.destroyed) this.res.write(`data: ${JSON.stringify(body)}${nl}${nl}`);
    });
    this.#close();
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
      if (this.#breakAfter !== undefined && --this.#breakAfter <= 0) this.res.destroy();
    });
  }

  /** The stream is over: close the response, unless this server keeps streams open after `final`. */
  end(): void {
    if (!this.#keepOpen) this.#close();
  }

  #close(): void {
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
