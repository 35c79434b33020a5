import type { Logger } from 'pino';
import { event } from '../log/events.js';
import { redactText, type Secret } from '../secret.js';
import type { ApiError } from './errors.js';
import type { HttpResponse } from './response.js';
import type { RateLimiter } from './rate-limiter.js';
import type { FailureKind } from './retry.js';

/** A key read again after a 401, with the limiter shared by its clients. */
export interface Rekeyed {
  key: Secret;
  limiter: RateLimiter;
  /** Where it was read ("file /etc/…/keys/shop-1"), for log lines; never the key. */
  source?: string;
  /** What a person should know about it (e.g. it looks like an account key). */
  warnings?: readonly string[];
}

/** A switch to a key read again after a 401, not yet answered by anything but refusals or transient failures. */
interface KeyTrial {
  from: { key: Secret; limiter: RateLimiter };
  to: Rekeyed;
}

/** The answer to one send, as the transport sees it. */
export type SendOutcome = { response: HttpResponse } | { error: ApiError; kind: FailureKind };

export interface KeyRingOptions {
  datasetId: string;
  key: Secret;
  limiter: RateLimiter;
  /** After a 401: read the key's source again; undefined when it holds nothing new. */
  rereadKey?: (current: Secret) => Promise<Rekeyed | undefined>;
  logger?: Logger;
}

/**
 * The key a transport sends and the limiter that paces it: the configured
 * ones until a 401 finds a new key at the key's source (a key reissued with
 * a grace period). The new key is on trial until an answer other than a
 * refusal confirms it; a refusal of it too puts the previous key back, so a
 * key of another dataset pasted by mistake never sticks and the next 401
 * reads the source again.
 */
export class KeyRing {
  readonly #o: KeyRingOptions;
  #key: Secret;
  #limiter: RateLimiter;
  /** Every key used, so each stays out of error text. */
  readonly #all: Secret[];
  /** One re-read at a time; requests refused together share it. */
  #rereading: Promise<boolean> | undefined;
  #trial: KeyTrial | undefined;
  /** Keys tried after a 401 and refused too: an answer to one of them is a refusal of that key, not of the request. */
  readonly #refused = new WeakSet<Secret>();

  constructor(o: KeyRingOptions) {
    this.#o = o;
    this.#key = o.key;
    this.#limiter = o.limiter;
    this.#all = [o.key];
  }

  get key(): Secret {
    return this.#key;
  }

  get limiter(): RateLimiter {
    return this.#limiter;
  }

  /** Every key used so far, for redaction. */
  get all(): readonly Secret[] {
    return this.#all;
  }

  get canReread(): boolean {
    return this.#o.rereadKey !== undefined;
  }

  /** Where the key on trial was read, for log lines. */
  get trialSource(): string | undefined {
    return this.#trial?.to.source;
  }

  /** True when `key` was tried after a 401 and refused too. */
  wasRefused(key: Secret): boolean {
    return this.#refused.has(key);
  }

  /**
   * After a 401 with `used`: true when a different key is now in use (read
   * again from its source here, or by a request refused at the same time).
   * A source that cannot be read leaves the key as it is (logged; the 401 stands).
   */
  async rekey(used: Secret): Promise<boolean> {
    if (this.#key !== used) return true;
    if (!this.#rereading) {
      const reading = this.#reread(used);
      this.#rereading = reading;
      void reading.finally(() => {
        if (this.#rereading === reading) this.#rereading = undefined;
      });
    }
    return this.#rereading;
  }

  /**
   * An answer to a request sent with `key`: when that is the key on trial, a
   * refusal of it (401, 403, 404 DATASET_NOT_FOUND) puts the previous key back
   * and says why (key.warning, never the key); anything else but a transient
   * failure or a 429, which say nothing of the key, confirms the new key.
   */
  judge(key: Secret, outcome: SendOutcome): void {
    const trial = this.#trial;
    if (trial?.to.key !== key) return;
    if ('error' in outcome && isKeyRefusal(outcome.error)) {
      const { error } = outcome;
      this.#trial = undefined;
      this.#refused.add(trial.to.key);
      if (this.#key === trial.to.key) {
        this.#key = trial.from.key;
        this.#limiter = trial.from.limiter;
      }
      this.#o.logger?.warn(
        event('key.warning', {
          status: error.status,
          code: error.code,
          message: `the key read again from ${trial.to.source ?? 'its source'} after a 401 was refused too: ${refusalReason(error, this.#o.datasetId)}`,
          outcome: 'kept_previous_key',
          ...(trial.to.source ? { key_source: trial.to.source } : {}),
        }),
        'api key refused, and the new key at its source was refused too; keeping the previous key',
      );
      return;
    }
    if ('response' in outcome || outcome.kind === 'final') this.#trial = undefined;
  }

  async #reread(used: Secret): Promise<boolean> {
    try {
      const next = await this.#o.rereadKey!(used);
      if (!next) return false;
      this.#all.push(next.key);
      for (const message of next.warnings ?? []) {
        this.#o.logger?.warn(
          event('key.warning', { message: redactText(message, this.#all), outcome: 'trying_new_key', ...(next.source ? { key_source: next.source } : {}) }),
          'api key read again after a 401',
        );
      }
      // On trial until an answer other than a refusal: a key of another dataset (a paste mistake)
      // must not replace the previous one, or a corrected file would only be read again on SIGHUP.
      this.#trial = { from: { key: this.#key, limiter: this.#limiter }, to: next };
      this.#key = next.key;
      this.#limiter = next.limiter;
      return true;
    } catch (err) {
      const code = (err as { code?: unknown }).code;
      this.#o.logger?.warn(
        event('key.warning', { code, message: redactText(String((err as Error).message), this.#all), outcome: 'kept_previous_key' }),
        'api key refused, and its source cannot be read again',
      );
      return false;
    }
  }
}

/** An answer that refuses the key itself rather than the request: 401, any 403, 404 DATASET_NOT_FOUND. */
export function isKeyRefusal(error: ApiError): boolean {
  return error.status === 401 || error.status === 403 || (error.status === 404 && error.code === 'DATASET_NOT_FOUND');
}

/** Why a key read again was refused, in words that say what to fix. */
function refusalReason(error: ApiError, datasetId: string): string {
  if (error.code === 'DATASET_NOT_FOUND') return `404 DATASET_NOT_FOUND, it is not a key of dataset ${datasetId} (a key of another dataset?); write this dataset's key there`;
  if (error.code === 'ACCOUNT_KEY_NOT_SUPPORTED') return '403 ACCOUNT_KEY_NOT_SUPPORTED, it is an account key (tba_live_…); write a dataset key there';
  if (error.status === 401) return `401 ${error.code}, it is not a valid key (mistyped, revoked or expired)`;
  return `${error.status} ${error.code}`;
}
