import { createHash } from 'node:crypto';
import type { Secret } from '../secret.js';

const registered = new Set<Secret>();
/** Hashes of the registered values, so that one value is registered once however often it is read. */
const seen = new Set<string>();

/**
 * Register a secret whose value must never appear in a log line. Every
 * logger made by createLogger scrubs registered values from what it writes;
 * resolveKey registers each key it reads, so no caller has to remember to.
 * A value already registered (under another Secret) is not added again:
 * keys are read again on every refused request (rereadKey), and every log
 * line is scrubbed against each entry, so the registry must not grow with reads.
 */
export function registerSecret(secret: Secret): void {
  const value = secret.reveal();
  if (value.length === 0) return;
  const id = createHash('sha256').update(value).digest('hex');
  if (seen.has(id)) return;
  seen.add(id);
  registered.add(secret);
}

/** The secrets registered so far, one per distinct value (live view). */
export function registeredSecrets(): ReadonlySet<Secret> {
  return registered;
}

/**
 * Forget every registered secret. Tests only: the fast test project shares
 * one module cache across files (no isolation), and each file starts with an
 * empty registry (test/reset-secrets-setup.ts); the daemon never forgets a key it read.
 */
export function forgetSecretsForTests(): void {
  registered.clear();
  seen.clear();
}
