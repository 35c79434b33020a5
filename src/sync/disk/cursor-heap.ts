/**
 * The k-way merge's binary min-heap of cursor indices, shared by the runs'
 * merge (run-merge.ts) and the id runs' (id-runs.ts). `less(x, y)` orders the
 * cursors at their current entries and breaks ties by index, so that the
 * cursor given first comes first (runs are in file order).
 */
export class CursorHeap {
  readonly #heap: number[] = [];

  constructor(
    private readonly cursors: readonly { next(): boolean }[],
    private readonly less: (x: number, y: number) => boolean,
  ) {
    for (let i = 0; i < cursors.length; i++) if (cursors[i]!.next()) this.#heap.push(i);
    for (let k = (this.#heap.length >> 1) - 1; k >= 0; k--) this.#down(k);
  }

  /** The index of the cursor at the least entry; -1 when every cursor is done. */
  top(): number {
    return this.#heap.length > 0 ? this.#heap[0]! : -1;
  }

  /** Move the top cursor on to its next entry (dropping it when it has none) and restore the order. */
  advance(): void {
    const heap = this.#heap;
    if (!this.cursors[heap[0]!]!.next()) {
      heap[0] = heap[heap.length - 1]!;
      heap.pop();
    }
    if (heap.length > 0) this.#down(0);
  }

  #down(k: number): void {
    const heap = this.#heap;
    const less = this.less;
    for (;;) {
      const l = 2 * k + 1;
      const r = l + 1;
      let m = k;
      if (l < heap.length && less(heap[l]!, heap[m]!)) m = l;
      if (r < heap.length && less(heap[r]!, heap[m]!)) m = r;
      if (m === k) return;
      const t = heap[k]!;
      heap[k] = heap[m]!;
      heap[m] = t;
      k = m;
    }
  }
}
