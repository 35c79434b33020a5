import { describe, expect, it } from 'vitest';
import { gateStep, heldAwaitsServer, heldFate, type GateFacts } from '../../src/sync/core/gate.js';
import type { HeldDraft } from '../../src/snapshot/types.js';

const held = (over: Partial<HeldDraft> = {}): HeldDraft => ({
  kind: 'guard',
  version: 7,
  reason: 'max_deletes: 5 > 2',
  planId: 'p1',
  summary: { fileHash: 'aaa' },
  since: 0,
  ...over,
});
const facts = (over: Partial<GateFacts> = {}): GateFacts => ({
  held: null,
  draftVersion: null,
  fileHash: 'aaa',
  orphanPlan: null,
  openPlan: null,
  onForeignDraft: 'wait',
  ...over,
});

describe('gateStep: the one held gate of plan and sync (pure)', () => {
  const rows: Array<[string, GateFacts, unknown]> = [
    ['nothing held, no draft: plan', facts(), { step: 'plan', clearForeign: false }],
    ['held by a guard, same export: stop held', facts({ held: held(), draftVersion: 7 }), { step: 'stop', stop: { result: 'held', code: 'HELD_GUARD' } }],
    ['staged, same export: stop staged', facts({ held: held({ kind: 'staged' }), draftVersion: 7 }), { step: 'stop', stop: { result: 'staged', code: 'HELD_STAGED' } }],
    ['held, a newer export: replace it', facts({ held: held(), draftVersion: 7, fileHash: 'bbb' }), { step: 'replace_held', held: { version: 7 } }],
    ['held unsent, a newer export: replace it', facts({ held: held({ version: null }), fileHash: 'bbb' }), { step: 'replace_held', held: { version: null } }],
    [
      'a mixed draft: wait, even with on_foreign_draft discard',
      facts({ held: held({ kind: 'foreign_draft', summary: { mixed: true } }), draftVersion: 7, onForeignDraft: 'discard' }),
      { step: 'stop', stop: { result: 'waiting', code: 'DRAFT_MIXED' } },
    ],
    ['a held foreign draft now gone: plan and forget it', facts({ held: held({ kind: 'foreign_draft', summary: null }) }), { step: 'plan', clearForeign: true }],
    ['an orphan of ours: settle it', facts({ draftVersion: 9, orphanPlan: 'p0' }), { step: 'settle_orphan', planId: 'p0', version: 9 }],
    ['the draft of our open plan, even with on_foreign_draft discard: ours, finish it', facts({ draftVersion: 9, openPlan: 'p2', onForeignDraft: 'discard' }), { step: 'finish_open', planId: 'p2', version: 9 }],
    ['someone else\'s draft, wait', facts({ draftVersion: 9 }), { step: 'foreign_draft', version: 9, stop: { result: 'waiting', code: 'DRAFT_PENDING' } }],
    ['someone else\'s draft, discard', facts({ draftVersion: 9, onForeignDraft: 'discard' }), { step: 'foreign_draft', version: 9, stop: null }],
    // Issue 13: a held change of one feed is never replaced by another feed's file; the same feed's newer file replaces it.
    [
      'held change of feed stock, a file of feed main: wait',
      facts({ held: held({ summary: { fileHash: 'aaa', feed: 'stock' } }), draftVersion: 7, fileHash: 'bbb', feed: { name: 'main', primary: 'main', dataset: 'shop-1' } }),
      { step: 'stop', stop: { result: 'waiting', code: 'HELD_OTHER_FEED' } },
    ],
    [
      'held change without a feed (the primary\'s), a file of feed stock: wait',
      facts({ held: held(), draftVersion: 7, fileHash: 'bbb', feed: { name: 'stock', primary: 'main', dataset: 'shop-1' } }),
      { step: 'stop', stop: { result: 'waiting', code: 'HELD_OTHER_FEED' } },
    ],
    [
      'held change of feed stock, a newer file of feed stock: replace it',
      facts({ held: held({ summary: { fileHash: 'aaa', feed: 'stock' } }), draftVersion: 7, fileHash: 'bbb', feed: { name: 'stock', primary: 'main', dataset: 'shop-1' } }),
      { step: 'replace_held', held: { version: 7 } },
    ],
  ];
  for (const [name, f, want] of rows) it(name, () => expect(gateStep(f)).toMatchObject(want as object));

  it('asks the server only about a draft of ours that is not the dataset\'s pending one', () => {
    expect(heldAwaitsServer(held(), 7)).toBe(false);
    expect(heldAwaitsServer(held(), null)).toBe(true);
    expect(heldAwaitsServer(held({ version: null }), null)).toBe(false);
    expect(heldAwaitsServer(held({ kind: 'foreign_draft', summary: null }), null)).toBe(false);
    expect(heldAwaitsServer(held({ kind: 'foreign_draft', summary: { mixed: true } }), null)).toBe(true);
    expect([heldFate('active'), heldFate('superseded'), heldFate('draft'), heldFate('discarded'), heldFate(null)]).toEqual(['published', 'published', 'pending', 'gone', 'gone']);
  });
});
