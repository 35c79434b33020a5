import { createHash } from 'node:crypto';

/**
 * JSON with object keys sorted at every depth, so that equal values give equal
 * text (A16 compares bodies "after JSON canonicalisation"; the snapshot hashes it).
 */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(sortKeys(value));
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value !== null && typeof value === 'object') {
    // Null prototype: a key named __proto__ (A6 allows it in attributes) stays an own key, not a prototype.
    const out: Record<string, unknown> = Object.create(null);
    for (const k of Object.keys(value).sort()) {
      const v = (value as Record<string, unknown>)[k];
      if (v !== undefined) out[k] = sortKeys(v);
    }
    return out;
  }
  return value;
}

/** Hex SHA-256 of a string or bytes. */
export function sha256(data: string | Uint8Array): string {
  return createHash('sha256').update(data).digest('hex');
}

/** Hash of a value's canonical JSON. */
export function canonicalHash(value: unknown): string {
  return sha256(canonicalJson(value));
}
