import { expect, it } from 'vitest';
import { forgetSecretsForTests, registeredSecrets, registerSecret } from '../../src/log/secret-registry.js';
import { Secret } from '../../src/secret.js';

it('each test file starts with an empty secret registry (the fast project shares modules between files)', () => {
  // test/reset-secrets-setup.ts ran before this file: whatever another file in this worker registered is gone.
  expect(registeredSecrets().size).toBe(0);
});

it('forgetting the registry lets the same value be registered again', () => {
  registerSecret(new Secret('tbd_live_registry-one'));
  registerSecret(new Secret('tbd_live_registry-one'));
  expect(registeredSecrets().size).toBe(1);
  forgetSecretsForTests();
  expect(registeredSecrets().size).toBe(0);
  registerSecret(new Secret('tbd_live_registry-one'));
  expect(registeredSecrets().size).toBe(1);
});
