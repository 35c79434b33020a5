import type { Secret } from '../secret.js';

const registered = new Set<Secret>();

/**
 * Register a secret whose value must never appear in a log line. Every
 * logger made by createLogger scrubs registered values from what it writes;
 * resolveKey registers each key it reads, so no caller has to remember to.
 */
export function registerSecret(secret: Secret): void {
  if (secret.reveal().length > 0) registered.add(secret);
}

/** The secrets registered so far (live view). */
export function registeredSecrets(): ReadonlySet<Secret> {
  return registered;
}
