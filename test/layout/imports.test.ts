import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '../..');

/**
 * The import graph of a folder of TypeScript, file → the files it imports
 * (relative to `dir`). TypeScript's own pre-processor lists every import and
 * re-export, type-only ones included (they tie the layout as much as the rest),
 * and dynamic import() too; packages are left out. A parse without type
 * checking: madge took ~20 s of CPU over src/ for the same graph.
 */
function graph(dir: string): Record<string, string[]> {
  const files = readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts'));
  const known = new Set(files);
  const obj: Record<string, string[]> = {};
  for (const f of files) {
    const info = ts.preProcessFile(readFileSync(join(dir, f), 'utf8'), true, true);
    const deps = new Set<string>();
    for (const { fileName } of info.importedFiles) {
      if (!fileName.startsWith('.')) continue;
      const target = relative(dir, join(dir, dirname(f), fileName)).replace(/\.js$/, '.ts');
      if (!known.has(target)) throw new Error(`${f} imports ${fileName}, which is not a file of ${dir}`);
      deps.add(target);
    }
    obj[f] = [...deps].sort();
  }
  return obj;
}

/** Loops between top-level folders: each strongly connected set of folders with more than one member. */
function folderLoops(obj: Record<string, string[]>): string[][] {
  const top = (f: string) => (f.includes('/') ? f.split('/')[0]! : '.');
  const edges = new Map<string, Set<string>>();
  for (const [from, deps] of Object.entries(obj)) {
    for (const to of deps) {
      const a = top(from);
      const b = top(to);
      if (a !== b) (edges.get(a) ?? edges.set(a, new Set()).get(a)!).add(b);
    }
  }
  return loops(edges);
}

/** Loops between files: each strongly connected set of files with more than one member, or a file importing itself. */
function fileLoops(obj: Record<string, string[]>): string[][] {
  const edges = new Map(Object.entries(obj).map(([f, deps]) => [f, new Set(deps)]));
  const self = Object.entries(obj).filter(([f, deps]) => deps.includes(f)).map(([f]) => [f]);
  return [...self, ...loops(edges)];
}

/** The strongly connected sets of more than one member (Tarjan). */
function loops(edges: Map<string, Set<string>>): string[][] {
  // Tarjan's strongly connected components.
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const loops: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    for (const w of edges.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (stack.includes(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const scc: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        scc.push(w);
      } while (w !== v);
      if (scc.length > 1) loops.push(scc.sort());
    }
  };
  for (const v of edges.keys()) if (!index.has(v)) visit(v);
  return loops;
}

describe('import graph of src/', () => {
  // Issue 12: a loop between files or folders hides which stage owns a behaviour.
  it('has no loop between files and none between top-level folders', () => {
    const g = graph(join(ROOT, 'src'));
    expect(fileLoops(g)).toEqual([]);
    expect(folderLoops(g)).toEqual([]);
    expect(Object.keys(g).length).toBeGreaterThan(200);
    // The graph sees each kind of import: a value import, a type-only one, a re-export.
    expect(g['sync/executor/ledger.ts']).toEqual(expect.arrayContaining(['sync/executor/plan-files.ts', 'snapshot/types.ts']));
    expect(g['snapshot/index.ts']!.length).toBeGreaterThan(3);
  });

  it('sees a loop when there is one (so the test above can fail)', () => {
    const g = graph(join(import.meta.dirname, 'fixtures/loop'));
    expect(folderLoops(g)).toEqual([['a', 'b']]);
    expect(fileLoops({ 'x.ts': ['y.ts'], 'y.ts': ['x.ts'], 'z.ts': ['z.ts'] })).toEqual([['z.ts'], ['x.ts', 'y.ts']]);
  });
});
