import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { DatasetRecord } from '../../model/record.js';
import { fieldValue } from '../../feeds/fields.js';
import type { FeedStateEntry } from '../../feeds/resolve.js';
import { LineWriter } from '../disk/line-file.js';
import { entryLine, readEntries } from '../disk/entry-line.js';
import { SortedSource } from '../disk/sorted-source.js';
import type { PlanFeed } from '../core/plan.js';

/**
 * What a feed's state becomes when its plan is published (issue 13), as the
 * merge stage found it: one entry line a record (record_id, line, {v: values,
 * h: 1 when held hidden}), in the plan's changeset folder under this name, so
 * that approve and crash resume publish the same state as the sync planned.
 */
export const FEED_STATE_FILE = 'feed-state';

/** Writes the merge's state entries to `path`. */
export class FeedStateWriter {
  readonly #w: LineWriter;

  constructor(readonly path: string) {
    this.#w = new LineWriter(path);
  }

  readonly put = (e: FeedStateEntry): void => {
    this.#w.write(entryLine(e.record_id, e.line, JSON.stringify(e.hidden ? { v: e.values, h: 1 } : { v: e.values })));
  };

  close(): void {
    this.#w.close();
  }
}

/**
 * The state entries of a plan's changeset folder (`name`: one file's of a plan
 * several files made, PlanBatchFile.state). A plan written before the merge
 * wrote them (no file) records, as it did then, the feed's fields of the
 * merged records its file listed.
 */
export function* feedStateEntries(folder: string, feed: PlanFeed, name = FEED_STATE_FILE): Generator<FeedStateEntry> {
  const file = join(folder, name);
  if (existsSync(file)) {
    for (const e of readEntries(file)) {
      const { v, h } = JSON.parse(e.json) as { v: Record<string, unknown>; h?: 1 };
      yield { record_id: e.record_id, line: e.line, values: v, ...(h ? { hidden: true as const } : {}) };
    }
    return;
  }
  if (feed.fields.length === 0) return;
  for (const e of SortedSource.inFolder(folder).entries()) {
    if (e.line <= 0) continue;
    const rec = JSON.parse(e.json) as DatasetRecord;
    yield { record_id: e.record_id, line: e.line, values: Object.fromEntries(feed.fields.map((f) => [f, fieldValue(rec, f) ?? null])) };
  }
}
