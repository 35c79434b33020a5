import { isMap, isPair, isScalar, isSeq, type Document, type YAMLError } from 'yaml';
import type { ConfigIssue } from './errors.js';

/**
 * The YAML parser's errors of one file as issues a person can act on: tabs
 * used for indentation are one issue naming their lines (the parser reports
 * each tab and then what the tabs broke); a duplicate option names itself and
 * its option path. Anything else keeps the parser's first line.
 */
export function yamlIssues(file: string, doc: Document, errors: readonly YAMLError[] = doc.errors): ConfigIssue[] {
  const tabs = errors.filter((e) => e.code === 'TAB_AS_INDENT');
  if (tabs.length > 0) {
    const lines = [...new Set(tabs.map((e) => e.linePos?.[0].line).filter((l): l is number => l !== undefined))];
    const where = lines.length === 1 ? `line ${lines[0]}` : `lines ${lines.join(', ')}`;
    return [
      {
        file,
        line: lines[0] ?? null,
        path: '',
        message: `not valid YAML: tabs are used for indentation on ${where} (expected spaces: YAML does not allow tabs; replace each tab with spaces)`,
      },
    ];
  }
  return errors.map((e) => {
    const line = e.linePos?.[0].line ?? null;
    if (e.code === 'DUPLICATE_KEY') {
      const path = keyPathAt(doc.contents, e.pos[0], []);
      if (path) {
        const name = String(path[path.length - 1]);
        return { file, line, path: path.join('.'), message: `option "${name}" is written twice in the same mapping (expected it once: keep one and delete the other)` };
      }
    }
    return { file, line, path: '', message: `not valid YAML: ${e.message.split('\n')[0] ?? e.message}` };
  });
}

/** The option path of the key that starts at `offset`, or null. */
function keyPathAt(node: unknown, offset: number, path: (string | number)[]): (string | number)[] | null {
  if (isMap(node)) {
    for (const pair of node.items) {
      if (!isPair(pair)) continue;
      const key = isScalar(pair.key) ? String(pair.key.value) : '?';
      if ((pair.key as { range?: number[] } | null)?.range?.[0] === offset) return [...path, key];
      const found = keyPathAt(pair.value, offset, [...path, key]);
      if (found) return found;
    }
  } else if (isSeq(node)) {
    for (let i = 0; i < node.items.length; i++) {
      const found = keyPathAt(node.items[i], offset, [...path, i]);
      if (found) return found;
    }
  }
  return null;
}
