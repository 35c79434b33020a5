import { setFlagsFromString } from 'node:v8';

/**
 * Two V8 behaviours that suit a sync but not a daemon's start-up, held off
 * while it starts (issue 18: an idle daemon peaked at 89 MB for a 75 MB need).
 * Loading ~300 modules and reading the config allocate much that survives, and
 * run the module loader's code hot for a moment:
 *  - the young generation grew from 1 to 16 MB of semi-space (14 MB of RSS),
 *    given back only 10-20 s later by V8's memory reducer; its growth factor
 *    held at 1 keeps it at its start size;
 *  - the optimizing compiler (TurboFan) compiled the loader's functions, which
 *    touched 4 MB of node's program file and its own memory, for code an idle
 *    daemon does not run again.
 * Both are read by V8 at each use, so a change after the heap is set up takes
 * effect (unlike --max-semi-space-size). Released once the daemon has started,
 * before any sync needs them (a 1 MB young generation throughout costs a large
 * sync 25-38% more CPU): a journal resume queued at start has them from then on.
 * A flag node was given on its command line (or in NODE_OPTIONS) is left alone.
 */
const HOLDS = [
  // V8's default growth factor is 2.
  { flag: 'semi-space-growth-factor', whileStarting: '--semi-space-growth-factor=1', after: '--semi-space-growth-factor=2' },
  { flag: 'turbofan', whileStarting: '--no-turbofan', after: '--turbofan', also: ['opt', 'jitless'] },
] as const;

let held: (typeof HOLDS)[number][] = [];

/** Hold both off until releaseStartUpHold(); call before the modules of the daemon load. */
export function holdForStartUp(): void {
  if (held.length > 0) return;
  const given = [...process.execArgv, ...(process.env.NODE_OPTIONS ?? '').split(/\s+/)].map((a) => a.replace(/^--(no-)?/, '').replace(/_/g, '-').split('=')[0]);
  held = HOLDS.filter((h) => ![h.flag, ...('also' in h ? h.also : [])].some((f) => given.includes(f)));
  for (const h of held) setFlagsFromString(h.whileStarting);
}

/** Give V8 both back (the daemon has started); a no-op unless held. */
export function releaseStartUpHold(): void {
  for (const h of held) setFlagsFromString(h.after);
  held = [];
}

/** What is held now, by V8 flag name (for tests). */
export function startUpHeld(): string[] {
  return held.map((h) => h.flag);
}
