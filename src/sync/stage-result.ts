/** Where execute left a plan's change on the server. */
export type StageResult =
  /** A draft holds the change; verify and publish come next. */
  | { kind: 'staged'; version: number; publishDenied: boolean }
  /** The server published it already (direct writes, or a legacy key, A12). */
  | { kind: 'published'; version: number; legacy: boolean }
  /** Nothing reached the server (every write refused). */
  | { kind: 'nothing' };
