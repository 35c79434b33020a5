import type { FileObservation } from './settle.js';

/** A complete export file, as the watcher hands it on. Watchers don't parse (house style 6). */
export interface ReadyFile extends FileObservation {
  /** Absolute path. */
  path: string;
  /** Base name. */
  name: string;
  /** The marker file that gated it, when a marker is configured. */
  markerPath?: string;
  /** A symbolic link followed under watch.follow_symlinks (size and mtime are its target's); moving it moves the link. */
  viaLink?: boolean;
}
