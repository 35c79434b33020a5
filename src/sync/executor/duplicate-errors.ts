import type { RowError } from '../../sources/index.js';

/** The row errors of repeated record_ids the sort found: the first `max` by line are kept (in memory never more than twice that). */
export class DuplicateErrors {
  count = 0;
  #kept: RowError[] = [];

  constructor(
    private readonly file: string,
    private readonly max: number,
  ) {}

  add(id: string, line: number, first: number): void {
    this.count++;
    this.#kept.push({ file: this.file, line, column: 'record_id', value: id, reason: `duplicate record_id "${id}": also at line ${first}`, code: 'DUPLICATE_KEY' });
    if (this.#kept.length >= 2 * this.max) this.#prune();
  }

  /** The kept errors, by line. */
  kept(): RowError[] {
    this.#prune();
    return this.#kept;
  }

  #prune(): void {
    this.#kept.sort((a, b) => a.line - b.line);
    this.#kept.length = Math.min(this.#kept.length, this.max);
  }
}

/** Two lists of row errors in line order as one, cut to `max` (the first by line, as the reader keeps them). */
export function mergeByLine(a: readonly RowError[], b: readonly RowError[], max: number): RowError[] {
  const out: RowError[] = [];
  let i = 0;
  let j = 0;
  while (out.length < max && (i < a.length || j < b.length)) {
    if (j >= b.length || (i < a.length && a[i]!.line <= b[j]!.line)) out.push(a[i++]!);
    else out.push(b[j++]!);
  }
  return out;
}
