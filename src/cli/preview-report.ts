import type { DatasetRecord } from '../model/record.js';
import type { MappingConfig } from '../mapping/config.js';
import type { SourceConfig } from '../sources/config.js';
import { readExport } from '../sources/read.js';
import { SourceError } from '../model/source-error.js';
import { rowErrorVerdict } from '../sources/pipeline.js';
import type { ExportResult } from '../sources/types.js';
import type { RowError } from '../model/row-error.js';
import { safeJson, visible } from './terminal-text.js';
import { ALWAYS_FOLLOW } from '../sources/open-file.js';
import type { CommandsConfig } from '../config/feeds.js';
import { changeRow } from '../feeds/merge-changes.js';

/** Columns of a terminal: East Asian wide and full-width characters take two. */
function width(s: string): number {
  let w = 0;
  for (const ch of s) w += /[\u1100-\u115F\u2E80-\uA4CF\uAC00-\uD7A3\uF900-\uFAFF\uFE30-\uFE4F\uFF00-\uFF60\uFFE0-\uFFE6]|[\u{1F300}-\u{1FAFF}]/u.test(ch) ? 2 : 1;
  return w;
}

function fit(s: string, max: number): string {
  const flat = visible(s.replace(/[\r\n\t]+/g, ' '));
  if (width(flat) <= max) return flat;
  let out = '';
  for (const ch of flat) {
    if (width(out + ch) > max - 1) break;
    out += ch;
  }
  return `${out}…`;
}

/** A plain text table (no colours, so it can be pasted into a ticket). */
export function table(headers: string[], rows: string[][], maxCell = 32): string {
  const cells = rows.map((r) => r.map((c) => fit(c, maxCell)));
  headers = headers.map(visible);
  const widths = headers.map((h, i) => Math.max(width(h), ...cells.map((r) => width(r[i] ?? ''))));
  const line = (r: string[]) => r.map((c, i) => c + ' '.repeat(widths[i]! - width(c))).join('  ').trimEnd();
  return [line(headers), line(widths.map((w) => '-'.repeat(w))), ...cells.map(line)].join('\n');
}

function recordRow(line: number, r: DatasetRecord): string[] {
  return [String(line), r.record_id, r.display_name, r.api_value, r.aliases.join('|'), String(r.active), JSON.stringify(r.attributes)];
}

function errorRow(e: RowError): string[] {
  return [String(e.line), e.column, e.value, e.code, e.reason];
}

export interface PreviewOptions {
  /** Records shown in the table. */
  limit: number;
  /** Every record and row error as JSON lines, then a summary line. */
  json?: boolean;
  /** A change list's command column (issue 13): its rows are checked as the sync checks them, and the command attribute is not shown. */
  changes?: { commands: CommandsConfig; column: string; hasRequired: boolean };
}

/**
 * Read an export through a source and mapping and write what came of it:
 * the first records, every row error (line, column, reason), the counts and
 * the verdict under the source's real on_row_errors policy. Every row is
 * mapped (bad rows do not stop it), so a person sees all problems at once.
 * Sends nothing. Returns the verdict (null when the file would be used).
 */
export async function previewExport(file: string, source: SourceConfig, mapping: MappingConfig, out: NodeJS.WritableStream, opts: PreviewOptions): Promise<{ result: ExportResult; rejected: SourceError | null }> {
  const { limit } = opts;
  // The operator named the file: a link is followed.
  const reader = readExport(file, { ...source, on_row_errors: 'skip_rows', max_bad_row_ratio: 1 }, mapping, { links: ALWAYS_FOLLOW });
  const shown: string[][] = [];
  // A change list's rows the sync would not apply (an unknown command word, a create without its fields): bad rows as the reader's.
  const refused: RowError[] = [];
  try {
    for await (const batch of reader.batches()) {
      for (let i = 0; i < batch.records.length; i++) {
        let r = batch.records[i]!;
        if (opts.changes) {
          const c = changeRow(r, batch.lines[i]!, opts.changes);
          const incomplete = c.cmd === 'create' && (!opts.changes.hasRequired || !r.display_name || !r.api_value);
          if (c.problem) refused.push({ file, line: c.problem.line, column: 'command', value: c.problem.value, reason: c.problem.reason, code: 'INVALID_COMMAND' });
          else if (incomplete) refused.push({ file, line: batch.lines[i]!, column: 'record', value: c.word, reason: 'create needs display_name and api_value: map them in this feed', code: 'INVALID_RECORD' });
          if (c.problem || incomplete) continue;
          r = c.record;
        }
        if (opts.json) out.write(`${safeJson({ type: 'record', line: batch.lines[i], record: r })}\n`);
        else if (shown.length < limit) shown.push(recordRow(batch.lines[i]!, r));
      }
    }
  } catch (err) {
    if (!(err instanceof SourceError)) throw err;
  }
  const read = reader.result as ExportResult;
  const result = refused.length === 0 ? read : withRefused(read, refused);
  const rejected = result.rejected ?? rowErrorVerdict(file, result.counts, source);
  const summary = {
    file,
    sha256: result.sha256,
    header: result.header,
    counts: result.counts,
    row_errors_truncated: result.row_errors_truncated,
    rejected: rejected && { code: rejected.code, message: rejected.message, line: rejected.context.line ?? null },
  };
  if (opts.json) {
    for (const e of result.row_errors) out.write(`${safeJson({ type: 'row_error', ...e })}\n`);
    out.write(`${safeJson({ type: 'summary', ...summary })}\n`);
  } else {
    const text: string[] = [`file: ${visible(file)}`, `columns: ${visible(result.header.join(' | '))}`, ''];
    if (shown.length > 0) {
      text.push(`first ${shown.length} of ${result.counts.records} records:`, table(['line', 'record_id', 'display_name', 'api_value', 'aliases', 'active', 'attributes'], shown), '');
    }
    if (result.row_errors.length > 0) {
      text.push(`row errors${result.row_errors_truncated ? ` (first ${result.row_errors.length} of ${result.counts.row_errors})` : ''}:`);
      text.push(table(['line', 'column', 'value', 'code', 'reason'], result.row_errors.map(errorRow), 80), '');
    }
    const c = result.counts;
    text.push(`rows ${c.rows}, records ${c.records}, filtered ${c.filtered}, bad rows ${c.bad_rows}, row errors ${c.row_errors}`);
    text.push(rejected ? `verdict: the file would be rejected [${rejected.code}]: ${visible(rejected.message)}` : 'verdict: the file would be used');
    out.write(`${text.join('\n')}\n`);
  }
  return { result, rejected };
}

/** A read with a change list's refused rows counted as bad rows and listed among its row errors by line. */
function withRefused(read: ExportResult, refused: RowError[]): ExportResult {
  const n = refused.length;
  const counts = { ...read.counts, records: read.counts.records - n, bad_rows: read.counts.bad_rows + n, row_errors: read.counts.row_errors + n };
  return { ...read, counts, row_errors: [...read.row_errors, ...refused].sort((a, b) => a.line - b.line) };
}
