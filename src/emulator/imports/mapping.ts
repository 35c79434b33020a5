import { ATTRIBUTE_KEY_PATTERN, RECORD_FIELDS } from '../../model/record.js';
import { httpError, validationFailed } from '../http-error.js';
import type { RowError } from '../types.js';
import type { Cell, Table } from './table.js';

/** Record field (or `attributes.<key>`) → column index. */
type ColumnMap = Map<string, number>;

const REQUIRED = ['record_id', 'display_name', 'api_value'] as const;

function isTarget(field: string): boolean {
  if ((RECORD_FIELDS as readonly string[]).includes(field)) return true;
  return field.startsWith('attributes.') && ATTRIBUTE_KEY_PATTERN.test(field.slice('attributes.'.length));
}

/** A14: the column of each record field, from the `mapping` JSON text or, without it, the header itself. */
export function resolveColumns(header: string[], mappingText: string | undefined): ColumnMap {
  const columns: ColumnMap = new Map();
  if (mappingText === undefined) {
    const unknown = header.filter((h) => h !== '' && !isTarget(h));
    const missing = REQUIRED.filter((f) => !header.includes(f));
    if (unknown.length || missing.length) {
      throw httpError(422, 'MAPPING_REQUIRED', 'the header does not name the record fields; send a mapping', {
        header,
        unknown_columns: unknown,
        missing_fields: missing,
      });
    }
    header.forEach((h, i) => {
      if (h !== '') columns.set(h, i);
    });
    return columns;
  }
  let mapping: unknown;
  try {
    mapping = JSON.parse(mappingText);
  } catch {
    throw validationFailed('mapping must be JSON text', { field: 'mapping' });
  }
  if (mapping === null || typeof mapping !== 'object' || Array.isArray(mapping)) {
    throw validationFailed('mapping must be a JSON object of record field to column header', { field: 'mapping' });
  }
  const missingColumns: string[] = [];
  for (const [field, column] of Object.entries(mapping)) {
    if (!isTarget(field)) throw validationFailed(`mapping names an unknown record field ${field}`, { field: 'mapping', mapping_key: field });
    if (typeof column !== 'string') throw validationFailed(`mapping of ${field} must be a column header`, { field: 'mapping', mapping_key: field });
    const index = header.indexOf(column.trim());
    if (index < 0) missingColumns.push(column);
    else columns.set(field, index);
  }
  const unmapped = REQUIRED.filter((f) => !(f in mapping));
  if (unmapped.length) throw validationFailed(`mapping lacks ${unmapped.join(', ')}`, { field: 'mapping', missing_fields: unmapped });
  if (missingColumns.length) {
    throw validationFailed(`the file has no column ${missingColumns.join(', ')}`, { field: 'mapping', missing_columns: missingColumns });
  }
  return columns;
}

const TRUE = ['true', '1', 'yes'];
const FALSE = ['false', '0', 'no'];

/** A14: build candidate records from rows; conversion problems become A3 row errors. */
export function rowsToCandidates(table: Table, columns: ColumnMap): { candidates: unknown[]; rowNumbers: number[]; errors: RowError[] } {
  const candidates: unknown[] = [];
  const rowNumbers: number[] = [];
  const errors: RowError[] = [];
  for (const { row, cells } of table.rows) {
    const rec: Record<string, unknown> = { attributes: {} };
    const attributes = rec.attributes as Record<string, unknown>;
    const id = columns.has('record_id') ? text(cells[columns.get('record_id') as number]) : undefined;
    const fail = (field: string, message: string) => errors.push({ row, record_id: id ?? null, field, message });
    for (const [field, index] of columns) {
      const cell = cells[index] ?? null;
      if (field.startsWith('attributes.')) {
        if (cell !== null && cell !== '') attributes[field.slice('attributes.'.length)] = cell;
      } else if (field === 'aliases') {
        rec.aliases = text(cell)?.split('|').map((a) => a.trim()).filter((a) => a !== '') ?? [];
      } else if (field === 'active') {
        const v = text(cell)?.trim().toLowerCase();
        if (v === undefined || v === '') continue;
        if (TRUE.includes(v)) rec.active = true;
        else if (FALSE.includes(v)) rec.active = false;
        else fail('active', 'must be one of true/false/1/0/yes/no');
      } else if (field === 'attributes') {
        const t = text(cell);
        if (t === undefined || t === '') continue;
        try {
          Object.assign(attributes, JSON.parse(t) as object);
        } catch {
          fail('attributes', 'must be a JSON object');
        }
      } else {
        rec[field] = text(cell);
      }
    }
    candidates.push(rec);
    rowNumbers.push(row);
  }
  return { candidates, rowNumbers, errors };
}

function text(cell: Cell | undefined): string | undefined {
  if (cell === null || cell === undefined) return undefined;
  return typeof cell === 'string' ? cell : String(cell);
}
