import { randomBytes } from 'node:crypto';
import { sha256 } from '../model/canonical.js';
import { httpError } from './http-error.js';
import { ROLES, type Role } from './types.js';

/** A23: prefixes of dataset keys and account keys. */
export const DATASET_KEY_PREFIX = 'tbd_live_';
export const ACCOUNT_KEY_PREFIX = 'tba_live_';

/** A key the emulator knows. */
export interface KeyEntry {
  key: string;
  dataset: string;
  roles: Role[];
  /** Rule 2 / A12: issued before roles; has every role and always publishes. */
  legacy: boolean;
  revoked: boolean;
  /** Reissued with a grace period: valid until this emulator time (ms since the epoch), then 401 like a revoked key. */
  validUntil?: number;
}

/** Spec, Limits: "Old-key grace on reissue: up to 24 hours". */
export const MAX_REISSUE_GRACE_MS = 24 * 3_600_000;

/** What a reissue gave: the new key's entry, and until when the old key still works (null: not at all). */
export interface Reissued {
  entry: KeyEntry;
  oldValidUntil: number | null;
}

/** A short, non-reversible fingerprint of a key for logs (never the key). */
export function keyFingerprint(key: string): string {
  return sha256(key).slice(0, 16);
}

/** A fresh random dataset key. */
export function generateDatasetKey(): string {
  return DATASET_KEY_PREFIX + randomBytes(16).toString('hex');
}

/** The keys of every dataset, and authentication of a request's Authorization header. */
export class KeyRegistry {
  readonly #keys = new Map<string, KeyEntry>();

  /** Issue (or re-register) a key for a dataset. */
  add(input: { dataset: string; key?: string; roles?: readonly Role[]; legacy?: boolean }): KeyEntry {
    const key = input.key ?? generateDatasetKey();
    if (!key.startsWith(DATASET_KEY_PREFIX)) {
      throw httpError(400, 'BAD_REQUEST', `a dataset key must start with ${DATASET_KEY_PREFIX}`);
    }
    const roles = input.legacy ? [...ROLES] : [...(input.roles ?? ROLES)];
    for (const r of roles) if (!ROLES.includes(r)) throw httpError(400, 'BAD_REQUEST', `unknown role ${String(r)}`);
    const entry: KeyEntry = { key, dataset: input.dataset, roles, legacy: input.legacy ?? false, revoked: false };
    this.#keys.set(key, entry);
    return entry;
  }

  /** Revoke a key: its requests get 401 from now on. */
  revoke(key: string): boolean {
    const entry = this.#keys.get(key);
    if (!entry) return false;
    entry.revoked = true;
    return true;
  }

  /**
   * Reissue a key (spec, Authentication: "On reissue the old key can be kept
   * valid for a grace period of at most 24 hours"). The new key is for the same
   * dataset with the same roles unless others are given; it is never a legacy
   * key (reissuing is how a legacy key gets the role rules). The old key works
   * until `now + graceMs`, then gets 401 UNAUTHORIZED; a grace of 0 ends it at
   * once. A grace never extends a key that is already revoked or ending sooner.
   */
  reissue(oldKey: string, input: { graceMs: number; key?: string; roles?: readonly Role[] }, now: number): Reissued {
    const old = this.#keys.get(oldKey);
    if (!old) throw httpError(404, 'NOT_FOUND', 'no such key');
    if (!(input.graceMs >= 0 && input.graceMs <= MAX_REISSUE_GRACE_MS)) {
      throw httpError(400, 'BAD_REQUEST', `the grace period of a reissued key is 0 to ${MAX_REISSUE_GRACE_MS} ms (24 hours)`);
    }
    if (input.key !== undefined && this.#keys.has(input.key)) throw httpError(409, 'CONFLICT', 'that key already exists');
    const entry = this.add({ dataset: old.dataset, roles: input.roles ?? old.roles, ...(input.key === undefined ? {} : { key: input.key }) });
    if (input.graceMs === 0) old.revoked = true;
    else old.validUntil = Math.min(old.validUntil ?? Infinity, now + input.graceMs);
    return { entry, oldValidUntil: old.revoked ? null : old.validUntil! };
  }

  /** Every key (for the admin view). */
  list(): KeyEntry[] {
    return [...this.#keys.values()];
  }

  /** The raw bearer token of an Authorization header, or null. */
  static bearer(header: string | undefined): string | null {
    const m = header ? /^Bearer\s+(\S+)\s*$/i.exec(header) : null;
    return m?.[1] ?? null;
  }

  /** A23: resolve the bearer token to a live dataset key at emulator time `now`, or throw the matching 401/403. */
  authenticate(token: string | null, now: number): KeyEntry {
    if (!token) throw httpError(401, 'UNAUTHORIZED', 'missing Authorization: Bearer <dataset key>');
    if (token.startsWith(ACCOUNT_KEY_PREFIX)) {
      throw httpError(403, 'ACCOUNT_KEY_NOT_SUPPORTED', 'account keys cannot be used on the dataset editing API');
    }
    const entry = token.startsWith(DATASET_KEY_PREFIX) ? this.#keys.get(token) : undefined;
    if (!entry || entry.revoked) throw httpError(401, 'UNAUTHORIZED', 'the key is unknown, revoked or expired');
    // The old key of a reissue: its grace has ended (spec errors table: "key missing, revoked or expired").
    if (entry.validUntil !== undefined && now >= entry.validUntil) throw httpError(401, 'UNAUTHORIZED', 'the key is unknown, revoked or expired');
    return entry;
  }
}

/** True when the key may act in `role` (legacy keys hold every role). */
export function hasRole(entry: KeyEntry, role: Role): boolean {
  return entry.legacy || entry.roles.includes(role);
}

/** Throw 403 unless the key holds `role` (PUBLISH_REQUIRED for publish, FORBIDDEN otherwise). */
export function requireRole(entry: KeyEntry, role: Role): void {
  if (hasRole(entry, role)) return;
  if (role === 'publish') throw httpError(403, 'PUBLISH_REQUIRED', 'this operation needs a key with the publish role');
  throw httpError(403, 'FORBIDDEN', `this operation needs a key with the ${role} role`, { required_role: role });
}
