import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { ConnectorError } from '../errors.js';

const KEEP_MS = 7 * 24 * 60 * 60 * 1000;

/**
 * When alert calls were placed, per dataset. Written before each call is
 * placed (intent first), so a call whose outcome is unknown, or a restart,
 * never leads to a second call inside the window. Optional JSON file
 * (written to a temp file, then renamed).
 */
export class AlertHistory {
  readonly #calls = new Map<string, number[]>();
  #writing: Promise<void> = Promise.resolve();

  private constructor(private readonly path: string | undefined) {}

  /** Open the history (from `path` when given; a missing file is an empty history). */
  static async open(path?: string): Promise<AlertHistory> {
    const h = new AlertHistory(path);
    if (path === undefined) return h;
    let text: string;
    try {
      text = await readFile(path, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return h;
      throw new ConnectorError('ALERT_HISTORY_UNREADABLE', `cannot read alert history ${path}`, { action: 'stop', cause: err, context: { file: path } });
    }
    try {
      const json = JSON.parse(text) as { calls?: Record<string, unknown> };
      for (const [ds, times] of Object.entries(json.calls ?? {})) {
        if (Array.isArray(times)) h.#calls.set(ds, times.filter((t): t is number => typeof t === 'number'));
      }
    } catch (cause) {
      // Refused rather than guessed at: starting empty could ring a phone twice.
      throw new ConnectorError('ALERT_HISTORY_CORRUPT', `alert history ${path} is not JSON; remove it to start afresh`, {
        action: 'stop',
        cause,
        context: { file: path },
      });
    }
    return h;
  }

  /** Times of alert calls by dataset. */
  get calls(): ReadonlyMap<string, readonly number[]> {
    return this.#calls;
  }

  /** Record a call about to be placed (in memory at once; on disk before it returns). */
  async record(dataset: string, at: number): Promise<void> {
    const list = (this.#calls.get(dataset) ?? []).filter((t) => t > at - KEEP_MS);
    list.push(at);
    this.#calls.set(dataset, list);
    await this.#save();
  }

  #save(): Promise<void> {
    const path = this.path;
    if (path === undefined) return Promise.resolve();
    const body = JSON.stringify({ version: 1, calls: Object.fromEntries(this.#calls) });
    this.#writing = this.#writing.then(async () => {
      await mkdir(dirname(path), { recursive: true });
      const tmp = `${path}.${process.pid}.tmp`;
      await writeFile(tmp, body, { mode: 0o600 });
      await rename(tmp, path);
    });
    return this.#writing;
  }
}
