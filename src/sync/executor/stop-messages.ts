import type { ConnectorError } from '../../errors.js';

/** What a person should do, by code: the dataset stops until then (the daemon retries slowly). */
const MESSAGES: Record<string, string> = {
  UNAUTHORIZED: 'the dataset key is missing, revoked or expired: issue a new key in the portal (external API tab) and update the key source',
  API_DISABLED: "the dataset's external API switch is off: turn it on in the portal (external API tab)",
  ACCOUNT_KEY_NOT_SUPPORTED: 'an account-level key was configured: issue a dataset key (tbd_live_…) in the portal',
  DATASET_NOT_FOUND: 'the dataset does not exist or the key belongs to another dataset: check api.dataset_id and the key',
  FORBIDDEN: "the key lacks a role this sync needs: reissue it with the write/replace roles",
  IDEMPOTENCY_KEY_REUSED: 'an Idempotency-Key was reused with a different body (a connector bug): report it',
  STATE_CORRUPT: 'the state database is unreadable: see the message for how to recover',
};

/** The error's message with the action a person should take, when known. */
export function stopMessage(err: ConnectorError): string {
  const hint = MESSAGES[err.code];
  return hint ? `${err.code}: ${hint} (${err.message})` : `${err.code}: ${err.message}`;
}
