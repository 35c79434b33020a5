import type { FeedSummary } from '../sync/outcome.js';
import { rejectFilePath } from '../sources/reject-file.js';

/**
 * What a person on a terminal must hear of a feed's rows that matched no
 * record (issue 13): how many, the first ids, and the reject file that lists
 * them all. `sync` has written it; `plan` says where a sync would. Null: none.
 */
export function unmatchedLine(feed: FeedSummary | undefined, file: string | null, written: boolean): string | null {
  const n = feed?.unmatched ?? 0;
  if (!feed || n === 0) return null;
  const first = feed.firstUnmatched;
  const more = n - first.length;
  const ids = first.length > 0 ? `first: ${first.join(', ')}${more > 0 ? ` and ${more} more` : ''}` : '';
  // A plan of several files (joined with " + ") has one reject file each, beside its file.
  const where = file && !file.includes(' + ') ? rejectFilePath(file) : "each file's .rejected.csv";
  // Past source.max_row_errors_kept the reject file lists the first ones only (the count is exact).
  const listed = feed.unmatchedListed === undefined ? null : `the first ${feed.unmatchedListed} (source.max_row_errors_kept)`;
  const all = written ? `${listed ?? 'all'} in ${where}` : `a sync lists ${listed ?? 'them all'} in ${where}`;
  const verb = written ? 'matched' : 'would match';
  return `${n} row${n === 1 ? '' : 's'} ${verb} no record (${[ids, all].filter(Boolean).join('; ')})`;
}
