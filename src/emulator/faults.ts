/** One fault injection rule; it fires `count` times on matching requests, then is gone. */
export interface FaultRule {
  /** HTTP method to match (any when absent). */
  method?: string;
  /** Regex (or regex source) matched against the URL path (any when absent). */
  path?: RegExp | string;
  /** How many times it fires (default 1; Infinity for always). */
  count?: number;
  /** Answer this status instead of handling the request. */
  status?: number;
  /** Error code of that answer (A1 body); defaults from the status. */
  code?: string;
  message?: string;
  /** Retry-After seconds on the answer. */
  retryAfterS?: number;
  /** Destroy the connection without answering, without applying the request. */
  reset?: boolean;
  /** Wait this many real milliseconds before going on. */
  delayMs?: number;
  /** Apply the request, then destroy the connection without answering (unknown outcome). */
  applyThenDrop?: boolean;
}

/** A rule held by the injector. */
export interface ActiveFault extends FaultRule {
  id: number;
  remaining: number;
  fired: number;
}

/** What the server does with a request a fault matched. */
export type FaultAction =
  | { kind: 'status'; status: number; code: string; message: string; retryAfterS?: number; delayMs: number }
  | { kind: 'reset'; delayMs: number }
  | { kind: 'drop'; delayMs: number }
  | { kind: 'delay'; delayMs: number };

const DEFAULT_CODES: Record<number, string> = {
  400: 'BAD_REQUEST',
  401: 'UNAUTHORIZED',
  403: 'FORBIDDEN',
  404: 'NOT_FOUND',
  409: 'CONFLICT',
  429: 'RATE_LIMITED',
  500: 'INTERNAL',
  502: 'BAD_GATEWAY',
  503: 'UNAVAILABLE',
  504: 'GATEWAY_TIMEOUT',
};

/** Fault injection: rules matched by method and path, consumed as they fire. */
export class FaultInjector {
  readonly #rules: ActiveFault[] = [];
  #nextId = 1;

  /** Add a rule; returns its id. */
  add(rule: FaultRule): number {
    const count = rule.count ?? 1;
    if (!(count > 0)) throw new RangeError('count must be positive');
    const id = this.#nextId++;
    this.#rules.push({ ...rule, id, remaining: count, fired: 0 });
    return id;
  }

  /** Remove one rule. */
  remove(id: number): boolean {
    const i = this.#rules.findIndex((r) => r.id === id);
    if (i < 0) return false;
    this.#rules.splice(i, 1);
    return true;
  }

  /** Remove every rule. */
  clear(): void {
    this.#rules.length = 0;
  }

  /** The rules still armed. */
  list(): ActiveFault[] {
    return this.#rules.map((r) => ({ ...r }));
  }

  /** Consume the first rule matching the request, and say what to do. */
  match(method: string, path: string): FaultAction | null {
    const rule = this.#rules.find((r) => matches(r, method, path));
    if (!rule) return null;
    rule.remaining--;
    rule.fired++;
    if (rule.remaining <= 0) this.remove(rule.id);
    const delayMs = rule.delayMs ?? 0;
    if (rule.reset) return { kind: 'reset', delayMs };
    if (rule.applyThenDrop) return { kind: 'drop', delayMs };
    if (rule.status !== undefined) {
      const action: FaultAction = {
        kind: 'status',
        status: rule.status,
        code: rule.code ?? DEFAULT_CODES[rule.status] ?? 'INJECTED_FAULT',
        message: rule.message ?? `injected fault ${rule.status}`,
        delayMs,
      };
      if (rule.retryAfterS !== undefined) action.retryAfterS = rule.retryAfterS;
      return action;
    }
    return { kind: 'delay', delayMs };
  }
}

function matches(rule: FaultRule, method: string, path: string): boolean {
  if (rule.method && rule.method.toUpperCase() !== method.toUpperCase()) return false;
  if (rule.path === undefined) return true;
  const re = typeof rule.path === 'string' ? new RegExp(rule.path) : rule.path;
  re.lastIndex = 0;
  return re.test(path);
}
