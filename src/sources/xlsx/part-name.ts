import { boundText } from '../../model/excerpt.js';

/**
 * A part or entry name as a message shows it: it comes from the file. A module of its own, not in
 * archive.ts: every CSV read checks inflation limits through zip-guard.ts, and archive.ts loads the zip
 * reader (issue 18: an idle daemon need not hold it).
 */
export function partName(name: string): string {
  return boundText(name, 120);
}
