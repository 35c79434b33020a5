import { setFlagsFromString } from 'node:v8';

/**
 * V8's young generation grows (1 → 16 MB of semi-space, 14 MB of RSS) when
 * much of what it allocates survives, which is what loading ~300 modules and
 * reading the config does. Grown at start-up, it stays so until V8's memory
 * reducer gives it back 10-20 s later, so an idle daemon peaked at 89 MB for
 * a 75 MB need (issue 18). Holding its growth factor at 1 while the process
 * starts keeps it at its 1 MB start; releasing it before any sync lets a
 * large sync grow it as usual (a 1 MB young generation throughout costs a
 * large sync 25-38% more CPU). The factor is read at each growth, so a change
 * after the heap is set up takes effect (unlike --max-semi-space-size).
 */
const V8_DEFAULT_GROWTH_FACTOR = 2;

let held = false;

/** Keep the young generation at its start size until releaseYoungGeneration(); not when node was given the flag. */
export function holdYoungGeneration(): void {
  if (held || process.execArgv.some((a) => a.startsWith('--semi-space-growth-factor') || a.startsWith('--semi_space_growth_factor'))) return;
  setFlagsFromString('--semi-space-growth-factor=1');
  held = true;
}

/** Let the young generation grow again (before any sync); a no-op unless held. */
export function releaseYoungGeneration(): void {
  if (!held) return;
  setFlagsFromString(`--semi-space-growth-factor=${V8_DEFAULT_GROWTH_FACTOR}`);
  held = false;
}

/** Whether the young generation is held (for tests). */
export function youngGenerationHeld(): boolean {
  return held;
}
