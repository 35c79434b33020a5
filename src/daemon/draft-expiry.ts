import type { HeldDraft } from '../snapshot/types.js';

/** A draft lives 24 hours on the server, then publishing it gives 410 DRAFT_EXPIRED. */
export const DRAFT_LIFETIME_MS = 24 * 3_600_000;

/** Where a held or staged draft stands against its expiry. */
export type DraftExpiry =
  | { state: 'none' }
  | { state: 'ok' | 'expiring' | 'expired'; version: number; kind: HeldDraft['kind']; ageMs: number; leftMs: number };

/**
 * Pure: is the held draft close to its 24-hour expiry? Only drafts that exist
 * on the server (a version number) expire; a change held unsent does not.
 * `since` is when the connector recorded the draft, at or after its creation,
 * so the estimate errs late by the time between the two (a few seconds).
 */
export function draftExpiry(held: HeldDraft | null, now: number, warnBeforeMs: number): DraftExpiry {
  if (!held || held.version === null || held.kind === 'foreign_draft') return { state: 'none' };
  const ageMs = Math.max(0, now - held.since);
  const leftMs = DRAFT_LIFETIME_MS - ageMs;
  const state = leftMs <= 0 ? 'expired' : leftMs <= warnBeforeMs ? 'expiring' : 'ok';
  return { state, version: held.version, kind: held.kind, ageMs, leftMs: Math.max(0, leftMs) };
}
