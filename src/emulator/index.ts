/** The local emulator of the Business Dataset Editing API (tests, demo, trying a configuration). */
export { startEmulator, MAX_BODY_BYTES, type StartEmulatorOptions, type RunningEmulator } from './server.js';
export { Emulator, type EmulatorCounters, type EmulatorSettings, type PortalEdit } from './emulator.js';
export { EmulatorClock, createEmulatorClock } from './clock.js';
export { FaultInjector, type FaultRule, type ActiveFault } from './faults.js';
export { maxInWindow, type RequestLogEntry } from './request-log.js';
export { keyFingerprint, generateDatasetKey, DATASET_KEY_PREFIX, ACCOUNT_KEY_PREFIX, type KeyEntry } from './keys.js';
export {
  loadEmulatorSeed,
  emulatorSeedFromArgs,
  parseEmulatorSeed,
  mergeEmulatorSeeds,
  applySeed,
  emulatorSeedSchema,
  type EmulatorSeed,
  type EmulatorSeedInput,
  type EmulatorSeedDatasetInput,
} from './seed.js';
export { API_PREFIX } from './api.js';
export { ADMIN_PREFIX } from './admin.js';
export { DRAFT_TTL_MS } from './dataset-state.js';
export { IDEMPOTENCY_TTL_MS } from './idempotency.js';
export { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE } from './routes/records.js';
export { ROLES, type Role, type WireJob, type RowError, type JobStatus, type VersionStatus } from './types.js';
