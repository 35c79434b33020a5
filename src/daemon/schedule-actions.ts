import { stat } from 'node:fs/promises';
import { basename, resolve } from 'node:path';
import type { Logger } from 'pino';
import type { DatasetConfig } from '../config/schema.js';
import { ConnectorError } from '../errors.js';
import { event } from '../log/events.js';
import { runExportCommand } from '../triggers/command.js';
import type { DatasetJob } from '../triggers/queue.js';
import type { NamedSchedule } from '../triggers/scheduler.js';
import { draftExpiry } from './draft-expiry.js';
import type { HealthState } from './health-state.js';
import type { DaemonState } from './ports.js';
import type { Clock } from '../clock.js';

/** What a fired schedule may touch. */
export interface ScheduleDeps {
  push(job: DatasetJob): boolean;
  state: DaemonState;
  health: HealthState;
  logger: Logger;
  /** The one clock (src/clock.ts). */
  clock: Clock;
  tmpDir: string;
  /** Aborted when the daemon stops or the schedules are replaced: a running export command is killed. */
  signal?: AbortSignal;
}

/**
 * Do what a fired schedule says: enqueue a re-read of a fixed file, run an
 * export command and enqueue its output, enqueue a reconcile, or check held
 * drafts against their 24-hour expiry. Never throws: failures are logged and
 * shown in /healthz.
 */
export async function runSchedule(ds: Pick<DatasetConfig, 'name' | 'source'>, s: NamedSchedule, deps: ScheduleDeps): Promise<void> {
  const c = s.config;
  const topic = `schedule:${s.name}`;
  switch (c.type) {
    case 'reconcile':
      deps.push({ kind: 'reconcile' });
      return;
    case 'reread': {
      const path = resolve(c.path);
      const st = await stat(path).catch(() => undefined);
      if (!st?.isFile()) {
        deps.health.set(ds.name, topic, 'FILE_NOT_FOUND', `${path} is missing`, deps.clock.now());
        deps.logger.warn(event('file.skipped', { schedule: s.name, file: path, reason: 'missing' }), 'file skipped');
        return;
      }
      deps.health.clear(ds.name, topic);
      deps.push({ kind: 'file', origin: 'reread', file: { path, name: basename(path), size: st.size, mtimeMs: st.mtimeMs } });
      return;
    }
    case 'command': {
      try {
        const extension = (ds.source as { type?: string }).type ?? 'csv';
        const out = await runExportCommand(c, { tmpDir: deps.tmpDir, extension, clock: deps.clock, ...(deps.signal ? { signal: deps.signal } : {}) });
        const st = await stat(out.path);
        deps.health.clear(ds.name, topic);
        if (out.stderr) deps.logger.info(event('schedule.fired', { schedule: s.name, stderr: out.stderr }), 'export command stderr');
        const pushed = deps.push({
          kind: 'file',
          origin: 'command',
          file: { path: out.path, name: basename(out.path), size: st.size, mtimeMs: st.mtimeMs },
          cleanup: out.cleanup,
        });
        if (!pushed) await out.cleanup();
      } catch (err) {
        const code = err instanceof ConnectorError ? err.code : 'COMMAND_FAILED';
        const context = err instanceof ConnectorError ? err.context : {};
        if (code === 'COMMAND_CANCELLED') {
          deps.logger.info(event('command.failed', { schedule: s.name, code, ...context }), 'export command killed at stop');
          return;
        }
        const why = err instanceof ConnectorError ? `: ${err.message}` : '';
        deps.health.set(ds.name, topic, code, `export command ${s.name} failed${why}`, deps.clock.now());
        deps.logger.error(event('command.failed', { schedule: s.name, code, ...context, err }), 'export command failed');
      }
      return;
    }
    case 'draft_check': {
      const e = draftExpiry(deps.state.held(ds.name), deps.clock.now(), c.warn_before_ms);
      if (e.state === 'none' || e.state === 'ok') {
        deps.health.clear(ds.name, 'draft');
        return;
      }
      const fields = { version: e.version, kind: e.kind, age_ms: e.ageMs, left_ms: e.leftMs };
      if (e.state === 'expiring') {
        deps.health.set(ds.name, 'draft', 'DRAFT_EXPIRING', `draft v${e.version} expires in ${Math.round(e.leftMs / 60_000)} min`, deps.clock.now());
        deps.logger.warn(event('draft.expiring', fields), 'draft expiring: approve or discard it');
      } else {
        deps.health.set(ds.name, 'draft', 'DRAFT_EXPIRED', `draft v${e.version} has expired`, deps.clock.now());
        deps.logger.error(event('draft.expired', fields), 'draft expired');
      }
      return;
    }
  }
}
