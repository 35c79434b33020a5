import type { FieldObject, MadeSetting } from './config.js';
import { HeaderIndex, type Column } from './columns.js';
import { compileConditions } from './conditions.js';
import { compileTransforms, type TransformContext } from './transforms.js';
import type { Transform } from './value.js';
import { ValueError, asText, type Value } from './value.js';

/** Where a field's value is read from one row. */
export interface FieldSource {
  /** Header name blamed in row errors (the field name when several columns feed it). */
  column: string;
  /** The cell's position when the field is one column (read inline, the common case), else -1 and `get`. */
  index: number;
  get: (cells: string[]) => Value;
}

interface Placeholder {
  name: string;
  column: Column;
  transform: Transform | null;
}

function one(c: Column): FieldSource {
  const i = c.index;
  return { index: i, get: (cells) => cells[i] ?? '', column: c.name };
}

/** A template: literal text with {Header} or {#n} placeholders, each through its own transforms when it has some. */
function template(spec: FieldObject, field: string, header: HeaderIndex, ctx: TransformContext): FieldSource {
  const pieces: Array<string | Placeholder> = [];
  const re = /\{([^{}]+)\}/g;
  let last = 0;
  const text = spec.template!;
  for (let m = re.exec(text); m; m = re.exec(text)) {
    if (m.index > last) pieces.push(text.slice(last, m.index));
    const name = m[1]!;
    const byIndex = /^#(\d+)$/.exec(name);
    const column = header.resolve(byIndex ? { column_index: Number(byIndex[1]) } : name, field);
    pieces.push({ name, column, transform: compileTransforms(spec.placeholder_transforms?.[name] ?? [], ctx) });
    last = re.lastIndex;
  }
  if (last < text.length) pieces.push(text.slice(last));
  const cellText = (p: Placeholder, cells: string[]): string => {
    const raw = cells[p.column.index] ?? '';
    if (p.transform === null) return raw;
    try {
      return asText(p.transform(raw));
    } catch (err) {
      if (!(err instanceof ValueError)) throw err;
      // The row error names the placeholder's own column, where the value is.
      throw new ValueError(err.code, `{${p.name}}: ${err.message}`, err.value, p.column.name);
    }
  };
  return {
    column: field,
    index: -1,
    get: (cells) => {
      let s = '';
      for (const p of pieces) s += typeof p === 'string' ? p : cellText(p, cells);
      return s.trim();
    },
  };
}

/** Compile where one field's value comes from, against one file's header (file-level SourceError when a column cannot be found). */
export function compileFieldSource(spec: FieldObject, field: string, header: HeaderIndex, ctx: TransformContext, made?: MadeSetting): FieldSource {
  // A field the connector made (a change list's command column) is named in messages by the setting the user wrote.
  const usedFor = made ?? field;
  if (spec.column !== undefined) return one(header.resolve(spec.column, usedFor));
  if (spec.column_index !== undefined) return one(header.resolve({ column_index: spec.column_index }, usedFor));
  if (spec.column_pattern !== undefined) return one(header.resolve({ column_pattern: spec.column_pattern }, usedFor));
  if (spec.const !== undefined) {
    const c = spec.const;
    return { index: -1, get: () => c, column: field };
  }
  if (spec.all !== undefined || spec.any !== undefined) {
    const test = compileConditions(spec.all ? 'all' : 'any', (spec.all ?? spec.any)!, header, field, ctx.matchCase);
    return { index: -1, get: test, column: field };
  }
  if (spec.columns !== undefined) {
    const cols = spec.columns.map((ref) => header.resolve(ref, field));
    const sep = spec.separator;
    return {
      column: cols.length === 1 ? cols[0]!.name : field,
      index: -1,
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
  return template(spec, field, header, ctx);
}
