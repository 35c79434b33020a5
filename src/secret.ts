import { createHash } from 'node:crypto';
import { inspect } from 'node:util';

const REDACTED = '[redacted]';

/**
 * A credential that cannot leak by accident: the value lives in a private
 * field, so JSON, string conversion, util.inspect, pino and error properties
 * all show `[redacted]`. Only `reveal()` gives the value, at the one place that
 * puts it on the wire.
 */
export class Secret {
  readonly #value: string;
  #fingerprint: string | undefined;

  constructor(value: string) {
    this.#value = value;
  }

  reveal(): string {
    return this.#value;
  }

  /** A short, non-reversible hint for logs ("tbd_live_…3f9a"), never the key. */
  hint(): string {
    const prefix = /^(tb[ad]_live_)/.exec(this.#value)?.[1] ?? '';
    return `${prefix}…(${this.#value.length} chars)`;
  }

  /**
   * A stable identity of the key for the state database (what it has shown,
   * issue 11), never the key: 128 bits of a domain-separated SHA-256. A
   * dataset key is random enough that the hash cannot be turned back into it.
   */
  fingerprint(): string {
    return (this.#fingerprint ??= createHash('sha256').update('dataset-connector key fingerprint\n').update(this.#value).digest('hex').slice(0, 32));
  }

  toString(): string {
    return REDACTED;
  }

  toJSON(): string {
    return REDACTED;
  }

  [inspect.custom](): string {
    return REDACTED;
  }
}

/** Replace every occurrence of each secret's value in `text` (for text that came from outside). */
export function redactText(text: string, secrets: Iterable<Secret>): string {
  let out = text;
  for (const s of secrets) {
    const v = s.reveal();
    if (v.length > 0) out = out.split(v).join(REDACTED);
  }
  return out;
}
