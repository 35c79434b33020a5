import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '../..');

/**
 * Issue 12: one module owns a plan's transitions; nothing else writes the
 * journal's plans, the plan files, the outcome, the held change or the
 * snapshot's confirmation. The store and the plan files define these writes;
 * the ledger is the one caller. Read with the TypeScript parser, so an alias,
 * `?.`, a call broken over lines or a destructured method is found as well.
 */
const GUARDED = new Set(['hold', 'clearHeld', 'recordOutcome', 'confirm', 'adopt', 'recordSource', 'beginPlan', 'finishPlan', 'reopenPlan', 'savePlan', 'removePlan', 'keepChangeset']);
/** The plan-file writes: only the ledger imports them. */
const PLAN_FILE_WRITES = new Set(['savePlan', 'removePlan', 'keepChangeset']);
const OWNERS = new Set(['src/sync/executor/ledger.ts', 'src/sync/executor/plan-files.ts']);
/**
 * Uses of a guarded name that are not the store's or the journal's (the parse
 * has no types): each `file: what`, reviewed. A new one fails the test until
 * it is looked at and listed here.
 */
const OTHER_RECEIVERS = new Set([
  'src/daemon/state-dir-lock.ts: .hold', // a file lock (locks.hold)
  'src/sync/process-lock.ts: .hold', // the dataset lock
  'src/emulator/a2a/tasks.ts: .hold', // an emulator task step's flag
  'src/sync/core/diff.ts: .adopt', // the diff's sink of adopted ids, pure
  'src/cli/commands/held-action.ts: { confirm }', // the A2A answer-sources confirm, imported lazily
]);

function tsFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && e.name.endsWith('.ts'))
    .map((e) => join(e.parentPath, e.name));
}

/** `file:line: what` of each write of a plan's life (or a reach for one) outside its owners. */
function writesOutsideLedger(files: readonly string[]): string[] {
  const out: string[] = [];
  for (const f of files) {
    const rel = relative(ROOT, f);
    if (OWNERS.has(rel) || rel.startsWith('src/snapshot/')) continue;
    const src = ts.createSourceFile(f, readFileSync(f, 'utf8'), ts.ScriptTarget.Latest, true);
    const at = (n: ts.Node, what: string) => {
      if (!OTHER_RECEIVERS.has(`${rel}: ${what}`)) out.push(`${rel}:${src.getLineAndCharacterOfPosition(n.getStart(src)).line + 1}: ${what}`);
    };
    const visit = (n: ts.Node): void => {
      // Any use of a guarded method on any receiver (called, `?.`, aliased to a variable).
      if (ts.isPropertyAccessExpression(n) && GUARDED.has(n.name.text)) at(n, `.${n.name.text}`);
      else if (ts.isElementAccessExpression(n) && ts.isStringLiteralLike(n.argumentExpression) && GUARDED.has(n.argumentExpression.text)) at(n, `['${n.argumentExpression.text}']`);
      // Destructured out of an object: `const { confirm } = store`.
      else if (ts.isBindingElement(n) && ts.isObjectBindingPattern(n.parent)) {
        const key = n.propertyName ?? n.name;
        if ((ts.isIdentifier(key) || ts.isStringLiteralLike(key)) && GUARDED.has(key.text)) at(n, `{ ${key.text} }`);
      }
      // A plan-file write called by its name (passed in, or imported under its own name).
      else if (ts.isCallExpression(n) && ts.isIdentifier(n.expression) && PLAN_FILE_WRITES.has(n.expression.text)) at(n, `${n.expression.text}()`);
      // Imported at all, under any name.
      else if (ts.isImportSpecifier(n) && PLAN_FILE_WRITES.has((n.propertyName ?? n.name).text)) at(n, `import ${(n.propertyName ?? n.name).text}`);
      ts.forEachChild(n, visit);
    };
    visit(src);
  }
  return out;
}

describe('the ledger', () => {
  it('is the only caller of the journal, plan-file, outcome, hold and confirm writes in src/', () => {
    const files = tsFiles(join(ROOT, 'src'));
    expect(files.length).toBeGreaterThan(200);
    expect(writesOutsideLedger(files)).toEqual([]);
  });

  it('names a write outside the ledger in every shape (so the test above can fail)', () => {
    const fixture = join(import.meta.dirname, 'fixtures/ledger-bypass.ts');
    expect(writesOutsideLedger([fixture])).toEqual([
      'test/layout/fixtures/ledger-bypass.ts:2: import savePlan',
      'test/layout/fixtures/ledger-bypass.ts:5: .recordOutcome',
      'test/layout/fixtures/ledger-bypass.ts:6: .finishPlan',
      'test/layout/fixtures/ledger-bypass.ts:7: removePlan()',
      'test/layout/fixtures/ledger-bypass.ts:8: .beginPlan',
      'test/layout/fixtures/ledger-bypass.ts:9: .reopenPlan',
      'test/layout/fixtures/ledger-bypass.ts:12: .finishPlan',
      'test/layout/fixtures/ledger-bypass.ts:14: { confirm }',
      "test/layout/fixtures/ledger-bypass.ts:16: ['clearHeld']",
    ]);
  });
});
