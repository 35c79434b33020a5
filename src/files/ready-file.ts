/** Where a file job came from (logged with the sync); reapply: the last export, from processed/, after a reconcile found drift; cli: named by a person (`sync --export`). */
export type FileOrigin = 'watch' | 'startup' | 'reread' | 'command' | 'reapply' | 'cli';

/** A complete export file, as the watcher hands it on. Watchers don't parse (house style 6). */
export interface ReadyFile {
  /** Absolute path. */
  path: string;
  /** Base name. */
  name: string;
  /** Size in bytes when it settled (or, followed through a link, its target's). */
  size: number;
  /** Modification time when it settled: a file that differs at disposal is a newer export. */
  mtimeMs: number;
  /** The marker file that gated it, when a marker is configured. */
  markerPath?: string;
  /** A symbolic link followed under watch.follow_symlinks (size and mtime are its target's); moving it moves the link. */
  viaLink?: boolean;
}
