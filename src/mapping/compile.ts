import { validateRecord, type AttributeValue, type DatasetRecord } from '../model/record.js';
import { boundText } from '../sources/excerpt.js';
import type { RowError } from '../sources/types.js';
import type { FieldSpec, MappingConfig } from './config.js';
import { HeaderIndex, type Column } from './columns.js';
import { booleanParser, compileTransforms, splitter, type Transform } from './transforms.js';
import { ValueError, asText, type Value } from './value.js';
import { quickValidFor } from './quick-check.js';

/** `map` found the row filtered out by the mapping's filters. */
export const FILTERED = Symbol('filtered');
/** `map` found the row bad; its row errors were appended. */
export const BAD = Symbol('bad');

/** Maps one file's rows (cells by position) to validated records. */
export interface RowMapper {
  readonly header: string[];
  map(cells: string[], line: number, errors: RowError[]): DatasetRecord | typeof FILTERED | typeof BAD;
}

interface CompiledField {
  field: string;
  /** Header name blamed in row errors (the field name when several columns feed it). */
  column: string;
  /** The cell's position when the field is one column (read inline, the common case), else -1 and `get`. */
  index: number;
  get: (cells: string[]) => Value;
  transform: Transform | null;
}

const MAX_VALUE_CHARS = 100;
const MAX_REASON_CHARS = 300;
/** Values in row errors are cut to 100 characters. */
export function truncateValue(v: string): string {
  return v.length > MAX_VALUE_CHARS ? `${v.slice(0, MAX_VALUE_CHARS - 1)}…` : v;
}

type Source = Pick<CompiledField, 'get' | 'column'> & { index?: number };

function compileSource(spec: Exclude<FieldSpec, string>, field: string, header: HeaderIndex): Source {
  const one = (c: Column) => ({ index: c.index, get: (cells: string[]) => cells[c.index] ?? '', column: c.name });
  if (spec.column !== undefined) return one(header.resolve(spec.column, field));
  if (spec.column_index !== undefined) return one(header.resolve({ column_index: spec.column_index }, field));
  if (spec.column_pattern !== undefined) return one(header.resolve({ column_pattern: spec.column_pattern }, field));
  if (spec.const !== undefined) {
    const c = spec.const;
    return { get: () => c, column: field };
  }
  if (spec.columns !== undefined) {
    const cols = spec.columns.map((ref) => header.resolve(ref, field));
    const sep = spec.separator;
    return {
      column: cols.length === 1 ? cols[0]!.name : field,
      get: (cells) => {
        const parts: string[] = [];
        for (const c of cols) {
          const v = (cells[c.index] ?? '').trim();
          if (v !== '') parts.push(v);
        }
        return parts.join(sep);
      },
    };
  }
  // template: literal text with {Header} or {#n} placeholders
  const pieces: Array<string | Column> = [];
  const re = /\{([^{}]+)\}/g;
  let last = 0;
  const template = spec.template!;
  for (let m = re.exec(template); m; m = re.exec(template)) {
    if (m.index > last) pieces.push(template.slice(last, m.index));
    const name = m[1]!;
    const byIndex = /^#(\d+)$/.exec(name);
    pieces.push(header.resolve(byIndex ? { column_index: Number(byIndex[1]) } : name, field));
    last = re.lastIndex;
  }
  if (last < template.length) pieces.push(template.slice(last));
  return {
    column: field,
    get: (cells) => {
      let s = '';
      for (const p of pieces) s += typeof p === 'string' ? p : (cells[p.index] ?? '');
      return s.trim();
    },
  };
}

const toAliases = splitter('|');
const toActive = booleanParser(['true', 'y', 'yes', '1'], ['false', 'n', 'no', '0']);

function toText(v: Value): string {
  return typeof v === 'string' ? v : asText(v);
}

function toAttribute(v: Value): AttributeValue {
  return Array.isArray(v) ? v.join('|') : v;
}

/** Compile the mapping against one file's header (file-level SourceError when a column cannot be found). */
export function compileMapping(mapping: MappingConfig, names: string[], file: string, headerLine: number): RowMapper {
  const header = new HeaderIndex(names, file, headerLine);
  const fields: CompiledField[] = Object.entries(mapping.fields).map(([field, spec]) => {
    const s = typeof spec === 'string' ? { column: spec, separator: '-', transforms: [] } : spec;
    const { get, column, index = -1 } = compileSource(s, field, header);
    return { field, column, index, get, transform: compileTransforms(s.transforms) };
  });
  const byName = new Map(fields.map((f) => [f.field, f]));
  const attrFields = fields.filter((f) => f.field.startsWith('attributes.'));
  const attrKeys = attrFields.map((f) => f.field.slice(11));
  const quickValid = quickValidFor(attrKeys);
  const skipEmpty = mapping.filters.skip_when_empty.map((ref) => header.resolve(ref, 'filters.skip_when_empty').index);
  const keep = mapping.filters.keep_when_match.map((k) => ({
    index: header.resolve(k.column, 'filters.keep_when_match').index,
    re: new RegExp(k.pattern, 'u'),
  }));
  const width = names.length;
  const f = (name: string) => byName.get(name) ?? null;
  const [fId, fName, fValue, fAliases, fActive] = [f('record_id')!, f('display_name')!, f('api_value')!, f('aliases'), f('active')];

  const fail = (errors: RowError[], line: number, column: string, value: string, reason: string, code: RowError['code']) =>
    // The reason may quote the cell: bounded and escaped like every message quoting a file (issue 11).
    errors.push({ file, line, column, value: truncateValue(value), reason: boundText(reason, MAX_REASON_CHARS), code });
  const value = (cf: CompiledField, cells: string[], line: number, errors: RowError[]): Value => {
    const raw = cf.index >= 0 ? (cells[cf.index] ?? '') : cf.get(cells);
    if (cf.transform === null) return raw;
    try {
      return cf.transform(raw);
    } catch (err) {
      if (!(err instanceof ValueError)) throw err;
      fail(errors, line, cf.column, err.value, `${cf.field}: ${err.message}`, err.code as RowError['code']);
      return null;
    }
  };

  return {
    header: names,
    map(cells, line, errors) {
      for (let i = 0; i < skipEmpty.length; i++) if ((cells[skipEmpty[i]!] ?? '').trim() === '') return FILTERED;
      for (let i = 0; i < keep.length; i++) if (!keep[i]!.re.test(cells[keep[i]!.index] ?? '')) return FILTERED;
      const before = errors.length;
      for (let i = width; i < cells.length; i++) {
        if (cells[i] !== '') fail(errors, line, `#${i + 1}`, cells[i]!, `a value in column ${i + 1}, beyond the ${width} columns of the header`, 'EXTRA_CELLS');
      }
      const attributes: Record<string, AttributeValue> = {};
      for (let i = 0; i < attrFields.length; i++) attributes[attrKeys[i]!] = toAttribute(value(attrFields[i]!, cells, line, errors));
      const record = {
        record_id: toText(value(fId, cells, line, errors)),
        display_name: toText(value(fName, cells, line, errors)),
        api_value: toText(value(fValue, cells, line, errors)),
        aliases: fAliases ? (toAliases(value(fAliases, cells, line, errors)) as string[]) : [],
        attributes,
        active: true,
      };
      if (fActive) {
        const v = value(fActive, cells, line, errors);
        try {
          const b = toActive(v);
          if (b !== null) record.active = b as boolean;
        } catch (err) {
          if (!(err instanceof ValueError)) throw err;
          fail(errors, line, fActive.column, err.value, `active: ${err.message}`, 'TRANSFORM_FAILED');
        }
      }
      if (errors.length > before) return BAD;
      if (quickValid(record)) return record;
      // A6: every record is checked before it goes anywhere; the quick check only lets obviously valid ones through.
      const checked = validateRecord(record);
      if (checked.ok) return checked.record;
      for (const issue of checked.issues) {
        const top = issue.field.startsWith('attributes.') ? issue.field : issue.field.split('.')[0]!;
        const cf = byName.get(top);
        const shown = top.startsWith('attributes.') ? attributes[top.slice(11)] : (record as Record<string, unknown>)[top];
        fail(errors, line, cf ? cf.column : top, asText((shown ?? null) as Value), `${issue.field} ${issue.message}`, 'INVALID_RECORD');
      }
      return BAD;
    },
  };
}
