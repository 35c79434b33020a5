import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import { ConnectorError } from '../errors.js';
import { event } from '../log/events.js';
import type { CallAlerts, DatasetAlertStatus, PlacedAlert } from './alerts.js';

/** How often the daemon asks whether an alert call is due (thresholds are in minutes). */
export const ALERT_CHECK_INTERVAL_MS = 60_000;

/** What the monitor reads and uses. */
export interface AlertMonitorDeps {
  /** The alert status of every served dataset, read at each check. */
  statuses(): DatasetAlertStatus[];
  clock: Clock;
  logger: Logger;
  /** Time between checks; default ALERT_CHECK_INTERVAL_MS. */
  intervalMs?: number;
}

/**
 * Runs CallAlerts.check on a timer with the datasets' held changes and auth
 * stops. Checks never overlap, also across a replace (SIGHUP): the next check
 * runs after the previous one has written its history, so a new instance never
 * rings for a window the old one already used. A replaced instance follows its
 * calls to their end in the background; stop() waits for them.
 */
export class AlertMonitor {
  readonly #deps: AlertMonitorDeps;
  #alerts: CallAlerts | undefined;
  /** Cancels the next check (clock.after). */
  #cancelTimer: (() => void) | undefined;
  #chain: Promise<unknown> = Promise.resolve();
  /** Replaced instances still following calls; closed once their calls end, or at stop. */
  readonly #retired = new Set<CallAlerts>();
  readonly #closing = new Set<Promise<void>>();
  #stopped = false;

  constructor(alerts: CallAlerts | undefined, deps: AlertMonitorDeps) {
    this.#alerts = alerts;
    this.#deps = deps;
  }

  /** Whether call alerts are on. */
  get enabled(): boolean {
    return this.#alerts !== undefined;
  }

  /** Start the periodic checks; the first runs at once (a change held before a restart may already be due). */
  start(): void {
    this.#schedule(0);
  }

  /** Use `next` from the next check on (undefined: alerts off); the old instance is closed in the background. */
  replace(next: CallAlerts | undefined): void {
    const old = this.#alerts;
    this.#alerts = next;
    if (old && old !== next) this.#retire(old);
  }

  /** Run one check now (what the timer does); resolves with the calls placed. */
  check(): Promise<PlacedAlert[]> {
    const run = this.#chain.then(() => this.#checkNow());
    this.#chain = run.catch(() => undefined);
    return run;
  }

  /**
   * Stop the timer and close every instance, waiting at most `followMs` for
   * calls still being followed (all of them when not given) before they are
   * canceled; a running check ends with them.
   */
  async stop(followMs?: number): Promise<void> {
    this.#stopped = true;
    this.#cancelTimer?.();
    // Closed alongside a running check, not after it: that check may be waiting for a late first event of
    // its call, which only the close (cancel after followMs) brings to an end.
    const all = [...this.#retired, ...(this.#alerts ? [this.#alerts] : [])];
    this.#retired.clear();
    this.#alerts = undefined;
    await Promise.all([...all.map((a) => this.#close(a, followMs)), ...this.#closing, this.#chain]);
  }

  async #checkNow(): Promise<PlacedAlert[]> {
    const alerts = this.#alerts;
    if (!alerts || this.#stopped) return [];
    try {
      return await alerts.check(this.#deps.statuses(), this.#deps.clock.now());
    } catch (err) {
      // e.g. ALERT_HISTORY_CORRUPT: no call is placed until a person fixes it; the datasets go on.
      const code = err instanceof ConnectorError ? err.code : 'INTERNAL';
      this.#deps.logger.error(event('alert.failed', { code, outcome: 'not_checked', err }), 'alert check failed');
      return [];
    }
  }

  #schedule(delayMs = this.#deps.intervalMs ?? ALERT_CHECK_INTERVAL_MS): void {
    if (this.#stopped) return;
    this.#cancelTimer = this.#deps.clock.after(delayMs, () => {
      void this.check().finally(() => this.#schedule());
    }, 'alert check');
  }

  #retire(alerts: CallAlerts): void {
    this.#retired.add(alerts);
    void alerts.settled().then(() => {
      if (!this.#retired.delete(alerts)) return;
      const closing = this.#close(alerts).finally(() => this.#closing.delete(closing));
      this.#closing.add(closing);
    });
  }

  async #close(alerts: CallAlerts, followMs?: number): Promise<void> {
    try {
      await alerts.close(followMs === undefined ? {} : { followMs });
    } catch (err) {
      this.#deps.logger.warn(event('alert.failed', { code: 'CLOSE_FAILED', err }), 'alert client close failed');
    }
  }
}
