/**
 * TEST-ONLY: lets the crash test kill the process right after a given journal
 * step was written (`DATASET_CONNECTOR_CRASH_AT=<step>` or `<step>#<n>` for the
 * n-th time that step is written, 1-based). Unset in production: a no-op.
 */
const counts = new Map<string, number>();
let handler: ((step: string) => void) | null = null;

/** TEST-ONLY: call `h` at every crash point (an in-process stand-in for the kill, e.g. the soak test's); null removes it. */
export function onCrashPoint(h: ((step: string) => void) | null): void {
  handler = h;
}

/** Called after each journal write; kills this process with SIGKILL when the env asks for this step. */
export function crashPoint(step: string): void {
  handler?.(step);
  const want = process.env.DATASET_CONNECTOR_CRASH_AT;
  if (!want) return;
  const [name, nth] = want.split('#');
  if (name !== step) return;
  const n = (counts.get(step) ?? 0) + 1;
  counts.set(step, n);
  if (n === Number(nth ?? '1')) process.kill(process.pid, 'SIGKILL');
}
