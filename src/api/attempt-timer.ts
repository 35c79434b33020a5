/**
 * The time limit of one attempt (api.request_timeout_ms). A small body is sent
 * at once, so its request must be answered within the limit of being sent. A
 * streamed body (a replace or an upload of a million records: 175 MB, minutes
 * on a shop's uplink) is given the limit between chunks while it goes out and
 * for the answer after its last chunk: one limit over the whole exchange timed
 * out every large replace on a slow link, and each repeat sent the body again
 * only to time out again (issue 18's first sync of 1M records: five PUTs).
 */
export class AttemptTimer {
  readonly #ctl = new AbortController();
  #timer: ReturnType<typeof setTimeout> | undefined;

  constructor(readonly limitMs: number) {}

  /** Aborted when the limit passed with nothing sent or answered. */
  get signal(): AbortSignal {
    return this.#ctl.signal;
  }

  get fired(): boolean {
    return this.#ctl.signal.aborted;
  }

  /** Start (or start again) the limit from now. */
  arm(): void {
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => this.#ctl.abort(new Error(`no progress within ${this.limitMs} ms`)), this.limitMs);
  }

  stop(): void {
    clearTimeout(this.#timer);
  }

  /**
   * `chunks` as they are taken by the connection, the limit started again at
   * each: a connection that stops taking them (a stalled link) or a source
   * that stops giving them fails the attempt, and the limit left after the
   * last chunk is the time for the answer.
   */
  async *paced(chunks: AsyncIterable<Uint8Array>): AsyncGenerator<Uint8Array> {
    this.arm();
    for await (const chunk of chunks) {
      yield chunk;
      this.arm();
    }
  }
}
