/**
 * The record keys seen in one file and the line of each, for duplicate
 * detection over a million rows without a million heap strings: keys are
 * kept as UTF-8 bytes in one growing arena and found through an
 * open-addressing table in typed arrays (exact comparison of the bytes, so
 * no false duplicates). About 25 bytes a key instead of ~60 in a Map, and
 * nothing for the garbage collector to trace.
 */
export class KeyIndex {
  private arena = Buffer.allocUnsafe(1 << 20);
  private used = 0;
  private slots = 1 << 16;
  private hashes = new Int32Array(this.slots);
  private offsets = new Int32Array(this.slots).fill(-1);
  private lengths = new Int32Array(this.slots);
  private lines = new Int32Array(this.slots);
  private count = 0;

  /** Remember `key` at `line`; returns the earlier line when the key was already there, else 0. */
  add(key: string, line: number): number {
    const hash = fnv1a(key);
    const maxBytes = key.length * 3;
    if (this.used + maxBytes > this.arena.length) this.growArena(maxBytes);
    const len = this.arena.write(key, this.used, 'utf8');
    const mask = this.slots - 1;
    for (let i = hash & mask; ; i = (i + 1) & mask) {
      const off = this.offsets[i]!;
      if (off === -1) {
        this.hashes[i] = hash;
        this.offsets[i] = this.used;
        this.lengths[i] = len;
        this.lines[i] = line;
        this.used += len;
        if (++this.count * 2 > this.slots) this.growTable();
        return 0;
      }
      if (this.hashes[i] === hash && this.lengths[i] === len && this.arena.compare(this.arena, this.used, this.used + len, off, off + len) === 0) {
        return this.lines[i]!;
      }
    }
  }

  private growArena(atLeast: number): void {
    const next = Buffer.allocUnsafe(Math.max(this.arena.length * 2, this.used + atLeast));
    this.arena.copy(next, 0, 0, this.used);
    this.arena = next;
  }

  private growTable(): void {
    const old = { hashes: this.hashes, offsets: this.offsets, lengths: this.lengths, lines: this.lines, slots: this.slots };
    this.slots *= 2;
    this.hashes = new Int32Array(this.slots);
    this.offsets = new Int32Array(this.slots).fill(-1);
    this.lengths = new Int32Array(this.slots);
    this.lines = new Int32Array(this.slots);
    const mask = this.slots - 1;
    for (let j = 0; j < old.slots; j++) {
      if (old.offsets[j] === -1) continue;
      let i = old.hashes[j]! & mask;
      while (this.offsets[i] !== -1) i = (i + 1) & mask;
      this.hashes[i] = old.hashes[j]!;
      this.offsets[i] = old.offsets[j]!;
      this.lengths[i] = old.lengths[j]!;
      this.lines[i] = old.lines[j]!;
    }
  }
}

function fnv1a(s: string): number {
  let h = 0x811c9dc5 | 0;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193);
  return h;
}
