import { join } from 'node:path';
import type { Logger } from 'pino';
import { A2aClient } from '../a2a/client.js';
import { runCall, type CallOutcome } from '../a2a/conversation.js';
import { systemClock, type Clock } from '../clock.js';
import { ConnectorError } from '../errors.js';
import { event } from '../log/events.js';
import { resolveKey } from '../config/key.js';
import type { Secret } from '../secret.js';
import type { AlertsConfig, CallAlertConfig } from '../config/alerts.js';
import { decideAlerts, type AlertDecision, type DatasetAlertStatus } from './decide.js';
import { AlertHistory } from './history.js';

export { alertsConfigSchema, callAlertConfigSchema, type AlertsConfig, type CallAlertConfig } from '../config/alerts.js';
export { alertStatus, AUTH_STOP_CODES, decideAlerts, withinHours, type AlertDecision, type DatasetAlertStatus } from './decide.js';

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

/**
 * Log how a followed alert call ended. A call that may still be live, or may
 * have been placed without a task id, is an error naming what to check; a
 * call the connector canceled says why; nothing here is ever retried (the
 * history already counts the call).
 */
function logEnded(log: Logger, d: AlertDecision, o: CallOutcome): void {
  if (o.state === 'auth-required') {
    logNotPlaced(log, d, o);
    return;
  }
  const fields = {
    kind: d.kind,
    task_id: o.taskId ?? null,
    outcome: o.state,
    ended: o.ended,
    ended_by: o.endedBy,
    reason: o.reason ?? null,
    ...(o.learnedBy ? { learned_by: o.learnedBy } : {}),
    ...(o.cancel ? { cancel: o.cancel } : {}),
    ...(o.code ? { code: o.code } : {}),
  };
  if (!o.ended && o.endedBy !== 'call') {
    // The connector let go of a call it could not end: a person must look.
    const msg = o.taskId
      ? 'alert call could not be canceled: it may still be live; cancel it in the portal'
      : 'alert call start was cut off before the service gave its task id: a call may be ringing; check the call history in the portal';
    log.error(event('alert.failed', fields), msg);
    return;
  }
  switch (o.endedBy) {
    case 'interrupt':
      log.warn(event('alert.call', fields), 'alert call canceled: the daemon stopped during it');
      return;
    case 'patience':
      log.warn(event('alert.call', { ...fields, setting: 'alerts.call.patience_minutes' }), 'alert call canceled: the call service kept it waiting past alerts.call.patience_minutes');
      return;
    case 'lost':
      log.warn(event('alert.call', fields), 'alert call canceled: the connector lost track of it');
      return;
    case 'no_answer':
    case 'call':
      break;
  }
  // A27-states: refused after it was accepted, or the service cannot say how it went: worth a warning, never a retry.
  if (o.state === 'unknown' && o.ended) log.warn(event('alert.call', fields), 'alert call ended; the call service does not say how');
  else if (o.state === 'unknown' || o.state === 'rejected') log.warn(event('alert.call', fields), 'alert call did not end normally');
  else log.info(event('alert.call', fields), 'alert call ended');
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
 * with task id and outcome). A stopping daemon follows its calls for a
 * while, then cancels them (a call whose start is still unanswered is read a
 * short grace longer for its task id). Nothing is ever approved from a call:
 * this class has no access to the engine at all.
 */
export class CallAlerts {
  readonly #opts: CallAlertsOptions;
  readonly #client: A2aClient;
  readonly #clock: Clock;
  readonly #following = new Set<Promise<void>>();
  /** Aborted when close() stops the calls still in progress: each is canceled (rule 4 of issue 15). */
  readonly #stop = new AbortController();
  #closing = false;
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
   * Place no more calls, then wait for the calls in progress to end: for at
   * most `followMs` when given (a stopping daemon), after which each is
   * canceled and logged (one whose task id has not come yet is read for a
   * short grace longer, then logged as possibly ringing).
   */
  async close(opts: { followMs?: number } = {}): Promise<void> {
    this.#closing = true;
    if (opts.followMs !== undefined) {
      const timer = new AbortController();
      const ended = await Promise.race([
        this.settled().then(() => true),
        this.#clock.sleep(opts.followMs, timer.signal).then(
          () => false,
          () => true,
        ),
      ]);
      timer.abort();
      if (!ended) this.#stop.abort(new Error('the daemon is stopping'));
    }
    await this.settled();
    await this.#checking.catch(() => undefined);
    if (!this.#opts.client) await this.#client.close();
  }

  async #check(statuses: readonly DatasetAlertStatus[], now: number): Promise<PlacedAlert[]> {
    if (this.#closing) return [];
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
      if (this.#closing) break; // a stopping daemon places no new call
      await this.#history.record(d.dataset, now); // intent first: never a second call for the same window
      placed.push(await this.#place(d));
    }
    return placed;
  }

  /** Place one call; resolve when the service gave its task id (or the call ended first); follow the rest in the background. */
  async #place(d: AlertDecision): Promise<PlacedAlert> {
    const log = this.#opts.logger.child({ dataset: d.dataset });
    let answers = 0;
    let onTask: (taskId: string) => void = () => undefined;
    const started = new Promise<string>((resolve) => (onTask = resolve));
    const run = runCall(this.#client, { to: this.#opts.config.to, goal: d.goal }, {
      signal: this.#stop.signal,
      clock: this.#clock,
      waits: { patienceMs: this.#opts.config.patience_minutes * 60_000 },
      // A27-states: a task refused at once was never placed; its outcome says so below.
      onEvent: (e) => {
        if (!NOT_PLACED.has(e.state)) onTask(e.taskId);
      },
      // Answers only to close the conversation politely; it never carries a decision.
      answer: async () => (++answers <= MAX_ANSWERS ? ALERT_ANSWER : null),
    });
    // Followed from the start, so that a stop can cancel a call whose first event is late; settled once its end is logged.
    let followed = false;
    let done: () => void = () => undefined;
    const tracked = new Promise<void>((resolve) => (done = resolve)).finally(() => this.#following.delete(tracked));
    this.#following.add(tracked);
    try {
      const first = await Promise.race([
        started.then((taskId) => ({ taskId })),
        run.then(
          (o) => ({ outcome: o }),
          (err: unknown) => ({ err }),
        ),
      ]);
      if ('err' in first) {
        // runCall throws only when no call was placed.
        const code = first.err instanceof ConnectorError ? first.err.code : 'UNKNOWN';
        log.error(event('alert.failed', { kind: d.kind, code, outcome: 'not_placed' }), 'alert call could not be placed');
        return { ...d, errorCode: code };
      }
      if ('outcome' in first && !first.outcome.taskId) {
        logEnded(log, d, first.outcome);
        return { ...d, errorCode: first.outcome.code ?? 'OUTCOME_UNKNOWN' };
      }
      if ('outcome' in first && NOT_PLACED.has(first.outcome.state)) {
        const code = logNotPlaced(log, d, first.outcome);
        return { ...d, ...(first.outcome.taskId ? { taskId: first.outcome.taskId } : {}), errorCode: code };
      }
      const taskId = 'outcome' in first ? first.outcome.taskId! : first.taskId;
      log.info(event('alert.call', { kind: d.kind, task_id: taskId, outcome: 'placed' }), 'alert call placed');
      followed = true;
      void run
        .then(
          (o) => logEnded(log, d, o),
          (err: unknown) => {
            const code = err instanceof ConnectorError ? err.code : 'UNKNOWN';
            log.error(event('alert.failed', { kind: d.kind, task_id: taskId, outcome: 'lost', code }), 'alert call lost track');
          },
        )
        .finally(done);
      return { ...d, taskId };
    } finally {
      if (!followed) void run.then(done, done);
    }
  }
}
