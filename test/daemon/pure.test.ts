import { describe, expect, it } from 'vitest';
import type { DatasetConfig } from '../../src/config/schema.js';
import { configDelta } from '../../src/daemon/config-delta.js';
import { DRAFT_LIFETIME_MS, draftExpiry } from '../../src/daemon/draft-expiry.js';
import { driftToRepair } from '../../src/daemon/drift-repair.js';
import { nextForError, nextForResult, skipReason } from '../../src/files/file-job.js';
import { ConnectorError } from '../../src/errors.js';
import type { HeldDraft, RebuildReport } from '../../src/snapshot/types.js';

const ds = (name: string, extra: Record<string, unknown> = {}) => ({ name, file: `/etc/${name}.yaml`, ...extra }) as unknown as DatasetConfig;

describe('config delta', () => {
  it('sorts datasets into added, changed, removed and unchanged; the defining file does not count', () => {
    const before = { a: ds('a'), b: ds('b', { x: 1 }), c: ds('c') };
    const after = { a: { ...ds('a'), file: '/etc/conf.d/a.yaml' } as DatasetConfig, b: ds('b', { x: 2 }), d: ds('d') };
    expect(configDelta(before, after)).toEqual({ added: ['d'], changed: ['b'], removed: ['c'], unchanged: ['a'] });
  });
});

describe('draft expiry', () => {
  const held = (over: Partial<HeldDraft> = {}): HeldDraft => ({
    kind: 'guard',
    version: 7,
    reason: 'max_delete_ratio',
    planId: 'p',
    summary: null,
    since: 0,
    ...over,
  });
  const H = 3_600_000;

  it.each([
    [1 * H, 'ok'],
    [20 * H, 'expiring'],
    [DRAFT_LIFETIME_MS, 'expired'],
  ] as const)('at %i ms a draft is %s (warn 4 h before)', (now, state) => {
    expect(draftExpiry(held(), now, 4 * H).state).toBe(state);
  });

  it('ignores changes held unsent and drafts of someone else', () => {
    expect(draftExpiry(held({ version: null }), 30 * H, 4 * H)).toEqual({ state: 'none' });
    expect(draftExpiry(held({ kind: 'foreign_draft' }), 30 * H, 4 * H)).toEqual({ state: 'none' });
    expect(draftExpiry(null, 0, 0)).toEqual({ state: 'none' });
  });

  it('says how long is left', () => {
    expect(draftExpiry(held({ since: 1000 }), 1000 + 22 * H, 4 * H)).toMatchObject({ state: 'expiring', leftMs: 2 * H, ageMs: 22 * H });
  });
});

describe('what happens to a file after its sync', () => {
  it.each([
    ['published', { next: 'dispose', fate: 'processed' }],
    ['unchanged', { next: 'dispose', fate: 'processed' }],
    ['skipped', { next: 'dispose', fate: 'processed' }],
    ['held', { next: 'dispose', fate: 'processed' }],
    ['staged', { next: 'dispose', fate: 'processed' }],
    ['rejected', { next: 'dispose', fate: 'failed' }],
    ['failed', { next: 'retry', slow: false }],
    ['waiting', { next: 'retry', slow: true }],
    ['stopped', { next: 'retry', slow: true }],
  ] as const)('%s → %j', (result, want) => {
    expect(nextForResult(result)).toEqual(want);
  });

  it('decides on the error action, never on the message', () => {
    const err = (action: 'retry' | 'reject' | 'hold' | 'stop') => new ConnectorError('X', 'whatever', { action });
    expect(nextForError(err('reject'))).toEqual({ next: 'dispose', fate: 'failed' });
    expect(nextForError(err('hold'))).toEqual({ next: 'dispose', fate: 'processed' });
    expect(nextForError(err('retry'))).toEqual({ next: 'retry', slow: false });
    expect(nextForError(err('stop'))).toEqual({ next: 'retry', slow: true });
    expect(nextForError(new TypeError('bug'))).toEqual({ next: 'retry', slow: false });
  });
});

describe('same-content skip', () => {
  it.each([
    ['a new export', 'h2', 'h1', undefined, null],
    ['the last export again', 'h1', 'h1', undefined, 'same_content'],
    ['any export once the hash is forgotten', 'h1', null, undefined, null],
    ['a reapply while the hash stays forgotten', 'h1', null, 'h1', null],
    ['a reapply after another export was processed', 'h1', 'h2', 'h1', 'newer_export'],
    ['a reapply after the same content was processed again', 'h1', 'h1', 'h1', 'same_content'],
    ['a reapply whose archived file changed', 'h3', null, 'h1', 'archive_changed'],
  ] as const)('%s', (_what, hash, last, reapplyOf, want) => {
    expect(skipReason(hash, last, reapplyOf)).toBe(want);
  });
});

describe('drift to repair', () => {
  const report: RebuildReport = {
    records: 10,
    added: 2,
    removed: 1,
    changed: 3,
    foreignEdits: [{ record_id: 'a', fields: ['display_name'] }, { record_id: 'b', fields: ['attributes'] }],
    ownedRemoved: 1,
  };
  it.each([
    ['source + overwrite: edits and deletions of ours', { ownership: 'source', on_foreign_edit: 'overwrite' }, { edited: 2, deleted: 1, added: 0 }],
    ['source + keep: the kept edits are not drift', { ownership: 'source', on_foreign_edit: 'keep' }, { edited: 0, deleted: 1, added: 0 }],
    ['full: records added by hand are drift too', { ownership: 'full', on_foreign_edit: 'overwrite' }, { edited: 2, deleted: 1, added: 2 }],
  ] as const)('%s', (_what, policy, want) => {
    expect(driftToRepair(report, policy)).toEqual(want);
  });
});
