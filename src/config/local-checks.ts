import type { Stats } from 'node:fs';
import { join } from 'node:path';
import type { z } from 'zod';
import type { RuleIssue } from './rules.js';
import { sameFolderIssues, watchesOf } from './feed-rules.js';
import type { configSchema } from './schema.js';

type Parsed = z.output<typeof configSchema>;

/** How the checks look at a path (fs.promises.stat in the loader). */
export type StatFn = (path: string) => Promise<Stats>;
/** How the checks find a folder's real path, links followed (fs.promises.realpath in the loader). */
export type RealpathFn = (path: string) => Promise<string>;
/** Whether this user may read a file, without reading it (fs.promises.access with R_OK in the loader). */
export type ReadableFn = (path: string) => Promise<void>;

/** What the checks look at beside the files: the file system, and the environment a key may come from instead. */
export interface LocalProbe {
  stat: StatFn;
  realpath: RealpathFn;
  readable: ReadableFn;
  env: NodeJS.ProcessEnv;
}

/**
 * What on this machine would make the service useless although the YAML is
 * right: a key file others can read (the connector refuses it, so its dataset
 * never starts) and a watch folder that is not there. Run by `validate` (the
 * unit's ExecStartPre), so `systemctl start` fails with the fix instead of a
 * service that starts with nothing to do. A key file that is absent or that
 * this user may not read is named too, unless the key would be read from
 * elsewhere first (a systemd credential that is there) or instead (an absent
 * file with the environment variable set): the key is looked for in that
 * order (resolveKey). The key itself is not read (`validate --keys` reads it).
 */
export async function localIssues(config: Parsed, probe: LocalProbe): Promise<RuleIssue[]> {
  const { stat, realpath } = probe;
  const issues: RuleIssue[] = [];
  const keys = [
    ...Object.entries(config.datasets).map(([name, ds]) => ({ path: ['datasets', name, 'api', 'key', 'file'], key: ds.api.key, used: true })),
    // Calls switched off: the service never reads that key, so only its permissions are checked.
    ...(config.alerts?.call ? [{ path: ['alerts', 'call', 'key', 'file'], key: config.alerts.call.key, used: config.alerts.call.enabled }] : []),
  ];
  for (const { path, key, used } of keys) {
    const file = key.file;
    if (file === undefined) continue;
    const st = await stat(file).catch((err: NodeJS.ErrnoException) => err);
    const unused = !used || (await credentialThere(key.credential, probe));
    if (st instanceof Error) {
      if (unused || (st.code === 'ENOENT' && key.env !== undefined && (probe.env[key.env] ?? '').trim() !== '')) continue;
      const why = st.code === 'ENOENT' ? 'does not exist' : `cannot be reached by this user (${st.code ?? st.message})`;
      issues.push({ path, message: `key file ${file} ${why} (expected a file holding only the key, readable by the service user alone: write the key to it and chmod 600 it, or fix the path)` });
      continue;
    }
    if (!unused && !st.isFile()) {
      issues.push({ path, message: `key file ${file} is not a file (expected a file holding only the key: fix the path)` });
      continue;
    }
    const denied = unused ? null : await probe.readable(file).then(() => null, (err: NodeJS.ErrnoException) => err.code ?? err.message);
    if (denied !== null) {
      issues.push({ path, message: `key file ${file} cannot be read by this user (${denied}; expected it to be the service user's, mode 0600: run chown <service user> ${file} && chmod 600 ${file})` });
      continue;
    }
    if ((st.mode & 0o077) !== 0) {
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

/** A systemd credential that is there: the key is read from it, and a key file beside it is not read. */
async function credentialThere(name: string | undefined, probe: LocalProbe): Promise<boolean> {
  const dir = probe.env.CREDENTIALS_DIRECTORY;
  if (name === undefined || !dir) return false;
  return probe.stat(join(dir, name)).then(
    () => true,
    () => false,
  );
}
