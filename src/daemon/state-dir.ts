import { mkdir, open } from 'node:fs/promises';
import { join } from 'node:path';

/**
 * Make the state folder (0700) and an empty state.db (0600) when they do not
 * exist yet, so a daemon started outside systemd (no StateDirectoryMode=,
 * UMask=) does not leave the snapshot readable by others. SQLite gives its
 * -wal and -shm files the mode of the database file. Existing ones are not
 * changed.
 */
export async function prepareStateDir(dir: string): Promise<string> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const db = join(dir, 'state.db');
  // 'a': created with 0600 when absent, left as it is (content and mode) when present.
  await (await open(db, 'a', 0o600)).close();
  return db;
}
