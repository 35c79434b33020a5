import { rename, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterEach } from 'vitest';
import type { Service } from '../../src/daemon/service.js';
import { systemClock, type Clock } from '../../src/clock.js';
import type { RunningEmulator } from '../../src/emulator/server.js';
import type { DatasetRecord } from '../../src/model/record.js';
import type { CronStarter } from '../../src/triggers/scheduler.js';
import { emulatorFixture, events, scenario, type LogLine, type Scenario } from './scenario.js';

export { events, exportCsv, freePort } from './scenario.js';

/** One JSON log line. */
export type Line = LogLine;

/** A pino logger whose lines the test reads. */
export function capture(): { logger: pino.Logger; lines: Line[]; raw: () => string } {
  let raw = '';
  const lines: Line[] = [];
  const stream = new Writable({
    write(chunk, _enc, cb) {
      raw += String(chunk);
      for (const l of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(l) as Line);
      cb();
    },
  });
  return { logger: pino({ level: 'debug' }, stream), lines, raw: () => raw };
}

/** Wait (polling every 20 ms, at most 20 s) until `find` returns something. */
export async function until<T>(find: () => T | undefined | false | Promise<T | undefined | false>, what: string, lines?: Line[]): Promise<T> {
  for (const deadline = Date.now() + 20_000; ; ) {
    const found = await find();
    if (found !== undefined && found !== false) return found;
    if (Date.now() > deadline) {
      throw new Error(`timed out waiting for ${what}\n${(lines ?? []).map((l) => JSON.stringify(l)).join('\n')}`);
    }
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Wait for the `count`th line of `event` matching `match`. */
export function waitEvent(lines: Line[], name: string, match: Record<string, unknown> = {}, count = 1): Promise<Line> {
  return until(() => events(lines, name, match)[count - 1], `${count}× ${name} ${JSON.stringify(match)}`, lines);
}

/** The real time and waits, with timers the test fires: no `after()` runs until `fire` says so. */
export class ManualClock implements Clock {
  readonly pending: Array<{ ms: number; fn: () => void; label: string }> = [];
  constructor(private readonly nowFn: () => number = () => Date.now()) {}

  now(): number {
    return this.nowFn();
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return systemClock.sleep(ms, signal);
  }

  after(ms: number, fn: () => void, label: string): () => void {
    const t = { ms, fn, label };
    this.pending.push(t);
    return () => {
      const i = this.pending.indexOf(t);
      if (i >= 0) this.pending.splice(i, 1);
    };
  }

  /** Labels of the waits pending now. */
  labels(): string[] {
    return this.pending.map((t) => t.label);
  }

  /** Run (and remove) every pending wait with this label; returns how many ran. */
  fire(label: string): number {
    const due = this.pending.filter((t) => t.label === label);
    for (const t of due) this.pending.splice(this.pending.indexOf(t), 1);
    for (const t of due) t.fn();
    return due.length;
  }
}

/** Write through a dot-name and rename, as a POS writing by rename would; `mtimeMs` sets the modification time first. */
export async function drop(dir: string, name: string, text: string, mtimeMs?: number): Promise<string> {
  const tmp = join(dir, `.${name}.tmp`);
  await writeFile(tmp, text);
  if (mtimeMs !== undefined) await utimes(tmp, mtimeMs / 1000, mtimeMs / 1000);
  await rename(tmp, join(dir, name));
  return join(dir, name);
}

/** A scenario of the daemon tests (the Service in this process). */
export type ServiceScenario = Scenario;

/** Set up a scenario on `emu`: dataset `datasetId`, its key in env DATASET_KEY; short waits, as everything runs in this process. */
export function serviceScenario(emu: RunningEmulator, datasetId: string): Promise<ServiceScenario> {
  return scenario(emu, datasetId, {
    prefix: 'dc-svc-',
    keyEnv: 'DATASET_KEY',
    retry: { max_attempts: 2, base_delay_ms: 10, max_delay_ms: 20 },
    settleMs: 100,
    pollMs: 30,
  });
}

/** GET /healthz of a running service. */
export async function healthz(port: number): Promise<Record<string, unknown>> {
  return (await fetch(`http://127.0.0.1:${port}/healthz`)).json() as Promise<Record<string, unknown>>;
}

/** For a describe block: an emulator shared by its tests, and the services a test starts, stopped after it. */
export function daemonFixture(): { readonly emu: RunningEmulator; readonly services: Service[] } {
  const fx = emulatorFixture();
  const services: Service[] = [];
  afterEach(async () => {
    await Promise.all(services.splice(0).map((s) => s.stop()));
  });
  return {
    get emu() {
      return fx.emu;
    },
    services,
  };
}

/** Cron ticks fired by the test: the reconcile runs when `fire()` says so. */
export function manualCron(): { starter: CronStarter; fire: () => void } {
  const fires: Array<() => void> = [];
  return {
    starter: (_expr, _tz, fire) => {
      fires.push(fire);
      return { stop: () => undefined, nextRun: () => null };
    },
    fire: () => fires.forEach((f) => f()),
  };
}

/** A dataset's schedules for the drift tests: a daily reconcile, run by `manualCron().fire()`. */
export const RECONCILE = [{ type: 'reconcile', cron: '30 4 * * *' }];

/** The published stock of each record of dataset `id`, by record id. */
export function stocks(emu: RunningEmulator, id: string): Record<string, number | undefined> {
  return Object.fromEntries(emu.emulator.records(id).map((r) => [r.record_id, (r.attributes as { stock?: number }).stock]));
}

/** Drift in dataset `id`: a person edits P-0001's stock to 99 and deletes P-0002 in the portal. */
export function portalDrift(emu: RunningEmulator, id: string): void {
  const p1 = emu.emulator.records(id).find((r) => r.record_id === 'P-0001')!;
  const edited = { ...p1, attributes: { ...(p1.attributes as object), stock: 99 } } as DatasetRecord;
  emu.emulator.portalPublish(id, { upsert: [edited], delete: ['P-0002'] });
}
