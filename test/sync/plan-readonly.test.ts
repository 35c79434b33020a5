import { describe, expect, it } from 'vitest';
import type { SyncPlan } from '../../src/sync/core/plan.js';

/**
 * Issue 12: a plan is never changed once made (the plan printed is the plan
 * that runs). The type says so: `npm run typecheck` fails when an assignment
 * to a plan's field below compiles (each @ts-expect-error then goes unused).
 */
function mutate(plan: SyncPlan): void {
  // @ts-expect-error a plan's path is read only
  plan.path = 'replace';
  // @ts-expect-error a plan's hold is read only
  plan.held = false;
  // @ts-expect-error a plan's reason is read only
  plan.reason = '';
}

describe('SyncPlan is read only by type', () => {
  it('field assignments do not compile (checked by tsc; at run time the function exists)', () => {
    expect(typeof mutate).toBe('function');
  });
});
