/** Moved to src/model/record-values.ts (the snapshot's tallies read record values too, and snapshot never imports sync). */
export * from '../../model/record-values.js';
