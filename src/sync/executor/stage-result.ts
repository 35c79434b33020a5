/** Where execute left a plan's change on the server. */
export type StageResult =
  /** A draft holds the change; verify and publish come next. */
  | { kind: 'staged'; version: number; publishDenied: boolean }
  /** The server published it already (direct writes, or a legacy key, A12). */
  | { kind: 'published'; version: number; legacy: boolean }
  /** A12: the key published a write of a change a guard holds (or one to stage only): the rest is kept unsent. `version` is what it published. */
  | { kind: 'unsent'; version: number }
  /** Nothing reached the server (every write refused). */
  | { kind: 'nothing' };
