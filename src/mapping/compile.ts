import { validateRecord, type AttributeValue, type DatasetRecord } from '../model/record.js';
import { boundText } from '../model/excerpt.js';
import type { RowError } from '../model/row-error.js';
import type { FieldObject, MappingConfig } from './config.js';
import { HeaderIndex } from './columns.js';
import { compileFieldSource } from './field-source.js';
import { compileTransforms, defaultBooleanParser, splitter, type TransformContext } from './transforms.js';
import type { Transform } from './value.js';
import { ValueError, asText, isEmpty, type Value } from './value.js';
import { quickValidFor } from './quick-check.js';

/** `map` found the row filtered out by the mapping's filters. */
export const FILTERED = Symbol('filtered');
/** `map` found the row bad; its row errors were appended. */
export const BAD = Symbol('bad');

/** Maps one file's rows (cells by position) to validated records. */
export interface RowMapper {
  readonly header: string[];
  /** Rows so far whose aliases listed one alias more than once (kept once each). */
  readonly aliasesMerged: number;
  map(cells: string[], line: number, errors: RowError[]): DatasetRecord | typeof FILTERED | typeof BAD;
  /** The record_id of the last row `map` found BAD, when its own cell read without error (a feed needs it, issue 13); else null. */
  readonly badId: string | null;
  /** Per keep_when_match filter (by index): the rows it was asked about, those it took, and the first distinct values it saw. */
  readonly kept: readonly KeepTally[];
}

/** What one keep_when_match filter did (a fan-out feed's rows: taking no row says why, issue 13). */
export interface KeepTally {
  tested: number;
  taken: number;
  /** The first KEEP_VALUES_SEEN distinct values (spaces around them aside), in file order; `more` when there were others. */
  seen: string[];
  more: boolean;
}

/** Enough values to show how the file writes the column, bounded whatever the file. */
export const KEEP_VALUES_SEEN = 5;

interface CompiledField {
  field: string;
  /** Header name blamed in row errors (the field name when several columns feed it). */
  column: string;
  /** The cell's position when the field is one column (read inline, the common case), else -1 and `get`. */
  index: number;
  /** The field's value from one row's cells, its transforms and empty_is_null applied (throws ValueError). */
  read: (cells: string[]) => Value;
}

const MAX_VALUE_CHARS = 100;
const MAX_REASON_CHARS = 300;
/** Values in row errors are cut to 100 characters. */
export function truncateValue(v: string): string {
  return v.length > MAX_VALUE_CHARS ? `${v.slice(0, MAX_VALUE_CHARS - 1)}…` : v;
}

const toAliases = splitter('|');

/**
 * The `active` of a record from its field's value. There is no "no value"
 * for active and no silent default once it is mapped (issue 11: an empty
 * Odoo cell meant False and was published as true).
 */
function activeOf(v: Value, toActive: Transform): boolean {
  if (typeof v === 'boolean') return v;
  if (v === null) {
    throw new ValueError('INVALID_BOOLEAN', 'the transforms left no value, and active must be true or false; add { default: true } or { default: false } to say what it is then', '');
  }
  if (asText(v).trim() === '') {
    throw new ValueError(
      'INVALID_BOOLEAN',
      'an empty cell is neither true nor false; say what it means with transforms: [{ boolean: { true_words: […], false_words: ["", …] } }] or [{ default: … }]',
      '',
    );
  }
  return toActive(v) as boolean;
}

/** Whether text is empty or spaces only (as `s.trim() === ''`), without trimming text that starts with a printable ASCII character. */
function isBlank(s: string): boolean {
  const c = s.length > 0 ? s.charCodeAt(0) : 0;
  return c > 0x20 && c < 0x7f ? false : s.trim() === '';
}

function toText(v: Value): string {
  return typeof v === 'string' ? v : asText(v);
}

function toAttribute(v: Value): AttributeValue {
  return Array.isArray(v) ? v.join('|') : v;
}

/** Aliases in order, each kept once (a GTIN and a JAN column often hold the same code). */
function uniqueAliases(list: string[]): string[] {
  // Most lists are short and have no repeat: found so without a Set or a new array.
  if (list.length < 16 && !hasRepeat(list)) return list;
  const seen = new Set<string>();
  return list.filter((a) => !seen.has(a) && (seen.add(a), true));
}

function hasRepeat(list: string[]): boolean {
  for (let i = 1; i < list.length; i++) for (let j = 0; j < i; j++) if (list[i] === list[j]) return true;
  return false;
}

/**
 * One field's reader, specialised once so that a row pays only for what the field uses: a single column
 * read inline, no empty_is_null test when it is off, no transform call when it has none.
 */
function fieldReader(index: number, get: (cells: string[]) => Value, transform: Transform | null, emptyIsNull: boolean): (cells: string[]) => Value {
  if (!emptyIsNull) {
    if (index >= 0) return transform === null ? (cells) => cells[index] ?? '' : (cells) => transform(cells[index] ?? '');
    return transform === null ? get : (cells) => transform(get(cells));
  }
  return (cells) => {
    let v: Value = index >= 0 ? (cells[index] ?? '') : get(cells);
    if (typeof v === 'string' && v.trim() === '') v = null;
    if (transform !== null) v = transform(v);
    return isEmpty(v) ? null : v;
  };
}

/** Compile the mapping against one file's header (file-level SourceError when a column cannot be found). */
export function compileMapping(mapping: MappingConfig, names: string[], file: string, headerLine: number): RowMapper {
  const header = new HeaderIndex(names, file, headerLine);
  const ctx: TransformContext = { numbers: mapping.numbers, matchCase: mapping.match_case };
  const toActive = defaultBooleanParser(ctx.matchCase);
  const fields: CompiledField[] = Object.entries(mapping.fields).map(([field, spec]) => {
    const s: FieldObject = typeof spec === 'string' ? { column: spec, separator: '-', transforms: [], empty_is_null: false } : spec;
    const { get, column, index } = compileFieldSource(s, field, header, ctx, mapping.made?.fields?.[field]);
    return { field, column, index, read: fieldReader(index, get, compileTransforms(s.transforms, ctx), s.empty_is_null) };
  });
  const byName = new Map(fields.map((f) => [f.field, f]));
  const attrFields = fields.filter((f) => f.field.startsWith('attributes.'));
  const attrKeys = attrFields.map((f) => f.field.slice(11));
  const quickValid = quickValidFor(attrKeys);
  // Each row's attributes start as a copy of one object with the keys in order: the values are then stored into
  // properties it has, instead of each row's object growing its shape key by key (a slow store in V8).
  const blankAttributes: Record<string, AttributeValue> = {};
  for (const k of attrKeys) blankAttributes[k] = null;
  const skipEmpty = mapping.filters.skip_when_empty.map((ref) => header.resolve(ref, 'filters.skip_when_empty').index);
  const keep = mapping.filters.keep_when_match.map((k, i) => ({
    index: header.resolve(k.column, mapping.made?.keep?.[i] ?? 'filters.keep_when_match').index,
    re: new RegExp(k.pattern, 'u'),
  }));
  const kept: KeepTally[] = keep.map(() => ({ tested: 0, taken: 0, seen: [], more: false }));
  // The values as read (seen holds them bounded and escaped for messages); at most KEEP_VALUES_SEEN each.
  const raw = keep.map(() => new Set<string>());
  const tally = (i: number, cell: string, took: boolean): boolean => {
    const t = kept[i]!;
    t.tested++;
    if (took) t.taken++;
    if (t.more) return took;
    const v = cell.trim();
    if (raw[i]!.has(v)) return took;
    if (raw[i]!.size < KEEP_VALUES_SEEN) {
      raw[i]!.add(v);
      t.seen.push(boundText(v, 40));
    } else t.more = true;
    return took;
  };
  const width = names.length;
  const f = (name: string) => byName.get(name) ?? null;
  const [fId, fName, fValue, fAliases, fActive] = [f('record_id')!, f('display_name')!, f('api_value')!, f('aliases'), f('active')];

  const rowCheck = mapping.rowCheck;
  const fail = (errors: RowError[], line: number, column: string, value: string, reason: string, code: RowError['code']) =>
    // The reason may quote the cell: bounded and escaped like every message quoting a file (issue 11).
    errors.push({ file, line, column, value: truncateValue(value), reason: boundText(reason, MAX_REASON_CHARS), code });
  const value = (cf: CompiledField, cells: string[], line: number, errors: RowError[]): Value => {
    try {
      return cf.read(cells);
    } catch (err) {
      if (!(err instanceof ValueError)) throw err;
      fail(errors, line, err.column ?? cf.column, err.value, `${cf.field}: ${err.message}`, err.code);
      return null;
    }
  };

  let aliasesMerged = 0;
  let badId: string | null = null;
  const aliasesOf = (v: Value): string[] => {
    const list = toAliases(v) as string[];
    const unique = uniqueAliases(list);
    if (unique.length !== list.length) aliasesMerged++;
    return unique;
  };

  return {
    header: names,
    get aliasesMerged() {
      return aliasesMerged;
    },
    get badId() {
      return badId;
    },
    kept,
    map(cells, line, errors) {
      for (let i = 0; i < skipEmpty.length; i++) if ((cells[skipEmpty[i]!] ?? '').trim() === '') return FILTERED;
      for (let i = 0; i < keep.length; i++) {
        const cell = cells[keep[i]!.index] ?? '';
        if (!tally(i, cell, keep[i]!.re.test(cell))) return FILTERED;
      }
      const before = errors.length;
      for (let i = width; i < cells.length; i++) {
        if (cells[i] !== '') fail(errors, line, `#${i + 1}`, cells[i]!, `a value in column ${i + 1}, beyond the ${width} columns of the header`, 'EXTRA_CELLS');
      }
      const attributes: Record<string, AttributeValue> = { ...blankAttributes };
      for (let i = 0; i < attrFields.length; i++) attributes[attrKeys[i]!] = toAttribute(value(attrFields[i]!, cells, line, errors));
      const idAt = errors.length;
      const id = toText(value(fId, cells, line, errors));
      const idEnd = errors.length;
      badId = errors.length === idAt && !isBlank(id) ? id : null;
      const record = {
        record_id: id,
        display_name: toText(value(fName, cells, line, errors)),
        api_value: toText(value(fValue, cells, line, errors)),
        aliases: fAliases ? aliasesOf(value(fAliases, cells, line, errors)) : [],
        attributes,
        active: true,
      };
      if (fActive) {
        const at = errors.length;
        const v = value(fActive, cells, line, errors);
        // A failed transform already said why (and gave null); anything else must end as true or false.
        if (errors.length === at) {
          try {
            record.active = activeOf(v, toActive);
          } catch (err) {
            if (!(err instanceof ValueError)) throw err;
            // The cell as written when the transforms emptied it (null_words), so the person sees what was there.
            const shown = err.value === '' && fActive.index >= 0 ? (cells[fActive.index] ?? '') : err.value;
            fail(errors, line, fActive.column, shown, `active: ${err.message}`, err.code);
          }
        }
      }
      const verdict = rowCheck === undefined ? undefined : rowCheck(record, line);
      if (verdict !== undefined) {
        // A delete or ignore row keeps only the errors of its record_id.
        if (verdict.idOnly) errors.splice(before, errors.length - before, ...errors.slice(idAt, idEnd));
        for (const p of verdict.problems) fail(errors, line, p.column, p.value, p.reason, p.code);
      }
      if (errors.length > before) return BAD;
      if (quickValid(record)) return record;
      // A6: every record is checked before it goes anywhere; the quick check only lets obviously valid ones through.
      // A feed's empty display_name or api_value is no value (the merge judges it): checked as if it had one.
      const blanks = mapping.blanksAreNoValue ? { display_name: record.display_name || '-', api_value: record.api_value || '-' } : {};
      const checked = validateRecord({ ...record, ...blanks });
      if (checked.ok) return mapping.blanksAreNoValue ? { ...checked.record, display_name: record.display_name, api_value: record.api_value } : checked.record;
      if (checked.issues.some((i) => i.field === 'record_id')) badId = null;
      // A delete or ignore row uses only its record_id.
      if (verdict?.idOnly && !checked.issues.some((i) => i.field === 'record_id')) return record as DatasetRecord;
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
