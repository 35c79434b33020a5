import type { Secret } from '../secret.js';

const REDACTED = '[redacted]';
/** Anything shaped like a dataset or account key (A23), registered or not. */
const KEY_SHAPE = /tb[ad]_live_[A-Za-z0-9_-]{4,}/g;

/**
 * The last line of defence: remove every secret value, raw or JSON-escaped,
 * and anything shaped like an API key, from one serialized log line.
 */
export function scrubLine(line: string, secrets: Iterable<Secret>): string {
  let out = line;
  for (const s of secrets) {
    const v = s.reveal();
    if (v.length === 0) continue;
    if (out.includes(v)) out = out.split(v).join(REDACTED);
    const escaped = JSON.stringify(v).slice(1, -1);
    if (escaped !== v && out.includes(escaped)) out = out.split(escaped).join(REDACTED);
  }
  return out.replace(KEY_SHAPE, REDACTED);
}
