import { ATTRIBUTE_KEY_PATTERN, MAX_ALIASES, MAX_ALIAS_LENGTH, MAX_ATTRIBUTES, RECORD_ID_PATTERN } from '../model/record.js';

/** The six fields of a record as the mapper builds it, before validation. */
export interface CandidateRecord {
  record_id: unknown;
  display_name: unknown;
  api_value: unknown;
  aliases: unknown;
  attributes: Record<string, unknown>;
  active: unknown;
}

/**
 * A fast, conservative A6 check for records the mapper built (exactly the six
 * fields). True only when `recordSchema` would accept the record as is; when
 * false, the caller runs `validateRecord` for the verdict and its messages.
 * It exists because zod per record doubled the read path's time (see test/bench).
 */
export function quickValid(r: CandidateRecord): boolean {
  if (!validScalars(r)) return false;
  let n = 0;
  for (const key in r.attributes) {
    if (++n > MAX_ATTRIBUTES || !ATTRIBUTE_KEY_PATTERN.test(key)) return false;
    if (!validAttribute(r.attributes[key])) return false;
  }
  return Object.getPrototypeOf(r.attributes) === Object.prototype;
}

/**
 * `quickValid` for records whose attributes are a plain object with exactly
 * `keys` (the mapping's attribute fields): the keys are checked once here,
 * so a record costs only the checks of its values.
 */
export function quickValidFor(keys: readonly string[]): (r: CandidateRecord) => boolean {
  const keysOk = keys.length <= MAX_ATTRIBUTES && new Set(keys).size === keys.length && keys.every((k) => ATTRIBUTE_KEY_PATTERN.test(k));
  if (!keysOk) return () => false;
  return (r) => {
    if (!validScalars(r)) return false;
    const attributes = r.attributes;
    for (let i = 0; i < keys.length; i++) if (!validAttribute(attributes[keys[i]!])) return false;
    return true;
  };
}

function validScalars(r: CandidateRecord): boolean {
  if (typeof r.record_id !== 'string' || !RECORD_ID_PATTERN.test(r.record_id)) return false;
  if (typeof r.display_name !== 'string' || r.display_name.length < 1 || r.display_name.length > 200) return false;
  if (typeof r.api_value !== 'string' || r.api_value.length < 1 || r.api_value.length > 500) return false;
  if (typeof r.active !== 'boolean') return false;
  const aliases = r.aliases;
  if (!Array.isArray(aliases) || aliases.length > MAX_ALIASES) return false;
  for (let i = 0; i < aliases.length; i++) {
    const a: unknown = aliases[i];
    if (typeof a !== 'string' || a.length > MAX_ALIAS_LENGTH) return false;
  }
  return true;
}

function validAttribute(v: unknown): boolean {
  return v === null || typeof v === 'string' || typeof v === 'boolean' || (typeof v === 'number' && Number.isFinite(v));
}
