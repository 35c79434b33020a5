import { readFile, stat } from 'node:fs/promises';
import { userInfo } from 'node:os';
import { join } from 'node:path';
import { ConnectorError } from '../errors.js';
import { registerSecret } from '../log/secret-registry.js';
import { Secret } from '../secret.js';
import type { KeySource } from './key-source.js';

/** Where a resolved key came from. */
export interface ResolvedKey {
  secret: Secret;
  from: 'credential' | 'file' | 'env';
  /** The credential file, key file or variable name (never the key). */
  location: string;
  /** Things a person should know (a key that does not look like a dataset key). */
  warnings: string[];
}

/**
 * Read a dataset key from its source, in order of preference: systemd
 * credential ($CREDENTIALS_DIRECTORY/<name>), then file (refused when group
 * or others may read it), then environment variable. The key is registered
 * with the log scrubber before it is returned.
 */
export async function resolveKey(
  source: KeySource,
  env: NodeJS.ProcessEnv = process.env,
  opts: { warn?: (message: string) => void; what?: string } = {},
): Promise<Secret> {
  const resolved = remember(made(await readSource(source, env, opts.what)), source, env);
  for (const w of resolved.warnings) opts.warn?.(w);
  return resolved.secret;
}

/** Where each key resolveKey gave was read from (the source, never the value), so it can be read again. */
const readFrom = new WeakMap<Secret, { source: KeySource; env: NodeJS.ProcessEnv }>();

/**
 * Read the source of a key that resolveKey gave again: after a 401 the shop
 * may have reissued the key in the portal and written the new one to the key
 * file (spec: the old key works for at most 24 hours after a reissue). Returns
 * the new key, where it was read and its warnings (an account key, …) when
 * the source now holds a different one; undefined when it holds the same, or
 * when `current` was not read by resolveKey. Throws like resolveKey when the
 * source cannot be read. A systemd credential is a copy systemd made at
 * start, so it changes only with a restart.
 */
export async function rereadKey(current: Secret): Promise<ResolvedKey | undefined> {
  const from = readFrom.get(current);
  if (!from) return undefined;
  // Compared before a Secret is made: an unchanged key (every refused request while the
  // source is not fixed) registers nothing new with the log scrubber.
  const raw = await readSource(from.source, from.env);
  if (raw.value === current.reveal()) return undefined;
  return remember(made(raw), from.source, from.env);
}

/** resolveKey with where the key came from and any warnings (for `doctor`). */
export async function resolveKeyDetailed(source: KeySource, env: NodeJS.ProcessEnv = process.env): Promise<ResolvedKey> {
  return remember(made(await readSource(source, env)), source, env);
}

function remember(resolved: ResolvedKey, source: KeySource, env: NodeJS.ProcessEnv): ResolvedKey {
  readFrom.set(resolved.secret, { source, env });
  return resolved;
}

/** A key as read from its source, before it becomes a Secret. */
interface RawKey {
  value: string;
  from: ResolvedKey['from'];
  location: string;
}

/** `what`: the key's name in messages ("dataset key", "A2A key"). */
async function readSource(source: KeySource, env: NodeJS.ProcessEnv, what = 'dataset key'): Promise<RawKey> {
  const tried: string[] = [];
  if (source.credential !== undefined) {
    const dir = env.CREDENTIALS_DIRECTORY;
    if (dir) {
      const path = join(dir, source.credential);
      const value = await readIfExists(path);
      if (value !== null) return finish(value, 'credential', path);
      tried.push(`systemd credential "${source.credential}" (no ${path})`);
    } else {
      tried.push(`systemd credential "${source.credential}" ($CREDENTIALS_DIRECTORY is not set: add LoadCredential=${source.credential}:/path/to/key to the unit)`);
    }
  }
  if (source.file !== undefined) {
    const info = await stat(source.file).catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') return null;
      throw keyError('KEY_UNREADABLE', `cannot read key file ${source.file}: ${err.code ?? err.message}`, source.file, err);
    });
    if (info) {
      // Refuse before reading: a key others can read is already compromised.
      if ((info.mode & 0o077) !== 0) {
        const mode = (info.mode & 0o777).toString(8).padStart(4, '0');
        throw keyError('KEY_FILE_PERMISSIONS', `key file ${source.file} is readable or writable by group or others (mode ${mode}): run chmod 600 ${source.file}`, source.file);
      }
      const file = source.file;
      const value = await readFile(file, 'utf8').catch((err: NodeJS.ErrnoException) => {
        throw keyError('KEY_UNREADABLE', `cannot read key file ${source.file}: ${err.code ?? err.message}${ownerHint(err, file)}`, source.file, err);
      });
      return finish(value, 'file', source.file);
    }
    tried.push(`file ${source.file} (not found)`);
  }
  if (source.env !== undefined) {
    const value = env[source.env];
    if (value !== undefined && value.trim() !== '') return finish(value, 'env', source.env);
    tried.push(`environment variable ${source.env} (not set)`);
  }
  throw keyError('KEY_NOT_FOUND', `no ${what} found; tried: ${tried.join('; ')}`, undefined);
}

function finish(raw: string, from: ResolvedKey['from'], location: string): RawKey {
  const value = raw.trim();
  if (value === '') throw keyError('KEY_NOT_FOUND', `the key in ${from} ${location} is empty`, location);
  // A key goes into an HTTP header: a line break or space inside it would be refused by the HTTP client
  // as a network error (UND_ERR_INVALID_ARG), far from its cause. Say what is wrong, never what it holds.
  const bad = /[\r\n]/.test(value) ? 'more than one line' : /\s/.test(value) ? 'a space or tab inside it' : /[^\x21-\x7e]/.test(value) ? 'a character that is not printable ASCII' : null;
  if (bad !== null) {
    throw keyError('KEY_MALFORMED', `the key in ${from} ${location} is malformed: it holds ${bad} (expected only the key, tbd_live_…, on one line): write the key alone to it`, location);
  }
  return { value, from, location };
}

/** The Secret of a key read (registered with the log scrubber) and what a person should know about it. */
function made({ value, from, location }: RawKey): ResolvedKey {
  const secret = new Secret(value);
  registerSecret(secret);
  const warnings: string[] = [];
  // A23: dataset keys start with tbd_live_; account keys (tba_live_) are refused by the API.
  if (value.startsWith('tba_live_')) {
    warnings.push(`the key from ${from} ${location} is an account key (tba_live_…): the dataset API refuses it (ACCOUNT_KEY_NOT_SUPPORTED); issue a dataset key on the dataset's external API tab`);
  } else if (!value.startsWith('tbd_live_')) {
    warnings.push(`the key from ${from} ${location} does not start with tbd_live_: it does not look like a dataset key`);
  }
  return { secret, from, location, warnings };
}

async function readIfExists(path: string): Promise<string | null> {
  try {
    return await readFile(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw keyError('KEY_UNREADABLE', `cannot read ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`, path, err);
  }
}

/** What to run when the user the connector runs as may not read its key file. */
function ownerHint(err: NodeJS.ErrnoException, file: string): string {
  if (err.code !== 'EACCES') return '';
  let user: string;
  try {
    user = userInfo().username;
  } catch {
    user = String(process.getuid?.() ?? 'the service user');
  }
  return ` (the connector runs as ${user} here: the key file must be theirs alone; run chown ${user} ${file} && chmod 600 ${file})`;
}

function keyError(code: string, message: string, file: string | undefined, cause?: unknown): ConnectorError {
  return new ConnectorError(code, message, { action: 'stop', cause, context: { file, setting: 'api.key' } });
}
