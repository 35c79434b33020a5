import { lstat, open, readlink, rename, rm, symlink } from 'node:fs/promises';
import { pipeline } from 'node:stream/promises';
import { NEVER_FOLLOW, closeFile, fdReadStream, openRegularFile } from '../sources/open-file.js';

/**
 * Move a directory entry: rename moves a link as the link. Across file
 * systems (processed_dir on another one than the share) a link is made
 * again and a file copied through a descriptor that does not follow links,
 * into a name that must not exist yet: never the target of a link.
 */
export async function moveFile(from: string, to: string): Promise<void> {
  try {
    await rename(from, to);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EXDEV') throw err;
    const entry = await lstat(from);
    if (entry.isSymbolicLink()) await symlink(await readlink(from), to);
    else await copyNoFollow(from, to);
    await rm(from, { force: true });
  }
}

async function copyNoFollow(from: string, to: string): Promise<void> {
  const src = await openRegularFile(from, NEVER_FOLLOW);
  try {
    const out = await open(to, 'wx', 0o640);
    try {
      await pipeline(fdReadStream(src.fd), out.createWriteStream({ autoClose: false }));
      await out.sync();
    } finally {
      await out.close();
    }
  } finally {
    await closeFile(src.fd);
  }
}
