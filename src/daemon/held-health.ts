import type { HeldDraft } from '../snapshot/types.js';
import { isMixed } from '../sync/core/gate.js';
import type { HealthState } from './health-state.js';

/** The /healthz topic of a change held for a person. */
export const HELD_TOPIC = 'held';

/** The reason's code: the sync summary's for the same hold (HELD_GUARD…, DRAFT_PENDING, DRAFT_MIXED). */
export function heldCode(held: HeldDraft): string {
  if (held.kind === 'foreign_draft') return isMixed(held.summary) ? 'DRAFT_MIXED' : 'DRAFT_PENDING';
  return `HELD_${held.kind.toUpperCase()}`;
}

/**
 * Make /healthz say what the state database holds for each dataset, whoever
 * changed it: a held change degrades it, and once a person approved or
 * discarded it (a CLI command, another process than the daemon) the held
 * reason and its draft-expiry warning go at once, not at the next sync.
 */
export function syncHeldHealth(health: HealthState, datasets: readonly string[], heldOf: (dataset: string) => HeldDraft | null): void {
  for (const dataset of datasets) {
    const held = heldOf(dataset);
    if (held) {
      health.set(dataset, HELD_TOPIC, heldCode(held), held.reason, held.since);
    } else {
      health.clear(dataset, HELD_TOPIC);
      health.clear(dataset, 'draft'); // DRAFT_EXPIRING/EXPIRED speak of the held draft
    }
  }
}
