import { constants } from 'node:fs';
import { access, stat } from 'node:fs/promises';
import { dirname, isAbsolute, join } from 'node:path';
import { ApiError } from '../../api/errors.js';
import type { SharedRateWindow } from '../../api/rate-limiter.js';
import { DatasetClient } from '../../api/client.js';
import { clientOptionsFor } from '../../config/client-options.js';
import { resolveKeyDetailed } from '../../config/key.js';
import type { DatasetConfig } from '../../config/schema.js';
import { ConnectorError } from '../../errors.js';
import type { Secret } from '../../secret.js';

/** One finding of `doctor`. */
export interface Finding {
  /** The dataset checked; null for what all datasets share (the state db). */
  dataset: string | null;
  check: string;
  status: 'ok' | 'warn' | 'fail' | 'info';
  message: string;
}

type Add = (check: string, status: Finding['status'], message: string) => void;

/**
 * Run every check of one dataset: key, dataset read (A25), versions (A18),
 * roles, folders. Its requests take slots in `rateWindow` (the state db's),
 * so that a running daemon and doctor together stay under the key's rate.
 */
export async function checkDataset(ds: DatasetConfig, env: NodeJS.ProcessEnv, rateWindow?: SharedRateWindow): Promise<Finding[]> {
  const findings: Finding[] = [];
  const add: Add = (check, status, message) => findings.push({ dataset: ds.name, check, status, message });
  const key = await checkKey(ds, env, add);
  if (key) await checkApi(ds, key, add, rateWindow);
  await checkFolders(ds, add);
  return findings;
}

async function checkKey(ds: DatasetConfig, env: NodeJS.ProcessEnv, add: Add): Promise<Secret | null> {
  try {
    const r = await resolveKeyDetailed(ds.api.key, env);
    add('key', 'ok', `read from ${r.from} ${r.location} (${r.secret.hint()})`);
    for (const w of r.warnings) add('key', r.secret.reveal().startsWith('tba_live_') ? 'fail' : 'warn', w);
    return r.secret;
  } catch (err) {
    if (!(err instanceof ConnectorError)) throw err;
    add('key', 'fail', err.message);
    return null;
  }
}

/** What a person should do for each refusal of the dataset read. */
const API_ADVICE: Record<string, string> = {
  API_DISABLED: "the dataset's external API switch is off: turn it on in the portal (dataset → external API tab)",
  ACCOUNT_KEY_NOT_SUPPORTED: "this is an account key: issue a dataset key (tbd_live_…) on the dataset's external API tab",
  UNAUTHORIZED: 'the key is wrong, revoked or expired: issue a new dataset key in the portal',
  DATASET_NOT_FOUND: 'no such dataset for this key: check api.dataset_id, and that the key was issued for this dataset',
  FORBIDDEN: 'the key lacks the read role, which the connector needs: reissue it with read, write, replace and publish',
  NETWORK_ERROR: 'cannot connect: check api.base_url, DNS, proxy and firewall',
  TIMEOUT: 'no answer in time: check api.base_url and the network',
};

async function checkApi(ds: DatasetConfig, key: Secret, add: Add, rateWindow: SharedRateWindow | undefined): Promise<void> {
  const client = new DatasetClient(
    clientOptionsFor(ds, key, { retry: { maxAttempts: 2, maxThrottleAttempts: 2, maxRetryAfterMs: 5_000 }, ...(rateWindow ? { rateWindow } : {}) }),
  );
  try {
    const { value } = await client.getDataset();
    add('dataset', 'ok', `reachable: ${value.name ?? value.dataset_id}, ${value.record_count} records, active version ${value.active_version}`);
    if (value.draft_version !== null) {
      add('draft', 'warn', `draft version ${value.draft_version} is pending: writes wait until it is published or discarded (see status, approve, discard)`);
    }
    const versions = await client.listVersions();
    add('versions', 'ok', `readable: active version ${versions.value.active_version}, ${versions.value.versions.length} listed`);
    add('roles', 'ok', 'read: yes (dataset and versions were read)');
    add(
      'roles',
      'info',
      'write, replace and publish cannot be seen without writing; a missing one shows on the first sync (FORBIDDEN, or writes staged with publish_denied). With staging on, a key without publish stages changes for a person to publish',
    );
    add(
      'legacy',
      'info',
      'if the portal lists this key as a legacy key (issued before roles), it publishes every write at once, even drafts (A12): staging and guards cannot hold its changes; reissue it',
    );
  } catch (err) {
    if (!(err instanceof ApiError)) throw err;
    const advice = API_ADVICE[err.code] ?? err.message;
    add('dataset', 'fail', `${err.code}${err.status ? ` (HTTP ${err.status})` : ''}: ${advice}`);
  } finally {
    await client.close();
  }
}

async function checkFolders(ds: DatasetConfig, add: Add): Promise<void> {
  const w = ds.watch;
  if (w) {
    const ok = await checkDir(w.path, constants.R_OK | constants.X_OK | (w.after === 'leave' ? 0 : constants.W_OK));
    add('watch', ok === null ? 'ok' : 'fail', ok === null ? `folder ${w.path} is readable${w.after === 'leave' ? '' : ' and writable'}` : `folder ${w.path}: ${ok}`);
    if (ok === null && w.after === 'move') {
      for (const sub of [w.processed_dir, w.failed_dir]) {
        const dir = isAbsolute(sub) ? sub : join(w.path, sub);
        const problem = await checkDir(dir, constants.W_OK | constants.X_OK);
        if (problem === null) add('watch', 'ok', `folder ${dir} is writable`);
        else if (problem.startsWith('does not exist')) add('watch', (await checkDir(dirname(dir), constants.W_OK)) === null ? 'ok' : 'fail', `folder ${dir} will be created on first use`);
        else add('watch', 'fail', `folder ${dir}: ${problem}`);
      }
    }
  }
  for (const s of ds.schedules) {
    if (s.type !== 'reread') continue;
    const problem = await checkDir(dirname(s.path), constants.R_OK | constants.X_OK);
    add('schedule', problem === null ? 'ok' : 'fail', problem === null ? `folder of ${s.path} is readable` : `folder of ${s.path}: ${problem}`);
  }
}

/** null when `dir` is a directory with the given access; else why not. */
async function checkDir(dir: string, mode: number): Promise<string | null> {
  try {
    const st = await stat(dir);
    if (!st.isDirectory()) return 'is not a folder';
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ENOENT' ? 'does not exist' : `cannot be read (${(err as NodeJS.ErrnoException).code})`;
  }
  try {
    await access(dir, mode);
    return null;
  } catch {
    const need = [mode & constants.R_OK && 'read', mode & constants.W_OK && 'write', mode & constants.X_OK && 'enter'].filter(Boolean).join(', ');
    return `permission denied for this user (needs ${need})`;
  }
}
