import { join } from 'node:path';
import type { Logger } from 'pino';
import { A2aClient } from '../a2a/client.js';
import { runCall, type CallOutcome } from '../a2a/conversation.js';
import { systemClock, type Clock } from '../clock.js';
import { ConnectorError } from '../errors.js';
import { event } from '../log/events.js';
import { resolveKey } from '../config/key.js';
import type { Secret } from '../secret.js';
import type { AlertsConfig, CallAlertConfig } from './alerts-config.js';
import { decideAlerts, type AlertDecision, type DatasetAlertStatus } from './alerts-decide.js';
import { AlertHistory } from './alerts-history.js';

export { alertsConfigSchema, callAlertConfigSchema, type AlertsConfig, type CallAlertConfig } from './alerts-config.js';
export { decideAlerts, withinHours, type AlertDecision, type DatasetAlertStatus } from './alerts-decide.js';

/** Codes of a dataset stopped by its key (src/api/errors.ts): the "stopped by an auth error" alerts. */
export const AUTH_STOP_CODES: readonly string[] = ['UNAUTHORIZED', 'FORBIDDEN', 'ACCOUNT_KEY_NOT_SUPPORTED'];

/** Build a DatasetAlertStatus from the state db's held change and the dataset's health reasons. */
export function alertStatus(
  dataset: string,
  held: { kind: string; reason: string; since: number } | null,
  reasons: readonly { code: string; message?: string; since: number }[],
): DatasetAlertStatus {
  const stop = reasons.find((r) => AUTH_STOP_CODES.includes(r.code));
  return {
    dataset,
    held: held ? { kind: held.kind, reason: held.reason, since: held.since } : null,
    stopped: stop ? { code: stop.code, ...(stop.message === undefined ? {} : { message: stop.message }), since: stop.since } : null,
  };
}

/**
 * CallAlerts for the `alerts` section, or undefined when call alerts are off
 * (no section, or `enabled: false`). Resolves the key; the history of calls
 * lives in `<state_dir>/alerts.json`.
 */
export async function callAlertsFromConfig(
  alerts: AlertsConfig | undefined,
  deps: { stateDir: string; timezone: string; logger: Logger; clock?: Clock; env?: NodeJS.ProcessEnv },
): Promise<CallAlerts | undefined> {
  const config = alerts?.call;
  if (!config?.enabled) return undefined;
  const key = await resolveKey(config.key, deps.env ?? process.env);
  return new CallAlerts({
    config,
    key,
    logger: deps.logger,
    timezone: deps.timezone,
    historyPath: join(deps.stateDir, 'alerts.json'),
    ...(deps.clock ? { clock: deps.clock } : {}),
  });
}

/** The one answer an alert call ever gives: it informs, it decides nothing. */
const ALERT_ANSWER =
  'This is an automatic notice from the dataset connector. Nothing can be decided by phone; please use the command on the connector host as I explained. Thank you, goodbye.';
/** Questions answered (with the text above) before the call is ended. */
const MAX_ANSWERS = 2;

/** A27-states: outcomes that, as the first thing the service says, mean the alert reached nobody. */
const NOT_PLACED: ReadonlySet<string> = new Set(['rejected', 'auth-required']);

/**
 * Log an alert the call service refused (`rejected`) or could not run without
 * an authorisation the key does not give (`auth-required`): an error a person
 * must act on. Never retried: the history already counts it for the day.
 */
function logNotPlaced(log: Logger, d: AlertDecision, o: CallOutcome): string {
  const code = o.state === 'rejected' ? 'CALL_REJECTED' : 'AUTH_REQUIRED';
  const fields = { kind: d.kind, task_id: o.taskId, code, outcome: o.state, reason: o.reason ?? null };
  if (code === 'CALL_REJECTED') {
    log.error(event('alert.failed', fields), 'alert call refused by the call service; nobody was called');
  } else {
    log.error(
      event('alert.failed', { ...fields, setting: 'alerts.call.key' }),
      'alert call needs an authorisation the A2A key does not give: check alerts.call.key and its connected agent in the portal',
    );
  }
  return code;
}

export interface CallAlertsOptions {
  /** `alerts.call`, parsed. */
  config: CallAlertConfig;
  /** The resolved A2A key. */
  key: Secret;
  logger: Logger;
  /** Time zone of allowed_hours when the section has none (the top-level `timezone`). */
  timezone?: string;
  clock?: Clock;
  /** JSON file of past alert calls (e.g. `<state_dir>/alerts.json`), so a restart does not ring again. */
  historyPath?: string;
  /** A client to use instead of one built from base_url and key. */
  client?: A2aClient;
}

/** One alert call placed (or attempted) by `check`. */
export interface PlacedAlert extends AlertDecision {
  /** Set once the service accepted the call. */
  taskId?: string;
  /** Set when the call could not be placed (or its outcome is unknown). */
  errorCode?: string;
}

/**
 * Phone-call alerts: the daemon calls `check(statuses, now)` periodically.
 * Each alert is recorded before its call is placed, placed once (never
 * retried), followed to its end in the background and logged (`alert.call`
 * with task id and outcome). Nothing is ever approved from a call: this
 * class has no access to the engine at all.
 */
export class CallAlerts {
  readonly #opts: CallAlertsOptions;
  readonly #client: A2aClient;
  readonly #clock: Clock;
  readonly #following = new Set<Promise<void>>();
  /** Aborted when close() stops following calls still in progress. */
  readonly #unfollow = new AbortController();
  #history: AlertHistory | undefined;
  #checking: Promise<PlacedAlert[]> = Promise.resolve([]);

  constructor(opts: CallAlertsOptions) {
    this.#opts = opts;
    this.#clock = opts.clock ?? systemClock;
    this.#client = opts.client ?? new A2aClient({ baseUrl: opts.config.base_url, key: opts.key, clock: this.#clock });
  }

  /** Decide and place the alert calls due now; resolves once each is placed (or failed to be). */
  check(statuses: readonly DatasetAlertStatus[], now: number = this.#clock.now()): Promise<PlacedAlert[]> {
    // One check at a time: the next one sees the history the previous one wrote.
    this.#checking = this.#checking.catch(() => []).then(() => this.#check(statuses, now));
    return this.#checking;
  }

  /** Resolves when every call placed so far has ended (or failed). */
  async settled(): Promise<void> {
    while (this.#following.size > 0) await Promise.all([...this.#following]);
  }

  /**
   * Let a running check finish, then wait for the calls being followed to end:
   * for at most `followMs` when given (a stopping daemon), after which they are
   * no longer followed (the calls themselves go on at the service).
   */
  async close(opts: { followMs?: number } = {}): Promise<void> {
    await this.#checking.catch(() => undefined);
    if (opts.followMs === undefined) await this.settled();
    else {
      const timer = new AbortController();
      const waited = await Promise.race([
        this.settled().then(() => true),
        this.#clock.sleep(opts.followMs, timer.signal).then(
          () => false,
          () => true,
        ),
      ]);
      timer.abort();
      if (!waited) this.#unfollow.abort();
      await this.settled();
    }
    if (!this.#opts.client) await this.#client.close();
  }

  async #check(statuses: readonly DatasetAlertStatus[], now: number): Promise<PlacedAlert[]> {
    this.#history ??= await AlertHistory.open(this.#opts.historyPath);
    const c = this.#opts.config;
    const decisions = decideAlerts(statuses, this.#history.calls, now, {
      enabled: c.enabled,
      allowed_hours: c.allowed_hours,
      held_after_minutes: c.held_after_minutes,
      stopped_after_minutes: c.stopped_after_minutes,
      max_per_dataset_per_day: c.max_per_dataset_per_day,
      timezone: c.timezone ?? this.#opts.timezone ?? 'UTC',
    });
    const placed: PlacedAlert[] = [];
    for (const d of decisions) {
      await this.#history.record(d.dataset, now); // intent first: never a second call for the same window
      placed.push(await this.#place(d));
    }
    return placed;
  }

  /** Place one call; resolve when the service gave its task id; follow the rest in the background. */
  async #place(d: AlertDecision): Promise<PlacedAlert> {
    const log = this.#opts.logger.child({ dataset: d.dataset });
    let answers = 0;
    let onTask: (taskId: string) => void = () => undefined;
    const started = new Promise<string>((resolve) => (onTask = resolve));
    const run = runCall(this.#client, { to: this.#opts.config.to, goal: d.goal }, {
      signal: this.#unfollow.signal,
      // A27-states: a task refused at once was never placed; its outcome says so below.
      onEvent: (e) => {
        if (!NOT_PLACED.has(e.state)) onTask(e.taskId);
      },
      // Answers only to close the conversation politely; it never carries a decision.
      answer: async () => (++answers <= MAX_ANSWERS ? ALERT_ANSWER : null),
    });
    const first = await Promise.race([
      started.then((taskId) => ({ taskId })),
      run.then(
        (o) => ({ taskId: o.taskId, outcome: o }),
        (err: unknown) => ({ err }),
      ),
    ]);
    if ('err' in first) {
      const code = first.err instanceof ConnectorError ? first.err.code : 'UNKNOWN';
      log.error(event('alert.failed', { kind: d.kind, code, outcome: code === 'OUTCOME_UNKNOWN' ? 'unknown' : 'not_placed' }), 'alert call could not be placed');
      return { ...d, errorCode: code };
    }
    if ('outcome' in first && NOT_PLACED.has(first.outcome.state)) {
      const code = logNotPlaced(log, d, first.outcome);
      return { ...d, taskId: first.taskId, errorCode: code };
    }
    log.info(event('alert.call', { kind: d.kind, task_id: first.taskId, outcome: 'placed' }), 'alert call placed');
    const follow = run.then(
      (o: CallOutcome) => {
        // A27-states: a person must fix the key; the call is not placed again (the history has it).
        if (o.state === 'auth-required') {
          logNotPlaced(log, d, o);
          return;
        }
        const fields = { kind: d.kind, task_id: o.taskId, outcome: o.state, ended_by: o.endedBy, reason: o.reason ?? null };
        // A27-states: refused after it was accepted, or the service cannot say how it went: worth a warning, never a retry.
        if (o.state === 'unknown' || o.state === 'rejected') log.warn(event('alert.call', fields), 'alert call did not end normally');
        else log.info(event('alert.call', fields), 'alert call ended');
      },
      (err: unknown) => {
        if (this.#unfollow.signal.aborted) {
          log.info(event('alert.call', { kind: d.kind, task_id: first.taskId, outcome: 'unfollowed' }), 'alert call no longer followed (stopping)');
          return;
        }
        const code = err instanceof ConnectorError ? err.code : 'UNKNOWN';
        log.warn(event('alert.call', { kind: d.kind, task_id: first.taskId, outcome: 'lost', code }), 'alert call lost track');
      },
    );
    const tracked = follow.finally(() => this.#following.delete(tracked));
    this.#following.add(tracked);
    return { ...d, taskId: first.taskId };
  }
}
