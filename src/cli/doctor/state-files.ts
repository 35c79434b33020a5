import { accessSync, constants, existsSync, statSync } from 'node:fs';
import { stat } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { openCurrentStateDb, type StateDb } from '../../snapshot/db.js';
import { planDir } from '../../sync/executor/plan-files.js';
import type { Finding } from './checks.js';

/** A path as one shell word (quoted only when it needs to be). */
export function shellWord(path: string): string {
  return /^[\w@%+=:,./-]+$/.test(path) ? path : `'${path.replace(/'/g, `'\\''`)}'`;
}

/** "group", "others" or "group and others" for the bits of `mode` in `groupBits`/`otherBits`; null when neither. */
function who(mode: number, groupBits: number, otherBits: number): string | null {
  const g = (mode & groupBits) !== 0;
  const o = (mode & otherBits) !== 0;
  return g && o ? 'group and others' : g ? 'group' : o ? 'others' : null;
}

/**
 * Check that the state db (and its -wal/-shm) and the plans folder under
 * `stateDir`, when they exist, are private to their owner: they hold the
 * shop's records. Each one group or others can read is a warning (never a
 * failure: the connector works, the data is just exposed) with the exact
 * chmod to run; the connector never changes the mode of what exists. Reads
 * only metadata, creates nothing.
 */
export async function checkStateFiles(stateDir: string): Promise<Finding[]> {
  const findings: Finding[] = [];
  const add = (status: Finding['status'], message: string) => findings.push({ dataset: null, check: 'state', status, message });
  const db = join(stateDir, 'state.db');
  const targets = [
    { path: db, folder: false },
    { path: `${db}-wal`, folder: false },
    { path: `${db}-shm`, folder: false },
    { path: planDir(db), folder: true },
  ];
  let seen = 0;
  for (const t of targets) {
    let mode: number;
    try {
      const st = await stat(t.path);
      mode = st.mode & 0o777;
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== 'ENOENT') add('info', `${t.path} cannot be checked (${code}): run doctor as the user the connector runs as`);
      continue;
    }
    seen++;
    const octal = mode.toString(8).padStart(4, '0');
    const open = t.folder ? who(mode, 0o050, 0o005) : who(mode, 0o040, 0o004);
    if (open === null) continue;
    if (t.folder) add('warn', `folder ${t.path} can be listed or entered by ${open} (mode ${octal}); its plans hold the shop's records: run chmod 700 ${shellWord(t.path)}`);
    else add('warn', `${t.path} is readable by ${open} (mode ${octal}); it holds the shop's records: run chmod 600 ${shellWord(t.path)}`);
  }
  if (findings.length === 0) {
    add(seen ? 'ok' : 'info', seen ? `state db and plans in ${stateDir} are private to their owner` : `no state db in ${stateDir} yet; it will be created private (folder 0700, files 0600)`);
  }
  return findings;
}

/**
 * The state db under `stateDir` when it exists at this build's schema, for
 * its shared request window: doctor's reads then count with the daemon's
 * (A24). Doctor creates and migrates nothing: without one, no process of
 * this build uses the window yet and its reads count in this process only.
 * One that cannot be opened is said as a finding.
 */
export function openExistingStateDb(stateDir: string): { db: StateDb | undefined; findings: Finding[] } {
  // A fresh state_dir has nothing to open (not an unreadable file): the first start creates it, if it can.
  if (!existsSync(join(stateDir, 'state.db'))) return { db: undefined, findings: creatable(stateDir) };
  try {
    return { db: openCurrentStateDb(join(stateDir, 'state.db')), findings: [] };
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    return { db: undefined, findings: [{ dataset: null, check: 'state', status: 'warn', message: `${message} (doctor's requests are not counted in the shared rate window)` }] };
  }
}

/** Whether the first start can create the state db in `stateDir`: the folder, or the nearest one above it that exists, is a folder it may write. */
function creatable(stateDir: string): Finding[] {
  const finding = (status: Finding['status'], message: string): Finding[] => [{ dataset: null, check: 'state', status, message }];
  let dir = stateDir;
  while (!existsSync(dir) && dirname(dir) !== dir) dir = dirname(dir);
  const made = dir === stateDir ? '' : ` (${dir} exists; the folders below it are made too)`;
  if (!statSync(dir).isDirectory()) return finding('fail', `state_dir ${stateDir} cannot be created: ${dir} is a file, not a folder; set state_dir to a folder the connector may write`);
  try {
    accessSync(dir, constants.W_OK | constants.X_OK);
  } catch {
    return finding('fail', `state_dir ${stateDir} cannot be created: ${dir} is not writable by this user; run doctor as the user the connector runs as, or give it the folder (chown), or set state_dir elsewhere`);
  }
  return finding('info', `no state database in ${stateDir} yet: the first start creates it${made}`);
}
