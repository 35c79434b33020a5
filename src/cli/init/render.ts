import { TRANSFORM_NAMES } from '../../mapping/transform-config.js';
import type { EncodingGuess } from './encoding.js';
import type { DelimiterGuess, SampleRow } from './layout.js';
import type { MappingProposal } from './propose.js';

const PLAIN = /^[A-Za-z_][A-Za-z0-9_.-]*$/;
const RESERVED = new Set(['true', 'false', 'yes', 'no', 'on', 'off', 'null', 'y', 'n', '~']);

/** A scalar as YAML: bare when that cannot be misread, else double-quoted (JSON's escapes are YAML's). */
function scalar(v: unknown): string {
  if (typeof v === 'number' || typeof v === 'boolean' || v === null) return String(v);
  const s = String(v);
  if (PLAIN.test(s) && !RESERVED.has(s.toLowerCase()) && ((TRANSFORM_NAMES as readonly string[]).includes(s) || s.length <= 40)) return s;
  return JSON.stringify(s);
}

/** A value in YAML flow style, on one line. */
export function flow(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(flow).join(', ')}]`;
  if (v !== null && typeof v === 'object') return `{ ${Object.entries(v).map(([k, x]) => `${scalar(k)}: ${flow(x)}`).join(', ')} }`;
  return scalar(v);
}

/** Text for a comment: one line, no control characters, cut to a readable length. */
export function commentText(s: string, max = 160): string {
  const flat = s.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]+/g, ' ');
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

export interface SourceFacts {
  file: string;
  kind: 'csv' | 'xlsx';
  compression: 'gzip' | 'zip' | null;
  encoding?: EncodingGuess;
  delimiter?: DelimiterGuess;
  sheet?: { name: string; why: string };
  header: { line: number; why: string; preamble: SampleRow[] };
}

export interface InitDocument {
  dataset: string;
  source: SourceFacts;
  mapping: MappingProposal;
  /** Lines said once at the top: what to check first. */
  notes: string[];
}

const DELIMITER_VALUE: Record<string, string> = { ',': '","', ';': '";"', '\t': 'tab', '|': '"|"' };

/** The commented YAML that `init` prints: a whole configuration with one dataset, every guess with its reason. */
export function renderConfig(doc: InitDocument): string {
  const { source: s, mapping } = doc;
  const out: string[] = [];
  const c = (indent: number, text: string) => out.push(`${' '.repeat(indent)}# ${commentText(text, 400)}`);
  out.push(`# Proposed by \`dataset-connector init\` from ${commentText(s.file, 300)}.`);
  out.push('# Every value below was read from the file; the comment above it says why. Check the lines marked CHECK and EDIT,');
  out.push(`# then try it: dataset-connector --config <this file> preview --dataset ${doc.dataset} --file <an export>`);
  for (const n of doc.notes) c(0, n);
  out.push('datasets:');
  out.push(`  ${doc.dataset}:`);
  out.push('    api:');
  out.push('      base_url: https://api.example.com   # EDIT: the service address, without /api/v1/…');
  out.push(`      key: { env: ${doc.dataset.toUpperCase().replace(/[^A-Z0-9]/g, '_')}_KEY }   # EDIT: or { credential: … } / { file: /etc/dataset-connector/keys/… }`);
  out.push('    source:');
  out.push(`      type: ${s.kind}`);
  if (s.compression) c(6, `the file is ${s.compression === 'gzip' ? 'gzip-compressed' : 'a zip holding one CSV'}; it is read as it is (told by content)`);
  if (s.encoding) {
    const e = s.encoding;
    c(6, `${e.certainty === 'low' || e.certainty === 'medium' ? 'CHECK: ' : ''}${e.why}; certainty: ${e.certainty}${e.alternatives.length ? `; also decodes as ${e.alternatives.join(', ')}` : ''}`);
    out.push(`      encoding: ${e.encoding}`);
  }
  if (s.delimiter) {
    c(6, `${s.delimiter.why}; fields quoted: ${s.delimiter.quoting}${s.delimiter.quoting !== 'none' ? ' (with ")' : ''}`);
    out.push(`      delimiter: ${DELIMITER_VALUE[s.delimiter.delimiter]}`);
  }
  if (s.sheet) {
    c(6, s.sheet.why);
    out.push(`      sheet: ${JSON.stringify(s.sheet.name)}`);
  }
  const skip = s.header.line - 1;
  c(6, `header: ${s.header.why}`);
  s.header.preamble.slice(0, 4).forEach((r) => c(6, `  ${s.kind === 'xlsx' ? 'row' : 'line'} ${r.line}: ${JSON.stringify(r.cells.filter((x) => x !== '').join(' | '))}`));
  out.push('      header:');
  out.push(`        skip_lines: ${skip}${skip > 0 ? `   # ${s.kind === 'xlsx' ? 'rows' : 'lines'} before the header; if their number varies, use match: <a header name> instead` : ''}`);
  out.push('      on_row_errors: reject_file   # a file with a bad row publishes nothing; skip_rows leaves bad rows out (up to max_bad_row_ratio)');
  out.push('    mapping:');
  out.push('      fields:');
  for (const f of mapping.fields) {
    c(8, f.why);
    out.push(`        ${f.field}: ${flow(f.spec)}`);
  }
  for (const l of mapping.leftOut) c(8, `left out: ${l}`);
  if (mapping.skipWhenEmpty) {
    out.push('      filters:');
    c(8, mapping.skipWhenEmpty.why);
    out.push(`        skip_when_empty: [${flow(mapping.skipWhenEmpty.ref)}]`);
  }
  out.push('    policy:');
  out.push('      staging: true   # changes are staged, checked, then published; guards hold a mass delete for a person');
  return `${out.join('\n')}\n`;
}
