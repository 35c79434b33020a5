/**
 * The record keys seen in one file and the line of each, for duplicate
 * detection over a million rows without a million heap strings: each key is
 * kept in one growing byte arena (its line, its length, its UTF-8 bytes) and
 * found through an open-addressing table in one typed array (exact comparison
 * of the bytes, so no false duplicates). About 23 bytes a key instead of ~60
 * in a Map, and nothing for the garbage collector to trace.
 */
export class KeyIndex {
  // Both start small and double: their growth is then met within the first few hundred keys, before the optimising
  // compiler takes add() with insert and claim inlined; met first at the 32,768th key, it threw that code away and
  // compiled it again, twice in a 100,000-row read (issue 18).
  private arena = Buffer.allocUnsafe(4096);
  private used = 0;
  private slots = 16;
  // One slot = 2 int32s side by side: the key's hash and its entry's offset in the arena plus one (0: empty, so that
  // a new table is empty as allocated, zeroed, with no pass to mark its slots).
  private table = new Int32Array(2 * this.slots);
  private count = 0;

  /** Remember `key` at `line`; returns the earlier line when the key was already there, else 0. */
  add(key: string, line: number): number {
    // FNV-1a over the UTF-16 code units; notes whether the key is ASCII (record ids always are, A6).
    let hash = 0x811c9dc5 | 0;
    let high = 0;
    for (let i = 0; i < key.length; i++) {
      const c = key.charCodeAt(i);
      high |= c;
      hash = Math.imul(hash ^ c, 0x01000193);
    }
    if (high >= 0x80) return this.addBytes(key, hash, line);
    // ASCII: one byte a character, compared and copied here without a native call.
    const len = key.length;
    const table = this.table;
    const mask = this.slots - 1;
    for (let i = hash & mask; ; i = (i + 1) & mask) {
      const off = table[2 * i + 1]! - 1;
      if (off === -1) {
        const at = this.claim(len);
        const arena = this.arena;
        for (let j = 0; j < len; j++) arena[at + j] = key.charCodeAt(j);
        return this.insert(2 * i, hash, line, at + len);
      }
      if (table[2 * i] === hash && keyLength(this.arena, off) === len) {
        const arena = this.arena;
        const at = keyStart(arena, off);
        let j = 0;
        while (j < len && arena[at + j] === key.charCodeAt(j)) j++;
        if (j === len) return arena.readInt32LE(off);
      }
    }
  }

  /** Any key: written as UTF-8 into a new entry at the end of the arena, which is kept only if the key is new. */
  private addBytes(key: string, hash: number, line: number): number {
    const len = Buffer.byteLength(key, 'utf8');
    const at = this.claim(len);
    this.arena.write(key, at, 'utf8');
    const table = this.table;
    const mask = this.slots - 1;
    for (let i = hash & mask; ; i = (i + 1) & mask) {
      const off = table[2 * i + 1]! - 1;
      if (off === -1) return this.insert(2 * i, hash, line, at + len);
      if (table[2 * i] === hash && keyLength(this.arena, off) === len) {
        const from = keyStart(this.arena, off);
        if (this.arena.compare(this.arena, at, at + len, from, from + len) === 0) return this.arena.readInt32LE(off);
      }
    }
  }

  /** Make room for an entry of `len` key bytes at the end of the arena and write its length; returns where the bytes go. */
  private claim(len: number): number {
    if (this.used + len + 9 > this.arena.length) this.growArena(len + 9);
    const arena = this.arena;
    let at = this.used + 4; // the line is written by insert()
    if (len < 255) arena[at++] = len;
    else {
      arena[at++] = 255;
      arena.writeUInt32LE(len, at);
      at += 4;
    }
    return at;
  }

  /** Keep the entry just claimed (at the end of the arena, up to `end`) in slot `s`, with its line. */
  private insert(s: number, hash: number, line: number, end: number): 0 {
    const off = this.used;
    this.arena.writeInt32LE(line, off);
    this.table[s] = hash;
    this.table[s + 1] = off + 1;
    this.used = end;
    if (++this.count * 2 > this.slots) this.growTable();
    return 0;
  }

  private growArena(atLeast: number): void {
    const next = Buffer.allocUnsafe(Math.max(this.arena.length * 2, this.used + atLeast));
    this.arena.copy(next, 0, 0, this.used);
    this.arena = next;
  }

  private growTable(): void {
    const old = this.table;
    const oldSlots = this.slots;
    this.slots *= 2;
    this.table = new Int32Array(2 * this.slots);
    const table = this.table;
    const mask = this.slots - 1;
    for (let j = 0; j < oldSlots; j++) {
      if (old[2 * j + 1] === 0) continue;
      let i = old[2 * j]! & mask;
      while (table[2 * i + 1] !== 0) i = (i + 1) & mask;
      table[2 * i] = old[2 * j]!;
      table[2 * i + 1] = old[2 * j + 1]!;
    }
  }
}

// An entry: line (int32), key length (one byte, or 255 and a uint32), key bytes.
function keyLength(arena: Buffer, off: number): number {
  const n = arena[off + 4]!;
  return n < 255 ? n : arena.readUInt32LE(off + 5);
}

function keyStart(arena: Buffer, off: number): number {
  return arena[off + 4]! < 255 ? off + 5 : off + 9;
}
