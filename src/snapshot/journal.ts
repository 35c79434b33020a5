import type Database from 'better-sqlite3';
import { ConnectorError } from '../errors.js';
import type { Clock } from '../clock.js';

/** A plan being executed; at most one open per dataset. */
export interface JournalPlan {
  planId: string;
  dataset: string;
  path: string;
  summary: unknown;
  status: 'open' | 'finished';
  outcome: string | null;
  createdAt: number;
  updatedAt: number;
}

/** The intent of one request, recorded before it is sent (house style 7). */
export interface JournalIntent {
  /** Order within the plan; unique per plan. */
  step: number;
  /** e.g. 'post', 'patch', 'delete', 'replace', 'import', 'publish', 'discard'. */
  kind: string;
  /** JSON-serialisable description of the request (record_id, draft version, …). */
  intent?: unknown;
  idempotencyKey?: string | null;
  /** sha256 of the canonical body, to re-send exactly the same body. */
  bodyHash?: string | null;
  draftVersion?: number | null;
  jobId?: string | null;
}

/** A recorded step. status: intent (maybe sent, outcome unknown), done, failed. */
export interface JournalEntry extends Required<Omit<JournalIntent, 'intent'>> {
  id: number;
  planId: string;
  intent: unknown;
  status: 'intent' | 'done' | 'failed';
  result: unknown;
  createdAt: number;
  updatedAt: number;
}

interface EntryRow {
  id: number;
  plan_id: string;
  step: number;
  kind: string;
  intent: string | null;
  idempotency_key: string | null;
  body_hash: string | null;
  draft_version: number | null;
  job_id: string | null;
  status: JournalEntry['status'];
  result: string | null;
  created_at: number;
  updated_at: number;
}

/** The journal of in-flight work, for resuming after a crash. Every call is one transaction. */
/** The closed set of a plan's transitions (src/sync/executor/ledger.ts makes each); the journal records each ending one as the plan's outcome. */
export type PlanTransition =
  | 'begun'
  | 'approved'
  | 'held'
  | 'staged'
  | 'published'
  | 'refused'
  | 'rejected'
  | 'superseded'
  | 'abandoned'
  | 'blocked'
  | 'mixed'
  | 'dropped';

/** The transitions that close a plan (its journal outcome). */
export type PlanEnd = Exclude<PlanTransition, 'begun' | 'approved' | 'dropped'>;

export class Journal {
  constructor(
    private readonly conn: Database.Database,
    private readonly clock: Clock,
  ) {}

  /** Open a plan for a dataset; JOURNAL_BUSY (action retry) if it already has an open plan, JOURNAL_PLAN_EXISTS if the id was used. */
  beginPlan(dataset: string, plan: { planId: string; path: string; summary?: unknown }): JournalPlan {
    const open = this.openPlan(dataset);
    if (open) {
      throw new ConnectorError('JOURNAL_BUSY', `Dataset ${dataset} has an unfinished plan ${open.planId}; resume or finish it first.`, {
        action: 'retry',
        context: { dataset, planId: open.planId },
      });
    }
    if (this.plan(plan.planId)) {
      throw new ConnectorError('JOURNAL_PLAN_EXISTS', `Plan ${plan.planId} was already journaled.`, {
        action: 'stop',
        context: { dataset, planId: plan.planId },
      });
    }
    const now = this.clock.now();
    this.conn
      .prepare(
        "INSERT INTO plans (plan_id, dataset, path, summary, status, created_at, updated_at) VALUES (?, ?, ?, ?, 'open', ?, ?)",
      )
      .run(plan.planId, dataset, plan.path, plan.summary === undefined ? null : JSON.stringify(plan.summary), now, now);
    return this.plan(plan.planId)!;
  }

  /** Record the intent of the next request before sending it. */
  recordIntent(planId: string, i: JournalIntent): JournalEntry {
    const now = this.clock.now();
    const info = this.conn
      .prepare(
        `INSERT INTO journal (plan_id, step, kind, intent, idempotency_key, body_hash, draft_version, job_id, status, created_at, updated_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'intent', ?, ?)`,
      )
      .run(
        planId,
        i.step,
        i.kind,
        i.intent === undefined ? null : JSON.stringify(i.intent),
        i.idempotencyKey ?? null,
        i.bodyHash ?? null,
        i.draftVersion ?? null,
        i.jobId ?? null,
        now,
        now,
      );
    this.touchPlan(planId, now);
    return this.entry(Number(info.lastInsertRowid))!;
  }

  /** Add what became known while the request ran (job id, draft version). */
  update(entryId: number, patch: { jobId?: string | null; draftVersion?: number | null }): JournalEntry {
    const e = this.mustEntry(entryId);
    this.conn
      .prepare('UPDATE journal SET job_id = ?, draft_version = ?, updated_at = ? WHERE id = ?')
      .run(
        patch.jobId === undefined ? e.jobId : patch.jobId,
        patch.draftVersion === undefined ? e.draftVersion : patch.draftVersion,
        this.clock.now(),
        entryId,
      );
    return this.entry(entryId)!;
  }

  /** The request was answered and its effect is known. */
  markDone(entryId: number, result?: unknown): JournalEntry {
    return this.finishEntry(entryId, 'done', result);
  }

  /** The request failed for sure (nothing applied). */
  markFailed(entryId: number, result?: unknown): JournalEntry {
    return this.finishEntry(entryId, 'failed', result);
  }

  /** The dataset's open plan, if any. */
  openPlan(dataset: string): JournalPlan | null {
    const r = this.conn.prepare("SELECT * FROM plans WHERE dataset = ? AND status = 'open'").get(dataset);
    return r ? toPlan(r as PlanRow) : null;
  }

  /** A plan by id. */
  plan(planId: string): JournalPlan | null {
    const r = this.conn.prepare('SELECT * FROM plans WHERE plan_id = ?').get(planId);
    return r ? toPlan(r as PlanRow) : null;
  }

  /** All steps of a plan, in step order. */
  entries(planId: string): JournalEntry[] {
    return (this.conn.prepare('SELECT * FROM journal WHERE plan_id = ? ORDER BY step').all(planId) as EntryRow[]).map(toEntry);
  }

  /** What to resume after a crash: the open plan and its steps whose outcome is not known. */
  pending(dataset: string): { plan: JournalPlan; entries: JournalEntry[]; pending: JournalEntry[] } | null {
    const plan = this.openPlan(dataset);
    if (!plan) return null;
    const entries = this.entries(plan.planId);
    return { plan, entries, pending: entries.filter((e) => e.status === 'intent') };
  }

  /** Close a plan with its outcome (one of the ledger's closing transitions). */
  finishPlan(planId: string, outcome: PlanEnd): void {
    const now = this.clock.now();
    this.conn.prepare("UPDATE plans SET status = 'finished', outcome = ?, updated_at = ? WHERE plan_id = ?").run(outcome, now, planId);
  }

  /** Open a finished plan again (a held change a person approved is sent under its own journal); JOURNAL_BUSY if another plan of the dataset is open. */
  reopenPlan(planId: string): JournalPlan {
    const p = this.plan(planId);
    if (!p) throw new ConnectorError('JOURNAL_PLAN_MISSING', `Plan ${planId} is not journaled.`, { action: 'stop', context: { planId } });
    const open = this.openPlan(p.dataset);
    if (open && open.planId !== planId) {
      throw new ConnectorError('JOURNAL_BUSY', `Dataset ${p.dataset} has an unfinished plan ${open.planId}; resume or finish it first.`, {
        action: 'retry',
        context: { dataset: p.dataset, planId: open.planId },
      });
    }
    this.conn.prepare("UPDATE plans SET status = 'open', outcome = NULL, updated_at = ? WHERE plan_id = ?").run(this.clock.now(), planId);
    return this.plan(planId)!;
  }

  /**
   * The plan of `dataset` whose journal says it staged into draft `version`
   * (a per-record write answered `draft`, or a job that left that draft), if any.
   */
  planOfDraft(dataset: string, version: number): string | null {
    const r = this.conn
      .prepare(
        `SELECT j.plan_id FROM journal j JOIN plans p ON p.plan_id = j.plan_id
         WHERE p.dataset = ? AND j.kind IN ('post', 'patch', 'delete', 'job')
           AND (j.draft_version = ? OR (json_extract(j.result, '$.status') = 'draft' AND json_extract(j.result, '$.version') = ?))
         ORDER BY j.id DESC LIMIT 1`,
      )
      .pluck()
      .get(dataset, version, version);
    return (r as string | undefined) ?? null;
  }

  /**
   * Delete finished plans (and their steps) last updated before `before` (ms),
   * of one dataset when given, except the plans in `keep`; returns their ids.
   */
  prune(before: number, opts: { dataset?: string; keep?: readonly string[] } = {}): string[] {
    return this.conn.transaction(() => {
      const keep = new Set(opts.keep ?? []);
      const ids = (
        this.conn
          .prepare("SELECT plan_id FROM plans WHERE status = 'finished' AND updated_at < ? AND (? IS NULL OR dataset = ?)")
          .pluck()
          .all(before, opts.dataset ?? null, opts.dataset ?? null) as string[]
      ).filter((id) => !keep.has(id));
      const steps = this.conn.prepare('DELETE FROM journal WHERE plan_id = ?');
      const plan = this.conn.prepare('DELETE FROM plans WHERE plan_id = ?');
      for (const id of ids) {
        steps.run(id);
        plan.run(id);
      }
      return ids;
    }).immediate();
  }

  private entry(id: number): JournalEntry | null {
    const r = this.conn.prepare('SELECT * FROM journal WHERE id = ?').get(id);
    return r ? toEntry(r as EntryRow) : null;
  }

  private mustEntry(id: number): JournalEntry {
    const e = this.entry(id);
    if (!e) throw new ConnectorError('JOURNAL_ENTRY_MISSING', `Journal entry ${id} does not exist.`, { action: 'stop' });
    return e;
  }

  private finishEntry(id: number, status: 'done' | 'failed', result: unknown): JournalEntry {
    const e = this.mustEntry(id);
    const now = this.clock.now();
    this.conn.transaction(() => {
      this.conn
        .prepare('UPDATE journal SET status = ?, result = ?, updated_at = ? WHERE id = ?')
        .run(status, result === undefined ? null : JSON.stringify(result), now, id);
      this.touchPlan(e.planId, now);
    }).immediate();
    return this.entry(id)!;
  }

  private touchPlan(planId: string, now: number): void {
    this.conn.prepare('UPDATE plans SET updated_at = ? WHERE plan_id = ?').run(now, planId);
  }
}

interface PlanRow {
  plan_id: string;
  dataset: string;
  path: string;
  summary: string | null;
  status: 'open' | 'finished';
  outcome: string | null;
  created_at: number;
  updated_at: number;
}

function toPlan(r: PlanRow): JournalPlan {
  return {
    planId: r.plan_id,
    dataset: r.dataset,
    path: r.path,
    summary: r.summary == null ? null : (JSON.parse(r.summary) as unknown),
    status: r.status,
    outcome: r.outcome,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
}

function toEntry(r: EntryRow): JournalEntry {
  return {
    id: r.id,
    planId: r.plan_id,
    step: r.step,
    kind: r.kind,
    intent: r.intent == null ? null : (JSON.parse(r.intent) as unknown),
    idempotencyKey: r.idempotency_key,
    bodyHash: r.body_hash,
    draftVersion: r.draft_version,
    jobId: r.job_id,
    status: r.status,
    result: r.result == null ? null : (JSON.parse(r.result) as unknown),
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
}
