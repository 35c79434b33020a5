import type { ExecContext } from './context.js';
import { event } from '../../log/events.js';

/** A12: what the summary and the log say when the key publishes writes that asked to stage. */
export const LEGACY_KEY_WARNING =
  'the key publishes every write at once although staging was asked (legacy key, A12): changes a guard holds are kept unsent until approved; reissue the key in the portal to get roles';

/** Warn about a legacy key once per sync (summary warning and one `key.warning` line). */
export function warnLegacyKey(ctx: ExecContext, fields: Record<string, unknown> = {}): void {
  if (ctx.summary.warnings.includes(LEGACY_KEY_WARNING)) return;
  ctx.summary.warnings.push(LEGACY_KEY_WARNING);
  ctx.logger.warn(event('key.warning', { kind: 'legacy_key', ...fields }), LEGACY_KEY_WARNING);
}
