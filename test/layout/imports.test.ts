import { join } from 'node:path';
import madge from 'madge';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '../..');

/** madge's import graph of a folder of TypeScript (type-only imports count: they tie the layout as much as the rest). */
async function graph(dir: string): Promise<Awaited<ReturnType<typeof madge>>> {
  return madge(dir, { fileExtensions: ['ts'], tsConfig: join(ROOT, 'tsconfig.json') });
}

/** Loops between top-level folders: each strongly connected set of folders with more than one member, with the imports that tie it. */
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
  it('has no loop between files and none between top-level folders', async () => {
    const g = await graph(join(ROOT, 'src'));
    expect(g.circular()).toEqual([]);
    expect(folderLoops(g.obj())).toEqual([]);
    expect(Object.keys(g.obj()).length).toBeGreaterThan(200);
  });

  it('sees a loop when there is one (so the test above can fail)', async () => {
    const g = await graph(join(import.meta.dirname, 'fixtures/loop'));
    expect(folderLoops(g.obj())).toEqual([['a', 'b']]);
  });
});
