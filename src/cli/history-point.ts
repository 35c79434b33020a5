import { ConnectorError } from '../errors.js';
import type { HistoryPoint } from '../history/reader.js';

/** The options that name a history point (restore, plan --restore). */
export interface PointOptions {
  toVersion?: string;
  toTime?: string;
}

/** The point `--to-version N` or `--to-time T` names; exactly one of them. */
export function historyPoint(opts: PointOptions): HistoryPoint {
  if ((opts.toVersion === undefined) === (opts.toTime === undefined)) {
    throw usage('give exactly one of --to-version <n> and --to-time <iso time>');
  }
  if (opts.toVersion !== undefined) {
    const n = Number(opts.toVersion);
    if (!Number.isInteger(n) || n < 0) throw usage(`--to-version ${opts.toVersion}: expected a version number such as 12`);
    return { version: n };
  }
  const t = Date.parse(opts.toTime!);
  if (!Number.isFinite(t) || !/^\d{4}-\d{2}-\d{2}/.test(opts.toTime!)) {
    throw usage(`--to-time ${opts.toTime}: expected an ISO time such as 2026-11-24T09:00:00+09:00`);
  }
  return { time: t };
}

function usage(message: string): ConnectorError {
  return new ConnectorError('POINT_INVALID', message, { action: 'reject' });
}
