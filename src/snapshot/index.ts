/** The state database: snapshot, dataset state, journal. */
export { openStateDb, StateDb, type StateDbOptions } from './db.js';
export { SnapshotStore } from './store.js';
export { SnapshotRebuild } from './rebuild.js';
export { Journal, type JournalEntry, type JournalIntent, type JournalPlan } from './journal.js';
export { snapshotReaderFrom, compareIds, type SnapshotEntry, type SnapshotReader, type SnapshotSeed } from '../model/snapshot-reader.js';
export type { ConfirmedChange, HeldDraft, RebuildReport, SnapshotInfo, ServerIdentity, SnapshotState, SourceIdentity, StoredRecord } from './types.js';
export { changedFields, patchOf } from '../model/fields.js';
