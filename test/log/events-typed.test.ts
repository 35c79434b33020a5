import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { LOG_EVENTS } from '../../src/log/index.js';

const SRC = join(import.meta.dirname, '../../src');
const LEVELS = new Set(['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'child']);

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && e.name.endsWith('.ts'))
    .map((e) => join(e.parentPath, e.name));
}

/** Log calls (`x.info({...})`, `x.child({...})`) whose object literal sets `event` itself instead of going through `event()`. */
function rawEvents(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  // A property named event is written `event:`, `'event':` or shorthand `{ event }`; a file with none needs no parse.
  if (!/\bevent['"]?\s*[:,}]/.test(text)) return [];
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isCallExpression(node) && ts.isPropertyAccessExpression(node.expression) && LEVELS.has(node.expression.name.text)) {
      for (const arg of node.arguments) {
        if (!ts.isObjectLiteralExpression(arg)) continue;
        for (const p of arg.properties) {
          const name = p.name && (ts.isIdentifier(p.name) || ts.isStringLiteral(p.name)) ? p.name.text : undefined;
          if (name === 'event') {
            const { line } = sf.getLineAndCharacterOfPosition(p.getStart());
            found.push(`${relative(SRC, file)}:${line + 1}: ${p.getText().slice(0, 60)}`);
          }
        }
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return found;
}

describe('log events', () => {
  // House style 8: the closed list holds only if every line's event goes through the typed helper.
  it('no log call in src/ sets `event` by hand', () => {
    const raw = sources(SRC).flatMap(rawEvents);
    expect(raw).toEqual([]);
  });

  it('the check sees a raw event literal (so the test above can fail)', () => {
    const probe = join(import.meta.dirname, 'fixtures-raw-event.ts.txt');
    expect(rawEvents(probe)).toHaveLength(2);
  });

  it('keeps the area.what form and no duplicates', () => {
    for (const e of LOG_EVENTS) expect(e).toMatch(/^[a-z0-9_]+\.[a-z0-9_]+$/);
    expect(new Set(LOG_EVENTS).size).toBe(LOG_EVENTS.length);
  });
});
