import { forgetSecretsForTests } from '../src/log/secret-registry.js';

// The secret registry is module-global; the fast project shares modules between files, so each file starts empty.
forgetSecretsForTests();
