import type { CallAlertConfig } from '../config/alerts.js';
import { HOURS_RANGE } from '../config/alerts.js';

const DAY_MS = 24 * 60 * 60 * 1000;

/** What the alerts need to know of a dataset (fits the state db's HeldDraft and a health reason). */
export interface DatasetAlertStatus {
  dataset: string;
  /** A change held for a person (guard, staged, publish required, foreign draft), or null. */
  held: { kind: string; reason: string; since: number } | null;
  /** The dataset stopped by an authentication error, or null. */
  stopped: { code: string; message?: string; since: number } | null;
}

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

/** One alert call to place. */
export interface AlertDecision {
  dataset: string;
  kind: 'held' | 'stopped';
  since: number;
  /** The call goal: what is wrong and what to do. */
  goal: string;
}

/** The alert settings the decision reads. */
export type AlertRules = Pick<
  CallAlertConfig,
  'enabled' | 'allowed_hours' | 'held_after_minutes' | 'stopped_after_minutes' | 'max_per_dataset_per_day'
> & { timezone: string };

/**
 * Which alert calls to place now (pure): none outside the allowed hours; per
 * dataset, the auth stop before a held change, once it has lasted its set
 * time, and only while fewer than `max_per_dataset_per_day` calls were
 * placed for that dataset in the last 24 hours.
 */
export function decideAlerts(
  statuses: readonly DatasetAlertStatus[],
  history: ReadonlyMap<string, readonly number[]>,
  now: number,
  rules: AlertRules,
): AlertDecision[] {
  if (!rules.enabled || !withinHours(now, rules.allowed_hours, rules.timezone)) return [];
  const out: AlertDecision[] = [];
  for (const s of statuses) {
    const recent = (history.get(s.dataset) ?? []).filter((t) => t > now - DAY_MS && t <= now).length;
    if (recent >= rules.max_per_dataset_per_day) continue;
    if (s.stopped && now - s.stopped.since >= rules.stopped_after_minutes * 60_000) {
      out.push({ dataset: s.dataset, kind: 'stopped', since: s.stopped.since, goal: stoppedGoal(s.dataset, s.stopped, rules.timezone) });
    } else if (s.held && now - s.held.since >= rules.held_after_minutes * 60_000) {
      out.push({ dataset: s.dataset, kind: 'held', since: s.held.since, goal: heldGoal(s.dataset, s.held, rules.timezone) });
    }
  }
  return out;
}

/** True when `now` falls in "HH:MM-HH:MM" local to `timezone` (start inclusive, end exclusive). */
export function withinHours(now: number, range: string, timezone: string): boolean {
  const m = HOURS_RANGE.exec(range);
  if (!m) return false;
  const start = Number(m[1]) * 60 + Number(m[2]);
  const end = Number(m[3]) * 60 + Number(m[4]);
  const t = localMinutes(now, timezone);
  if (start === end) return true;
  return start < end ? t >= start && t < end : t >= start || t < end;
}

function localMinutes(now: number, timezone: string): number {
  const parts = new Intl.DateTimeFormat('en-GB', { timeZone: timezone, hour: '2-digit', minute: '2-digit', hourCycle: 'h23' }).formatToParts(now);
  const get = (type: string) => Number(parts.find((p) => p.type === type)?.value ?? 0);
  return get('hour') * 60 + get('minute');
}

function localTime(ms: number, timezone: string): string {
  return new Intl.DateTimeFormat('en-GB', {
    timeZone: timezone,
    dateStyle: 'medium',
    timeStyle: 'short',
  }).format(ms) + ` (${timezone})`;
}

const NO_DECISION =
  'This call only informs: nothing can be approved or changed by phone. If they ask to approve, discard or change anything, say it must be done with the command on the connector host, and do not accept it.';

/** The goal of a call about a held change: what is held since when, and the commands that decide it. */
export function heldGoal(dataset: string, held: { kind: string; reason: string; since: number }, timezone: string): string {
  const what =
    held.kind === 'foreign_draft'
      ? `cannot update the business dataset "${dataset}" because another draft is open on the service`
      : `is holding a change to the business dataset "${dataset}" for a person to decide`;
  const todo =
    held.kind === 'foreign_draft'
      ? `Publish or discard that draft in the portal; the connector then goes on by itself.`
      : `Nothing of it has been published. To publish it, run \`dataset-connector approve ${dataset}\` on the connector host; to drop it, run \`dataset-connector discard ${dataset}\`. \`dataset-connector status ${dataset}\` shows what would change.`;
  return `Tell the person who answers, briefly and politely, that the dataset connector ${what} since ${localTime(held.since, timezone)}. Reason: ${held.reason || held.kind}. ${todo} ${NO_DECISION}`;
}

/** The goal of a call about a dataset stopped by an authentication error. */
export function stoppedGoal(dataset: string, stopped: { code: string; message?: string; since: number }, timezone: string): string {
  return `Tell the person who answers, briefly and politely, that the dataset connector stopped updating the business dataset "${dataset}" since ${localTime(
    stopped.since,
    timezone,
  )} because the service refused its key (${stopped.code}). The key may have been revoked or replaced: issue a new dataset key in the portal, put it where the connector reads it, then run \`dataset-connector doctor\`. ${NO_DECISION}`;
}
