import { ConnectorError } from '../../errors.js';
import { cleanHeader, headerCleaner, isBlankRow } from '../../sources/header.js';
import { findHeader, type SampleRow } from './layout.js';
import { profileColumn, type ColumnProfile } from './profile.js';
import { keyWithGaps, proposeMapping } from './propose.js';
import { renderConfig, type InitDocument, type SourceFacts } from './render.js';
import { sourceWith, tableScore, type CsvSample, type XlsxSample } from './sample.js';

/** Rows after the header looked at to tell each column's type. */
const PROFILE_ROWS = 1000;

export interface InitOptions {
  dataset: string;
  sheet?: string;
}

export interface InitResult {
  yaml: string;
  /** Said on stderr before the preview: what a person should look at first. */
  warnings: string[];
  columns: ColumnProfile[];
}

/** Nothing can be proposed from the file (an empty sheet, a sheet that is not there). */
export class InitError extends ConnectorError {
  constructor(file: string, message: string) {
    super('INIT_NOTHING_TO_PROPOSE', `${file}: ${message}`, { action: 'stop', context: { file } });
    this.name = 'InitError';
  }
}

function pickSheet(file: string, sample: XlsxSample, wanted: string | undefined): { rows: SampleRow[]; name: string; why: string } {
  const listed = sample.sheets.map((s) => JSON.stringify(s.name)).join(', ');
  if (wanted !== undefined) {
    const s = sample.sheets.find((x) => x.name === wanted);
    if (!s) throw new InitError(file, `no worksheet ${JSON.stringify(wanted)}; worksheets are: ${listed || 'none'}`);
    return { rows: s.rows, name: s.name, why: `the sheet named with --sheet (worksheets: ${listed})` };
  }
  const scored = sample.sheets.map((s) => ({ s, score: tableScore(s.rows) })).sort((a, b) => b.score - a.score);
  const best = scored[0];
  if (!best || best.score === 0) throw new InitError(file, `no worksheet holds a table (worksheets: ${listed || 'none'}); name one with --sheet`);
  const others = scored.slice(1).map((x) => JSON.stringify(x.s.name));
  return {
    rows: best.s.rows,
    name: best.s.name,
    why: `the worksheet that holds a table${others.length ? ` (the others, ${others.join(', ')}, hold ${scored[1]!.score === 0 ? 'no table' : 'smaller ones'}: CHECK)` : ''}`,
  };
}

/** The whole proposal from what was sampled (pure). */
export function buildInit(file: string, sample: CsvSample | XlsxSample, opts: InitOptions): InitResult {
  const warnings: string[] = [];
  let rows: SampleRow[];
  let facts: Omit<SourceFacts, 'header'>;
  if (sample.kind === 'csv') {
    rows = sample.rows;
    facts = { file, kind: 'csv', compression: sample.compression, encoding: sample.encoding, delimiter: sample.delimiter };
    if (sample.encoding.certainty === 'low' || sample.encoding.certainty === 'medium') warnings.push(`encoding: ${sample.encoding.encoding} is a ${sample.encoding.certainty}-certainty guess (${sample.encoding.why})`);
    if (sample.problem) warnings.push(`reading the first rows met: ${sample.problem.message}`);
  } else {
    const sheet = pickSheet(file, sample, opts.sheet);
    rows = sheet.rows;
    facts = { file, kind: 'xlsx', compression: null, sheet: { name: sheet.name, why: sheet.why } };
  }
  const header = findHeader(rows);
  if (!header) throw new InitError(file, 'no rows with any value were found');
  const clean = headerCleaner(sourceWith({ type: facts.kind }));
  const names = cleanHeader(rows[header.index]!.cells, clean);
  const counts = new Map<string, number>();
  for (const n of names) counts.set(n, (counts.get(n) ?? 0) + 1);
  const data = rows.slice(header.index + 1).filter((r) => !isBlankRow(r.cells)).slice(0, PROFILE_ROWS).map((r) => r.cells);
  if (data.length === 0) warnings.push('no data rows below the header in the rows read: the column types are guesses from nothing');
  const delimiter = sample.kind === 'csv' ? sample.delimiter.delimiter : ',';
  const profile = (rowsOf: string[][]) => names.map((n, i) => profileColumn(i, n || `#${i + 1}`, n !== '' && counts.get(n) === 1 ? n : { column_index: i + 1 }, rowsOf, delimiter));
  let columns = profile(data);
  const gappyKey = keyWithGaps(columns);
  // The other columns are judged on the rows the key keeps (a variant row's empty title is not the product's).
  if (gappyKey) columns = profile(data.filter((r) => (r[gappyKey.index] ?? '').trim() !== ''));
  const mapping = proposeMapping(columns, gappyKey);
  const notes = [`columns seen: ${columns.length}, data rows looked at: ${data.length}${sample.kind === 'csv' && sample.rows.length >= 2000 ? ' (the first ones)' : ''}`, ...warnings.map((w) => `CHECK ${w}`)];
  const doc: InitDocument = { dataset: opts.dataset, source: { ...facts, header: { line: header.line, why: header.why, preamble: header.preamble } }, mapping, notes };
  return { yaml: renderConfig(doc), warnings, columns };
}
