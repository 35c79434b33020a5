import type { Stats } from 'node:fs';
import type { z } from 'zod';
import type { RuleIssue } from './rules.js';
import { sameFolderIssues, watchesOf } from './feed-rules.js';
import type { configSchema } from './schema.js';

type Parsed = z.output<typeof configSchema>;

/** How the checks look at a path (fs.promises.stat in the loader). */
export type StatFn = (path: string) => Promise<Stats>;
/** How the checks find a folder's real path, links followed (fs.promises.realpath in the loader). */
export type RealpathFn = (path: string) => Promise<string>;

/**
 * What on this machine would make the service useless although the YAML is
 * right: a key file others can read (the connector refuses it, so its dataset
 * never starts) and a watch folder that is not there. Run by `validate` (the
 * unit's ExecStartPre), so `systemctl start` fails with the fix instead of a
 * service that starts with nothing to do. A key file that is absent is not
 * checked here (another source may give the key; `validate --keys` reads them).
 */
export async function localIssues(config: Parsed, stat: StatFn, realpath: RealpathFn): Promise<RuleIssue[]> {
  const issues: RuleIssue[] = [];
  const keyFiles = [
    ...Object.entries(config.datasets).map(([name, ds]) => ({ path: ['datasets', name, 'api', 'key', 'file'], file: ds.api.key.file })),
    { path: ['alerts', 'call', 'key', 'file'], file: config.alerts?.call?.key.file },
  ];
  for (const { path, file } of keyFiles) {
    if (file === undefined) continue;
    const st = await stat(file).catch(() => undefined);
    if (st && (st.mode & 0o077) !== 0) {
      const mode = (st.mode & 0o777).toString(8).padStart(4, '0');
      issues.push({
        path,
        message: `key file ${file} can be read or written by group or others (mode ${mode}; expected 0600, the service user's alone): run chmod 600 ${file}, and reissue the key if others may have read it`,
      });
    }
  }
  const watches = watchesOf(config);
  for (const { path, dir } of watches) {
    const problem = await stat(dir).then(
      (st) => (st.isDirectory() ? null : 'is not a folder'),
      (err: NodeJS.ErrnoException) => (err.code === 'ENOENT' ? 'does not exist' : `cannot be reached by this user (${err.code ?? err.message})`),
    );
    if (problem !== null) {
      issues.push({
        path,
        message: `folder ${dir} ${problem} (expected the export folder, readable and writable by the service user: create it, mount the share first (RequiresMountsFor= in the unit), or fix the path)`,
      });
    }
  }
  // Two watch paths through a symlink are one folder: the rule compared the written paths, this compares real ones.
  const real = new Map<string, string>();
  for (const { dir } of watches) real.set(dir, await realpath(dir).catch(() => dir));
  issues.push(...sameFolderIssues(watches, (dir) => real.get(dir) ?? dir));
  return issues;
}
