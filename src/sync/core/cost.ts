import type { Policy } from '../../config/policy.js';

/** The request budget of a key (A24) and, optionally, upload throughput. */
export interface RateBudget {
  /** Requests per minute this connector sends with the key (api.rate_per_minute). */
  ratePerMinute: number;
  /** Measured or assumed upload speed; absent: upload time not counted. */
  uploadBytesPerSecond?: number;
}

/** A time estimate of one path, with its parts so the reason can show the maths. */
export interface CostEstimate {
  requests: number;
  ms: number;
  /** How it was computed, for people. */
  detail: string;
}

/** Requests of the per-record path: one per operation, plus the draft check and publish when staged. */
export function perRecordCost(ops: number, publishRequests: number, rate: RateBudget): CostEstimate {
  const requests = ops + publishRequests;
  const ms = requests * msPerRequest(rate);
  return {
    requests,
    ms,
    detail: `${ops} record requests${publishRequests ? ` + ${publishRequests} draft/publish requests` : ''} at ${rate.ratePerMinute}/min ≈ ${secs(ms)}`,
  };
}

/** Job time: the last measured job scaled by record count, else the policy's estimate. */
export function jobEstimate(
  resultRecords: number,
  lastJob: { ms: number; records: number } | null | undefined,
  policy: Policy,
): { ms: number; measured: boolean } {
  if (lastJob && lastJob.ms > 0) {
    return { ms: Math.round((lastJob.ms * Math.max(1, resultRecords)) / Math.max(1, lastJob.records)), measured: true };
  }
  return { ms: policy.replace.estimated_job_ms, measured: false };
}

/**
 * The replace path: reads of the server first (to carry over records the
 * connector does not own), one PUT/upload, status polls while the job runs,
 * then the draft check and publish when staged; plus upload time when known.
 */
export function replaceCost(
  p: { readPages: number; publishRequests: number; job: { ms: number; measured: boolean }; bodyBytes?: number | undefined },
  rate: RateBudget,
  policy: Policy,
): CostEstimate {
  const polls = Math.max(1, Math.ceil(p.job.ms / policy.replace.job_poll_ms));
  const fixed = p.readPages + 1 + p.publishRequests;
  const uploadMs = p.bodyBytes !== undefined && rate.uploadBytesPerSecond ? (p.bodyBytes / rate.uploadBytesPerSecond) * 1000 : 0;
  // Polls run while the job runs; they cost time only when the rate is slower than the poll interval.
  const pollMs = Math.max(p.job.ms, polls * msPerRequest(rate));
  const ms = fixed * msPerRequest(rate) + pollMs + uploadMs;
  const parts = [
    p.readPages ? `${p.readPages} page reads` : '',
    '1 replace request',
    p.publishRequests ? `${p.publishRequests} draft/publish requests` : '',
  ].filter(Boolean);
  return {
    requests: fixed + polls,
    ms,
    detail:
      `${parts.join(' + ')} at ${rate.ratePerMinute}/min + job ${secs(p.job.ms)} (${p.job.measured ? 'measured' : 'estimated'}, ${polls} polls)` +
      `${uploadMs ? ` + upload ${secs(uploadMs)}` : ''} ≈ ${secs(ms)}`,
  };
}

function msPerRequest(rate: RateBudget): number {
  return 60_000 / Math.max(1, rate.ratePerMinute);
}

/** Seconds for people, e.g. "7.2 s". */
export function secs(ms: number): string {
  return `${(ms / 1000).toFixed(1)} s`;
}
