import { readdirSync, readFileSync } from 'node:fs';
import { join, normalize, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '../..');
const CORE = join(ROOT, 'src/sync/core');

/** Where a pure stage may take code from: itself, the shared record model, the config schemas, the error type. */
const VALUE_OK = [/^src\/sync\/core\//, /^src\/model\//, /^src\/config\//, /^src\/errors\.ts$/, /^node:(crypto|path)$/];
/** Type-only imports are erased at build; these name facts that the effectful stages store or send. */
const TYPE_OK = [...VALUE_OK, /^src\/snapshot\/types\.ts$/, /^src\/api\/wire\.ts$/, /^src\/sync\/outcome\.ts$/, /^src\/mapping\/config\.ts$/, /^src\/sources\/config\.ts$/];

interface Import {
  file: string;
  target: string;
  typeOnly: boolean;
}

/** The imports of a TypeScript file: `import …`, `import type …` and `export … from`. */
function importsOf(file: string): Import[] {
  const text = readFileSync(file, 'utf8');
  const out: Import[] = [];
  for (const m of text.matchAll(/^(import|export)\s+(type\s+)?([^;]*?)\s*from\s*'([^']+)'/gms)) {
    const spec = m[4]!;
    const target = spec.startsWith('.') ? relative(ROOT, normalize(join(file, '..', spec))).replace(/\.js$/, '.ts') : spec;
    out.push({ file: relative(ROOT, file), target, typeOnly: m[2] !== undefined || /^\{\s*(type\s+[^,}]+,?\s*)+\}$/.test(m[3]!) });
  }
  for (const m of text.matchAll(/^import\s+'([^']+)'/gm)) out.push({ file: relative(ROOT, file), target: m[1]!, typeOnly: false });
  return out;
}

function impure(files: string[]): string[] {
  return files.flatMap((f) =>
    importsOf(f)
      .filter((i) => !(i.typeOnly ? TYPE_OK : VALUE_OK).some((ok) => ok.test(i.target)))
      .map((i) => `${i.file} imports ${i.typeOnly ? 'types from ' : ''}${i.target}`),
  );
}

describe('src/sync/core', () => {
  // Issue 12: the diff and the plan are pure; files, SQLite, HTTP and the clock are the executor's and the disk edge's.
  it('imports nothing effectful: no fs, no snapshot store, API client, file job, executor or disk edge', () => {
    const files = readdirSync(CORE)
      .filter((n) => n.endsWith('.ts'))
      .map((n) => join(CORE, n));
    expect(files.length).toBeGreaterThan(8);
    expect(impure(files)).toEqual([]);
  });

  it('names an effectful import when there is one (so the test above can fail)', () => {
    const bad = join(ROOT, 'src/sync/disk/changeset-files.ts');
    expect(impure([bad])).toContain('src/sync/disk/changeset-files.ts imports node:fs');
  });
});
