/**
 * A Server-Sent Events reader (the WHATWG event-stream format): lines end in
 * CRLF, LF or CR; `:` lines are comments (keep-alives); several `data:` lines
 * make one event joined with LF; an empty line dispatches. Pure and
 * incremental, so events split anywhere across chunks come out whole.
 */

/** One dispatched event. `event` is the `event:` field, or `message` when there was none. */
export interface SseEvent {
  event: string;
  data: string;
  id?: string;
}

/** Incremental parser: push decoded text as it arrives, get the events completed by it. */
export class SseParser {
  #buffer = '';
  #skipLf = false;
  #started = false;
  #data: string[] = [];
  #event = '';
  #id: string | undefined;

  /** Feed the next piece of text; returns the events it completed. */
  push(text: string): SseEvent[] {
    let chunk = text;
    if (!this.#started && chunk.length > 0) {
      this.#started = true;
      if (chunk.charCodeAt(0) === 0xfeff) chunk = chunk.slice(1);
    }
    const out: SseEvent[] = [];
    for (const ch of chunk) {
      if (this.#skipLf) {
        this.#skipLf = false;
        if (ch === '\n') continue; // the LF of a CRLF split across chunks
      }
      if (ch === '\r' || ch === '\n') {
        if (ch === '\r') this.#skipLf = true;
        this.#line(this.#buffer, out);
        this.#buffer = '';
      } else {
        this.#buffer += ch;
      }
    }
    return out;
  }

  /** The stream ended: an event whose lines were complete but lacked the final blank line is still given. */
  end(): SseEvent[] {
    const out: SseEvent[] = [];
    this.#buffer = ''; // a partial last line is a truncated event; drop it
    this.#dispatch(out);
    return out;
  }

  #line(line: string, out: SseEvent[]): void {
    if (line === '') {
      this.#dispatch(out);
      return;
    }
    if (line.startsWith(':')) return; // comment or keep-alive
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'data') this.#data.push(value);
    else if (field === 'event') this.#event = value;
    else if (field === 'id' && !value.includes('\0')) this.#id = value;
    // `retry` and unknown fields are ignored.
  }

  #dispatch(out: SseEvent[]): void {
    if (this.#data.length > 0) {
      out.push({
        event: this.#event === '' ? 'message' : this.#event,
        data: this.#data.join('\n'),
        ...(this.#id === undefined ? {} : { id: this.#id }),
      });
    }
    this.#data = [];
    this.#event = '';
  }
}

/** Read SSE events from a byte stream (UTF-8, characters split across chunks are joined). */
export async function* readSse(body: AsyncIterable<Uint8Array | string>): AsyncGenerator<SseEvent> {
  const decoder = new TextDecoder('utf-8');
  const parser = new SseParser();
  for await (const chunk of body) {
    const text = typeof chunk === 'string' ? chunk : decoder.decode(chunk, { stream: true });
    yield* parser.push(text);
  }
  yield* parser.push(decoder.decode());
  yield* parser.end();
}
