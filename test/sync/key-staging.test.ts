import { describe, expect, it } from 'vitest';
import { decideStaging, type StagingFacts } from '../../src/sync/core/key-staging.js';
import type { KeyShown } from '../../src/snapshot/types.js';

const base: StagingFacts = { path: 'per_record', heldBy: null, stageOnly: false, approved: false, direct: false };

describe('issue 11: the staging rule (pure)', () => {
  // [case, facts, what the key showed, kept unsent, direct writes]
  const table: Array<[string, Partial<StagingFacts>, KeyShown, boolean, boolean]> = [
    ['held, key unknown', { heldBy: 'max_delete_ratio' }, null, true, false],
    ['held, key publishes', { heldBy: 'max_delete_ratio' }, 'publishes', true, false],
    ['held, key stages', { heldBy: 'max_delete_ratio' }, 'stages', false, false],
    ['stage only, key unknown', { stageOnly: true }, null, true, false],
    ['stage only, key stages', { stageOnly: true }, 'stages', false, false],
    ['held and approved, key unknown: sent staged', { heldBy: 'x', approved: true }, null, false, false],
    ['held and approved, key publishes: direct', { heldBy: 'x', approved: true }, 'publishes', false, true],
    ['within the guards, staged, key unknown', {}, null, false, false],
    ['within the guards, direct, key unknown: staged once to learn', { direct: true }, null, false, false],
    ['within the guards, direct, key stages', { direct: true }, 'stages', false, true],
    ['within the guards, staged, key publishes: direct anyway', {}, 'publishes', false, true],
    ['replace held, jobs unknown', { path: 'replace', heldBy: 'x' }, null, true, false],
    ['import held, jobs stage', { path: 'import', heldBy: 'x' }, 'stages', false, false],
    ['replace within the guards, jobs publish: sent (published anyway)', { path: 'replace' }, 'publishes', false, false],
  ];
  for (const [name, facts, shown, unsent, direct] of table) {
    it(name, () => {
      const d = decideStaging({ ...base, ...facts }, shown);
      expect({ unsent: d.unsent, direct: d.direct }).toEqual({ unsent, direct });
      if (unsent) expect(d.why).toMatch(shown === 'publishes' ? /publishes .* at once/ : /has not yet shown that it stages/);
    });
  }
});
