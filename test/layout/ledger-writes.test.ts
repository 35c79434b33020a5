import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '../..');

/**
 * Issue 12: one module owns a plan's transitions; nothing else writes the
 * journal's plans, the plan files, the outcome, the held change or the
 * snapshot's confirmation. The store and the plan files define these writes;
 * the ledger is the one caller.
 */
const WRITES = [
  /\b(store|snapshot\([^)]*\))\.(hold|clearHeld|recordOutcome|confirm|adopt|recordSource)\(/,
  /\bjournal\.(beginPlan|finishPlan|reopenPlan)\(/,
  /\b(savePlan|removePlan|keepChangeset)\(/,
];
const OWNERS = new Set(['src/sync/executor/ledger.ts', 'src/sync/executor/plan-files.ts']);

function tsFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && e.name.endsWith('.ts'))
    .map((e) => join(e.parentPath, e.name));
}

/** `file:line: text` of each write of a plan's life outside its owners. */
function writesOutsideLedger(files: readonly string[]): string[] {
  const out: string[] = [];
  for (const f of files) {
    const rel = relative(ROOT, f);
    if (OWNERS.has(rel) || rel.startsWith('src/snapshot/')) continue;
    readFileSync(f, 'utf8')
      .split('\n')
      .forEach((line, i) => {
        if (!line.trimStart().startsWith('*') && !line.trimStart().startsWith('//') && WRITES.some((w) => w.test(line))) out.push(`${rel}:${i + 1}: ${line.trim()}`);
      });
  }
  return out;
}

describe('the ledger', () => {
  it('is the only caller of the journal, plan-file, outcome, hold and confirm writes in src/', () => {
    const files = tsFiles(join(ROOT, 'src'));
    expect(files.length).toBeGreaterThan(200);
    expect(writesOutsideLedger(files)).toEqual([]);
  });

  it('names a write outside the ledger (so the test above can fail)', () => {
    const fixture = join(import.meta.dirname, 'fixtures/ledger-bypass.ts');
    expect(writesOutsideLedger([fixture])).toEqual([
      "test/layout/fixtures/ledger-bypass.ts:3: ctx.store.recordOutcome('failed', {});",
      "test/layout/fixtures/ledger-bypass.ts:4: ctx.db.journal.finishPlan(planId, 'refused');",
      'test/layout/fixtures/ledger-bypass.ts:5: removePlan(ctx.planDir, planId);',
    ]);
  });
});
