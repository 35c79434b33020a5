/**
 * The closed list of log events (house style 8): a fixed `msg`, an `event`
 * from this list, numbers as fields. Add a name here when your area needs a
 * new one; keep the `area.what` form.
 */
export const LOG_EVENTS = [
  // sync pipeline
  'sync.started',
  'sync.planned',
  'sync.published',
  'sync.staged',
  'sync.failed',
  'sync.skipped',
  'sync.summary',
  'feed.not_owned',
  'sync.coalesced',
  // a feed's file is ready while the dataset's other feed folders still receive files: the plan waits for them (coalesce_ms)
  'sync.gathering',
  'sync.gathered',
  'sync.progress',
  'sync.resumed',
  // issue 18: a copy of the published export's rows kept (or not) for the next read, after the publish; not a plan
  'sync.rows_kept',
  'guard.held',
  'draft.approved',
  'draft.discarded',
  'draft.expiring',
  'draft.expired',
  'reconcile.started',
  'reconcile.drift',
  'reconcile.done',
  'reconcile.server_changed',
  'reconcile.reapply',
  // files and triggers
  'file.ready',
  'file.skipped',
  'file.rejected',
  'file.processed',
  // a shared export's file kept in its folder until every dataset taking it is done with it (fan-out)
  'file.kept',
  // a shared export's file read once for every dataset taking it (one decode and parse, each one's rows and mapping)
  'file.read',
  'file.archived',
  'file.dispose_failed',
  'file.unreadable',
  'file.pruned',
  'schedule.fired',
  'schedule.skipped',
  'schedule.warning',
  'sync.retry_scheduled',
  'sync.retry_now',
  'watch.failed',
  'watch.error',
  'watch.started',
  'demo.sample_copied',
  'demo.dataset_added',
  'command.failed',
  // api
  'api.request',
  'api.retry',
  'api.rate_limited',
  'api.waiting',
  'api.error',
  // configuration and keys
  'config.loaded',
  'config.reloaded',
  'config.rejected',
  'config.warning',
  'key.warning',
  // daemon lifecycle
  'daemon.started',
  'daemon.stopping',
  'daemon.stopped',
  'daemon.notify_failed',
  'dataset.started',
  'dataset.stopped',
  'dataset.resumed',
  'history.pruned',
  'health.listening',
  // alerts and emulator
  'alert.call',
  'alert.failed',
  'emulator.started',
] as const;

/** One event name from the closed list. */
export type LogEvent = (typeof LOG_EVENTS)[number];

/** Fields for a log line: `logger.info(event('sync.planned', {adds: 3}), 'sync planned')`. */
export function event<T extends Record<string, unknown>>(name: LogEvent, fields?: T): T & { event: LogEvent } {
  return { ...(fields ?? ({} as T)), event: name };
}
