import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { evaluateGuards, guardCountsOfDraft } from '../../src/sync/core/guards.js';
import { policySchema } from '../../src/config/policy.js';

describe('evaluateGuards against a draft (A19 counts)', () => {
  const p = policySchema.parse({});
  it('holds when the draft deletes more than planned share', () => {
    const ev = evaluateGuards(guardCountsOfDraft({ added: 0, changed: 1, deleted: 30 }, 100, 100), {}, p);
    expect(ev.holds).toBe(true);
    expect(ev.results.find((r) => r.guard === 'max_delete_ratio')).toMatchObject({ holds: true, value: 0.3, limit: 0.2 });
  });
  it('passes a draft within the limits and asks the server for no flags', () => {
    const ev = evaluateGuards(guardCountsOfDraft({ added: 5, changed: 1, deleted: 2 }, 100, 100), {}, p);
    expect(ev).toMatchObject({ holds: false, requiredFlags: { allow_mass_delete: false, allow_empty: false } });
  });
  it('reports an empty result and the A5 flags a person would approve with', () => {
    const ev = evaluateGuards(guardCountsOfDraft({ added: 0, changed: 0, deleted: 4 }, 4, 4), {}, p);
    expect(ev.results.filter((r) => r.holds).map((r) => r.guard)).toEqual(['max_delete_ratio', 'empty_result']);
    expect(ev.requiredFlags).toEqual({ allow_mass_delete: true, allow_empty: true });
    expect(ev.connectorFlags).toEqual({ allow_mass_delete: false, allow_empty: false });
  });
});

describe('policySchema', () => {
  it('has the documented defaults', () => {
    expect(policySchema.parse({})).toEqual({
      staging: true,
      direct_publish_max_changes: 0,
      guards: {
        max_delete_ratio: 0.2,
        min_records: 0,
        allow_empty: false,
        allow_mass_delete: false,
        values: [{ field: '*', max_zeroed_ratio: 0.25, jump_factor: 10, max_jump_ratio: 0.25, min_compared: 20, min_all_compared: 3 }],
      },
      ownership: 'source',
      on_foreign_edit: 'overwrite',
      on_foreign_draft: 'wait',
      replace: { prefer_import: true, estimated_job_ms: 10_000, job_poll_ms: 1_000 },
      unchanged_rows: true,
    });
  });
  it('refuses a delete ratio of one half or more, and unknown keys', () => {
    expect(policySchema.safeParse({ guards: { max_delete_ratio: 0.5 } }).success).toBe(false);
    expect(policySchema.safeParse({ guards: { max_delete_ratio: 0.49 } }).success).toBe(true);
    expect(policySchema.safeParse({ stagng: true }).success).toBe(false);
    expect(policySchema.safeParse({ guards: { allow_emtpy: true } }).success).toBe(false);
  });
  it('describes every option', () => {
    const schema = z.toJSONSchema(policySchema, { io: 'input' }) as unknown as { properties: Record<string, { description?: string; properties?: Record<string, { description?: string }> }> };
    expect(Object.keys(schema.properties)).toHaveLength(8);
    for (const [k, v] of Object.entries(schema.properties)) {
      expect(v.description, k).toBeTruthy();
      for (const [k2, v2] of Object.entries(v.properties ?? {})) expect(v2.description, `${k}.${k2}`).toBeTruthy();
    }
  });
});
