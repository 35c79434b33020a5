/** One sync at a time per dataset: an in-process mutex keyed by dataset name. */
export class DatasetLocks {
  readonly #tails = new Map<string, Promise<void>>();

  /** True while some work holds or waits for the dataset's lock. */
  busy(dataset: string): boolean {
    return this.#tails.has(dataset);
  }

  /** Run `fn` once every earlier holder of `dataset`'s lock has finished. */
  async run<T>(dataset: string, fn: () => Promise<T>): Promise<T> {
    const before = this.#tails.get(dataset) ?? Promise.resolve();
    let release!: () => void;
    const mine = new Promise<void>((r) => (release = r));
    const tail = before.then(() => mine);
    this.#tails.set(dataset, tail);
    try {
      await before;
      return await fn();
    } finally {
      release();
      if (this.#tails.get(dataset) === tail) this.#tails.delete(dataset);
    }
  }
}
