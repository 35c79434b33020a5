import { SourceError } from '../model/source-error.js';
import { excerptList } from '../model/excerpt.js';
import type { ColumnRef, MadeSetting } from './config.js';

/** A resolved column: 0-based index and the name used in row errors. */
export interface Column {
  index: number;
  name: string;
}

/** Resolves column references against one file's cleaned header (file-level errors when it cannot). */
export class HeaderIndex {
  private readonly counts = new Map<string, number>();

  constructor(
    readonly names: string[],
    private readonly file: string,
    private readonly headerLine: number,
  ) {
    for (const n of names) if (n !== '') this.counts.set(n, (this.counts.get(n) ?? 0) + 1);
  }

  /** Duplicate header names (each listed once). */
  duplicates(): string[] {
    return [...this.counts].filter(([, c]) => c > 1).map(([n]) => n);
  }

  /** `usedFor`: the mapped field or filter the column is for, or the setting a field the connector made stands for. */
  resolve(ref: ColumnRef, usedFor: string | MadeSetting): Column {
    const made = typeof usedFor === 'string' ? undefined : usedFor;
    const ctx = { file: this.file, line: this.headerLine, setting: made ? made.setting : `mapping.${usedFor as string}` };
    const fix = made ? `. ${made.fix}` : '';
    usedFor = made ? `${made.setting}, ${made.what}` : (usedFor as string);
    if (typeof ref === 'string' || 'column' in ref) {
      const name = typeof ref === 'string' ? ref : ref.column;
      const count = this.counts.get(name) ?? 0;
      if (count === 0) {
        throw new SourceError('COLUMN_NOT_FOUND', `${this.file}: no column "${name}" (for ${usedFor}) in the header at line ${this.headerLine}; columns are: ${this.list()}${fix}`, {
          ...ctx,
          column: name,
        });
      }
      if (count > 1) {
        throw new SourceError(
          'DUPLICATE_HEADER',
          `${this.file}: the header at line ${this.headerLine} has "${name}" ${count} times; map ${usedFor} by column_index instead${fix}`,
          { ...ctx, column: name },
        );
      }
      return { index: this.names.indexOf(name), name };
    }
    if ('column_index' in ref) {
      const i = ref.column_index - 1;
      return { index: i, name: this.names[i] || `#${ref.column_index}` };
    }
    const re = new RegExp(ref.column_pattern, 'u');
    const hits = this.names.map((n, i) => ({ n, i })).filter(({ n }) => n !== '' && re.test(n));
    if (hits.length !== 1) {
      const code = hits.length === 0 ? 'COLUMN_NOT_FOUND' : 'AMBIGUOUS_COLUMN';
      const found = hits.length === 0 ? 'no column' : `${hits.length} columns (${excerptList(hits.map((h) => h.n))})`;
      throw new SourceError(code, `${this.file}: ${found} match /${ref.column_pattern}/ (for ${usedFor}) in the header at line ${this.headerLine}${fix}`, ctx);
    }
    return { index: hits[0]!.i, name: hits[0]!.n };
  }

  /** The header as a message may quote it (issue 11): bounded, escaped excerpts, for the file may be no export at all. */
  private list(): string {
    return excerptList(this.names);
  }
}
