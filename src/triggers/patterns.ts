import { BUILTIN_IGNORE } from '../config/watch.js';

/**
 * File-name globs: `*` any run of characters, `?` one character, `[abc]` a set.
 * Only base names are matched, so no `**` or folders; node's path.matchesGlob
 * would do but is still experimental on Node 20 and warns at run time.
 */
export function globToRegExp(pattern: string): RegExp {
  let out = '';
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    if (c === '*') out += '.*';
    else if (c === '?') out += '.';
    else if (c === '[') {
      const end = pattern.indexOf(']', i + 1);
      if (end === -1) out += '\\[';
      else {
        const body = pattern.slice(i + 1, end).replace(/\\/g, '\\\\');
        out += body.startsWith('!') ? `[^${body.slice(1)}]` : `[${body}]`;
        i = end;
      }
    } else out += c.replace(/[.+^${}()|\\\]]/g, '\\$&');
  }
  return new RegExp(`^${out}$`, 'su');
}

/** A compiled include/ignore filter over file names. */
export interface NameFilter {
  /** True when `name` (a base name) is a candidate export. */
  accepts(name: string): boolean;
}

/** Build the filter of a watch: built-in ignores and `ignore` win over `include`; empty `include` means all. */
export function nameFilter(include: readonly string[], ignore: readonly string[]): NameFilter {
  const inc = include.map(globToRegExp);
  const ign = [...BUILTIN_IGNORE, ...ignore].map(globToRegExp);
  return {
    accepts(name) {
      if (ign.some((r) => r.test(name))) return false;
      return inc.length === 0 || inc.some((r) => r.test(name));
    },
  };
}
