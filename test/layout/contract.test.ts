import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '../..');
const doc = readFileSync(join(ROOT, 'docs/contract.md'), 'utf8');

describe('docs/contract.md', () => {
  // Code cites A1…A35; each must be explained in the repository, not in a file outside it.
  it('explains every assumption A1–A35, each once', () => {
    const heads = [...doc.matchAll(/^\*\*A(\d+)\./gm)].map((m) => Number(m[1]));
    expect(heads).toEqual(Array.from({ length: 35 }, (_, i) => i + 1));
  });

  it('names only files that exist', () => {
    const named = [...new Set([...doc.matchAll(/`(src\/[\w/.-]+\.ts)`/g)].map((m) => m[1]!))];
    expect(named.length).toBeGreaterThan(30);
    expect(named.filter((p) => !existsSync(join(ROOT, p)))).toEqual([]);
  });
});
