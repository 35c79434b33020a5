import { join } from 'node:path';
import type { Logger } from 'pino';
import { systemClock, type Clock } from '../clock.js';
import { ConfigError } from '../config/errors.js';
import { loadConfig } from '../config/load.js';
import type { Config, DatasetConfig } from '../config/schema.js';
import { ConnectorError } from '../errors.js';
import { event } from '../log/events.js';
import type { SyncSummary } from '../sync/outcome.js';
import { connectorVersion } from '../version.js';
import { canonicalJson } from '../model/canonical.js';
import { openStateDb, type StateDb } from '../snapshot/db.js';
import { planDir } from '../sync/executor/plan-files.js';
import { removeUnconfiguredKept } from '../sync/unchanged/sync-kept.js';
import { SyncEngine } from '../sync/engine.js';
import type { CronStarter } from '../triggers/scheduler.js';
import { AlertMonitor } from '../alerts/monitor.js';
import type { CallAlerts, PlacedAlert } from '../alerts/alerts.js';
import { alertStatus, type DatasetAlertStatus } from '../alerts/decide.js';
import { ClientPool } from './clients.js';
import { DatasetSet } from './config-delta.js';
import { ExportSet } from './export-set.js';
import { ExportTakers } from '../snapshot/export-takers.js';
import type { RetryDelays } from './file-order.js';
import type { Demo } from './demo.js';
import { startHealthServer, type HealthServer } from './health-server.js';
import { HealthState } from './health-state.js';
import { syncHeldHealth } from './held-health.js';
import { resolveDatasetKeys } from './keys.js';
import { DaemonMetrics } from './metrics.js';
import type { DaemonEngine } from './ports.js';
import { daemonState } from './state.js';
import { holdStateDir } from './state-dir-lock.js';
import { releaseStartUpHold } from '../start-up-hold.js';

/** Options of the daemon. */
export interface ServiceOptions {
  configPath: string;
  /** The config already loaded from configPath (else it is loaded at start). */
  initialConfig?: Config;
  logger: Logger;
  /** --log-level was given: the config's log.level does not apply. */
  logLevelFromCli?: boolean;
  env?: NodeJS.ProcessEnv;
  /** The one clock (src/clock.ts): time, waits, and the daemon's own timers (retries, watcher restarts) that tests fire by hand. */
  clock?: Clock;
  /** Tests fire schedules by hand. */
  cronStarter?: CronStarter;
  retry?: RetryDelays;
  /** Time between call-alert checks (default one minute). */
  alertCheckIntervalMs?: number;
  /** Another daemon took this one's state_dir (its lease ran out while this process was suspended): stop now. */
  onStateDirLost?: () => void;
  /** `run --once`: take what waits in the folders, start no watcher, schedule, listener or call alerts. */
  once?: boolean;
  /** Each finished sync, and each file job that threw (`run --once` exits by them). */
  onSummary?: (s: SyncSummary) => void;
  onError?: (dataset: string, err: unknown) => void;
}

/** How long a stopping daemon waits for an alert call it follows to end. */
const ALERT_FOLLOW_ON_STOP_MS = 5_000;

/** Settings read once at start; a reload that changes them is logged as needing a restart. */
const RESTART_ONLY = ['state_dir', 'health', 'demo'] as const;

/**
 * The daemon: config → keys → state db → engine → datasets (journal resume,
 * then watchers and schedules) → health listener. reload() is SIGHUP, stop()
 * is SIGTERM/SIGINT.
 */
export class Service {
  readonly health = new HealthState();
  readonly metrics = new DaemonMetrics();
  #config!: Config;
  #db!: StateDb;
  #clients!: ClientPool;
  #datasets!: DatasetSet;
  /** The shared exports several datasets take (issue 13's fan-out): one watcher each. */
  #exports!: ExportSet;
  #alerts!: AlertMonitor;
  #healthServer: HealthServer | undefined;
  #demo: Demo | undefined;
  #stopping: Promise<void> | undefined;
  /** Gives back this daemon's claim on state_dir. */
  #releaseStateDir: (() => void) | undefined;
  readonly #log: Logger;

  private constructor(private readonly opts: ServiceOptions) {
    this.#log = opts.logger;
  }

  /** Load the config and start everything; throws ConfigError (exit 78) or STATE_CORRUPT before anything runs. */
  static async start(opts: ServiceOptions): Promise<Service> {
    const s = new Service(opts);
    try {
      await s.#start();
    } catch (err) {
      s.#releaseStateDir?.(); // a start that failed past the claim does not keep the state_dir
      // What started before the failure (watchers, the state db) must not keep a process that failed alive.
      await s.#abandon();
      throw err;
    } finally {
      // Start-up is over: a sync has V8's young-generation growth and optimizing compiler (src/start-up-hold.ts);
      // a journal resume queued during the start has them from here.
      releaseStartUpHold();
    }
    return s;
  }

  /** The served datasets. */
  get datasets(): DatasetSet {
    return this.#datasets;
  }

  /** Address of the health listener, when on. */
  get healthAddress(): { host: string; port: number } | undefined {
    return this.#healthServer?.address;
  }

  /** Resolves when no dataset has a job waiting or running. */
  async idle(): Promise<void> {
    await Promise.all([this.#datasets.idle(), this.#exports.idle()]);
  }

  /** The served shared exports. */
  get exports(): ExportSet {
    return this.#exports;
  }

  /** Run one call-alert check now (what the timer does every interval); resolves with the calls placed. */
  checkAlerts(): Promise<PlacedAlert[]> {
    return this.#alerts.check();
  }

  async #start(): Promise<void> {
    const clock = this.opts.clock ?? systemClock;
    let config = this.opts.initialConfig ?? (await loadConfig(this.opts.configPath));
    this.#applyLogLevel(config);
    if (config.demo) {
      // Loaded only for the demo: the embedded emulator (and the XLSX reader its uploads use) stays out of a shop's daemon.
      const { startDemo } = await import('./demo.js');
      this.#demo = await startDemo(config, config.demo, this.#log, this.opts.env);
      config = this.#demo.config;
    }
    this.#config = config;
    this.#logWarnings(config);
    this.health.expect(Object.keys(config.datasets));
    const { keys, failed } = await resolveDatasetKeys(config, this.#log, this.opts.env);
    // openStateDb makes the folder 0700 and state.db 0600 exactly when they are missing, whatever the umask (8943892).
    this.#db = openStateDb(join(config.state_dir, 'state.db'), { clock });
    // One daemon per state_dir: a second one would take the first's files and drafts (exit 75, naming the first).
    try {
      this.#releaseStateDir = await holdStateDir(this.#db, config.state_dir, this.#log, () => this.#stateDirLost(config.state_dir), clock);
    } catch (err) {
      this.#db.close();
      await this.#demo?.emulator.close();
      throw err;
    }
    // Once the state dir is ours: a dataset taken out of the configuration leaves a copy of its export behind.
    removeUnconfiguredKept(planDir(this.#db.path), new Set(Object.keys(config.datasets)), this.#log);
    this.#clients = new ClientPool(this.metrics, this.#log, clock, this.#db.rateWindow);
    this.#clients.setKeys(keys);
    const engine: DaemonEngine = new SyncEngine({
      db: this.#db,
      clientFor: (ds) => this.#clients.clientFor(ds),
      logger: this.#log,
      clock,
    });
    this.#datasets = new DatasetSet({
      engine,
      state: daemonState(this.#db),
      logger: this.#log,
      metrics: this.metrics,
      health: this.health,
      timezone: config.timezone,
      clock,
      tmpDir: join(config.state_dir, 'tmp'),
      ...(this.opts.cronStarter ? { cronStarter: this.opts.cronStarter } : {}),
      ...(this.opts.once ? { once: true } : {}),
      ...(this.opts.onSummary ? { onSummary: this.opts.onSummary } : {}),
      ...(this.opts.onError ? { onError: this.opts.onError } : {}),
      ...(this.opts.retry ? { retry: this.opts.retry } : {}),
    });
    this.#reportKeyFailures(failed);
    await this.#datasets.apply(withKeys(config.datasets, keys), config.timezone);
    this.#exports = new ExportSet({
      engine,
      marks: new ExportTakers(this.#db.conn),
      state: daemonState(this.#db),
      logger: this.#log,
      health: this.health,
      clock,
      timezone: config.timezone,
      tmpDir: join(config.state_dir, 'tmp'),
      served: (name) => this.#datasets.get(name),
      ...(this.opts.cronStarter ? { cronStarter: this.opts.cronStarter } : {}),
      ...(this.opts.once ? { once: true } : {}),
      ...(this.opts.retry ? { retry: this.opts.retry } : {}),
    });
    // After the datasets: each has resumed its journal (queued first) before a taker's sync waits on its lock.
    await this.#exports.apply(config.exports, config.datasets, config.timezone);
    // Each /healthz reads what the state db holds: a person's approve or discard from the CLI shows at once.
    this.health.refreshWith(() => syncHeldHealth(this.health, this.#datasets.names(), (d) => this.#db.snapshot(d).held()));
    // And /metrics: a held change is a gauge read at each scrape, so an approve from the CLI never leaves it "held".
    this.metrics.heldFrom(() => this.#datasets.names().map((dataset) => ({ dataset, held: this.#db.snapshot(dataset).held() !== null })));
    this.#restoreLastSuccess();
    this.#alerts = new AlertMonitor(await this.#buildAlerts(config), {
      statuses: () => this.#alertStatuses(),
      clock,
      logger: this.#log,
      ...(this.opts.alertCheckIntervalMs === undefined ? {} : { intervalMs: this.opts.alertCheckIntervalMs }),
    });
    if (!this.opts.once) this.#alerts.start();
    if (config.health && !this.opts.once) {
      const listen = config.health.listen;
      this.#healthServer = await startHealthServer(listen, this.health, this.metrics).catch((err: NodeJS.ErrnoException) => {
        throw new ConnectorError(
          'HEALTH_LISTEN_FAILED',
          `cannot listen on ${listen} for /healthz and /metrics: ${err.code ?? err.message}` +
            (err.code === 'EADDRINUSE' ? ' (another program, or another connector, uses that port: stop it or change health.listen)' : ' (check health.listen)'),
          { action: 'stop', cause: err },
        );
      });
      this.#log.info(event('health.listening', { ...this.#healthServer.address }), 'health listener started');
    }
    this.health.setPhase('running');
    this.#log.info(
      event('daemon.started', {
        version: connectorVersion(),
        node: process.versions.node,
        config: config.files,
        state_dir: config.state_dir,
        datasets: this.#datasets.names(),
        call_alerts: this.#alerts.enabled,
      }),
      'daemon started',
    );
  }

  /**
   * SIGHUP: load the config again. A bad config is rejected and the old one
   * kept; datasets are added, changed and removed without losing the sync in
   * flight. Returns whether the new config was taken.
   */
  async reload(): Promise<boolean> {
    if (this.#stopping) return false;
    let next: Config;
    try {
      next = await loadConfig(this.opts.configPath);
    } catch (err) {
      const issues = err instanceof ConfigError ? err.issues : undefined;
      const code = (err as { code?: unknown }).code;
      this.#log.error(event('config.rejected', { code, issues, err: issues ? undefined : err }), 'new config rejected, old one kept');
      return false;
    }
    const old = this.#config;
    for (const k of RESTART_ONLY) {
      if (JSON.stringify(next[k]) !== JSON.stringify(old[k])) {
        this.#log.warn(event('config.reloaded', { setting: k, code: 'RESTART_NEEDED' }), 'setting changes only at restart');
      }
    }
    next = { ...next, state_dir: old.state_dir, health: old.health, demo: old.demo };
    this.#logWarnings(next);
    // Demo mode: a dataset the reload adds must exist in the embedded emulator, with its key, before it is served.
    this.#demo?.provision(next);
    this.#applyLogLevel(next);
    const { keys, failed } = await resolveDatasetKeys(next, this.#log, this.opts.env);
    // A served dataset whose key cannot be read now keeps its running config and old key.
    const serve = withKeys(next.datasets, keys);
    const kept: string[] = [];
    for (const f of failed) {
      const running = this.#datasets.get(f.dataset);
      if (running) {
        serve[f.dataset] = running.config;
        kept.push(f.dataset);
      }
    }
    this.#config = next;
    this.health.expect(Object.keys(next.datasets));
    this.#reportKeyFailures(failed, kept);
    // A new key (or config) is what a dataset stopped by a 401 waits for: its held export is retried now.
    const rekeyed = this.#clients.setKeys(keys, kept);
    const delta = await this.#datasets.apply(serve, next.timezone, rekeyed);
    await this.#exports.apply(next.exports, next.datasets, next.timezone);
    this.#restoreLastSuccess();
    if (alertSettings(next) !== alertSettings(old)) {
      // The old instance keeps following its calls in the background; the history file carries the windows over.
      this.#alerts.replace(await this.#buildAlerts(next));
      this.#log.info(event('config.reloaded', { setting: 'alerts', call_alerts: this.#alerts.enabled }), 'call alerts rebuilt');
    }
    this.#log.info(event('config.reloaded', { ...delta, files: next.files }), 'config reloaded');
    return true;
  }

  /** Stop: triggers first, then each dataset's running sync finishes; db and listeners close. */
  stop(): Promise<void> {
    this.#stopping ??= this.#stop();
    return this.#stopping;
  }

  async #stop(): Promise<void> {
    this.health.setPhase('stopping');
    this.#log.info(event('daemon.stopping', { datasets: this.#datasets.names() }), 'daemon stopping');
    await this.#alerts.stop(ALERT_FOLLOW_ON_STOP_MS);
    await this.#exports.stop();
    await this.#datasets.stop();
    await this.#healthServer?.close();
    await this.#clients.close();
    this.#releaseStateDir?.();
    this.#db.close();
    await this.#demo?.emulator.close();
    this.#log.info(event('daemon.stopped'), 'daemon stopped');
  }

  #stateDirLost(stateDir: string): void {
    this.#log.error(
      event('daemon.stopping', { code: 'STATE_DIR_TAKEN', state_dir: stateDir }),
      'another daemon took over this state_dir (this process was suspended past its lease): stopping',
    );
    this.opts.onStateDirLost?.();
  }

  /** Close what a failed start had opened, whatever it got to. */
  async #abandon(): Promise<void> {
    const quietly = (p: Promise<unknown> | undefined) => p?.catch(() => undefined);
    await quietly((this.#alerts as AlertMonitor | undefined)?.stop(0));
    await quietly((this.#exports as ExportSet | undefined)?.stop());
    await quietly((this.#datasets as DatasetSet | undefined)?.stop());
    await quietly(this.#healthServer?.close());
    await quietly((this.#clients as ClientPool | undefined)?.close());
    try {
      (this.#db as StateDb | undefined)?.close();
    } catch {
      // Already closed or never opened.
    }
    await quietly(this.#demo?.emulator.close());
  }

  /** Call alerts of `config`, or undefined when off or when their key cannot be read (logged; the datasets go on). */
  async #buildAlerts(config: Config): Promise<CallAlerts | undefined> {
    // The call client (src/a2a) is loaded only for a config that places calls: a shop without them never pays its memory (issue 18).
    if (!config.alerts?.call?.enabled) return undefined;
    try {
      const { callAlertsFromConfig } = await import('../alerts/alerts.js');
      return await callAlertsFromConfig(config.alerts, {
        stateDir: config.state_dir,
        timezone: config.timezone,
        logger: this.#log,
        ...(this.opts.clock ? { clock: this.opts.clock } : {}),
        ...(this.opts.env ? { env: this.opts.env } : {}),
      });
    } catch (err) {
      const code = (err as { code?: unknown }).code ?? 'INTERNAL';
      this.#log.error(event('alert.failed', { code, outcome: 'disabled', err }), 'call alerts off: their key cannot be read');
      return undefined;
    }
  }

  /** Per served dataset: the change held in the state db and an auth stop among its health reasons. */
  #alertStatuses(): DatasetAlertStatus[] {
    const reasons = this.health.report().reasons;
    return this.#datasets.names().map((name) =>
      alertStatus(
        name,
        this.#db.snapshot(name).held(),
        reasons.filter((r) => r.dataset === name),
      ),
    );
  }

  /** Say which keys cannot be read: a dataset already served keeps running on its previous key, a new one is not served. */
  #reportKeyFailures(failed: Array<{ dataset: string; code: string; message: string }>, kept: readonly string[] = []): void {
    const now = (this.opts.clock ?? systemClock).now();
    for (const f of failed) {
      if (kept.includes(f.dataset)) {
        this.health.set(f.dataset, 'key', f.code, `${f.message}; still running on its previous key`, now);
        this.#log.error(
          event('key.warning', { dataset: f.dataset, code: f.code, message: f.message, outcome: 'kept_previous_key' }),
          'dataset key unreadable: the dataset keeps running on its previous key',
        );
      } else {
        this.health.set(f.dataset, 'key', f.code, f.message, now);
        this.#log.error(event('dataset.stopped', { dataset: f.dataset, code: f.code, message: f.message }), 'dataset key unreadable: dataset not served');
      }
    }
    const bad = new Set(failed.map((f) => f.dataset));
    for (const name of Object.keys(this.#config.datasets)) if (!bad.has(name)) this.health.clear(name, 'key');
  }

  /** The served datasets' last success from the state db, so the metric survives a restart. */
  #restoreLastSuccess(): void {
    for (const name of this.#datasets.names()) this.metrics.restoreLastSuccess(name, this.#db.snapshot(name).lastSuccessAt());
  }

  /** What works but a person should know (config.warnings), one line each, as `validate` prints them. */
  #logWarnings(config: Config): void {
    for (const w of config.warnings) {
      this.#log.warn(event('config.warning', { file: w.file, line: w.line, setting: w.path, message: w.message }), 'configuration warning');
    }
  }

  #applyLogLevel(config: Config): void {
    if (!this.opts.logLevelFromCli) this.#log.level = config.log.level;
  }
}

/** What the call alerts are built from: a change here rebuilds them at reload. */
function alertSettings(config: Config): string {
  return canonicalJson({ alerts: config.alerts ?? null, timezone: config.timezone, state_dir: config.state_dir });
}

/** The datasets that have a key. */
function withKeys(datasets: Record<string, DatasetConfig>, keys: Map<string, unknown>): Record<string, DatasetConfig> {
  return Object.fromEntries(Object.entries(datasets).filter(([n]) => keys.has(n)));
}
