import { resolve } from 'node:path';
import { ALWAYS_FOLLOW, NEVER_FOLLOW, type LinkPolicy } from '../sources/open-file.js';
import { fateDir } from './archive.js';
import type { WatchConfig } from '../config/watch.js';
import type { FileOrigin } from './ready-file.js';

/**
 * The folders a followed link may lead into (watch.follow_symlinks): the
 * watch folder (its sub-folders included) and its processed and failed
 * folders, wherever those are.
 */
export function watchRoots(cfg: WatchConfig): string[] {
  return [resolve(cfg.path), fateDir(cfg, 'processed'), fateDir(cfg, 'failed')];
}

/** How the watch's own files may be links: never, or (follow_symlinks) only into its folders. */
export function watchLinkPolicy(cfg: WatchConfig | undefined): LinkPolicy {
  return cfg?.follow_symlinks ? { follow: 'within', roots: watchRoots(cfg) } : NEVER_FOLLOW;
}

/**
 * How the file of a job may be a link (issue 11). A file found in the watch
 * folder (or archived in its processed/) follows the watch's rule. A reread
 * path and a command's output_file were named by the operator in the
 * configuration, as `sync --file` names one on the command line: a link
 * there (a `latest.csv` pointing at the day's export) is the operator's
 * choice and is followed; a FIFO or device is still refused, and a command's
 * stdout is our own private temp file.
 */
export function linkPolicyFor(origin: FileOrigin, cfg: WatchConfig | undefined): LinkPolicy {
  return origin === 'reread' || origin === 'command' || origin === 'cli' ? ALWAYS_FOLLOW : watchLinkPolicy(cfg);
}
