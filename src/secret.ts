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
