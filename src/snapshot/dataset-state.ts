import type Database from 'better-sqlite3';
import type { HeldDraft, KeyChannel, KeyShown, ServerIdentity, SnapshotState, SourceIdentity } from './types.js';
import type { Clock } from '../clock.js';

interface StateRow {
  active_version: number | null;
  etag: string | null;
  confirmed_at: number | null;
  source_hash: string | null;
  source_rows: number | null;
  source_at: number | null;
  last_job_ms: number | null;
  last_job_records: number | null;
  last_outcome: string | null;
  last_outcome_detail: string | null;
  last_outcome_at: number | null;
  last_success_at: number | null;
  held_kind: HeldDraft['kind'] | null;
  held_version: number | null;
  held_reason: string | null;
  held_plan_id: string | null;
  held_summary: string | null;
  held_since: number | null;
  rebuilt_at: number | null;
  reapply_hash: string | null;
  reapply_drift: string | null;
  reapply_status: ReapplyMarker['status'] | null;
  paused: string | null;
}

/** A dataset paused by a person (issue 14): exports are not taken until resume. */
export interface PauseState {
  /** ms since the epoch. */
  at: number;
  /** Who paused it (the command and user, for status). */
  by: string;
}

/** The last time a reconcile had the last export applied again after drift (migration 5). */
export interface ReapplyMarker {
  /** Content hash of the export applied again. */
  hash: string;
  /** Fingerprint of the drift it answered: the same drift after applying the same export again is not repaired twice. */
  drift: string;
  /** pending: re-queued and not run yet (a restart queues it again); done; repeated: the same drift came back after it, so it is not applied again. */
  status: 'pending' | 'done' | 'repeated';
}

/** The per-dataset row of the state database: confirmed version, last source, outcome, held draft. */
export class DatasetState {
  constructor(
    protected readonly conn: Database.Database,
    readonly dataset: string,
    /** The one clock (src/clock.ts). */
    protected readonly clock: Clock,
  ) {}

  /** Remember the export a completed sync processed (for the row-drop guard and duplicate detection). */
  recordSource(source: SourceIdentity): void {
    this.update('source_hash = ?, source_rows = ?, source_at = ?', source.fileHash, source.rowCount, source.at);
  }

  /**
   * Forget the last export's content hash, keeping its row count: the daemon
   * then syncs the next export with that content instead of skipping it as
   * known (a reconcile found the server drifted from it).
   */
  forgetSourceHash(reapply?: ReapplyMarker): void {
    if (!reapply) this.update('source_hash = NULL');
    // One transaction: a crash never leaves the hash forgotten without the marker that re-queues the export.
    else this.update('source_hash = NULL, reapply_hash = ?, reapply_drift = ?, reapply_status = ?', reapply.hash, reapply.drift, reapply.status);
  }

  /** The last re-apply after drift (forgetSourceHash), or null. */
  reapply(): ReapplyMarker | null {
    const r = this.row();
    if (r?.reapply_hash == null) return null;
    return { hash: r.reapply_hash, drift: r.reapply_drift ?? '', status: r.reapply_status ?? 'done' };
  }

  /** Set the status of the last re-apply, if it was of the export with content `hash`. */
  markReapply(hash: string, status: 'done' | 'repeated'): void {
    this.conn.prepare('UPDATE datasets SET reapply_status = ? WHERE dataset = ? AND reapply_hash = ?').run(status, this.dataset, hash);
  }

  /** Remember how long a replace/import job of `records` records took, for the planner's crossover. */
  recordJobTiming(ms: number, records: number): void {
    this.update('last_job_ms = ?, last_job_records = ?', Math.round(ms), records);
  }

  /** The outcome of the last sync (e.g. published, held, failed) with a JSON-serialisable detail. */
  recordOutcome(outcome: string, detail?: unknown): void {
    const at = this.clock.now();
    const json = detail === undefined ? null : JSON.stringify(detail);
    if (outcome === 'published' || outcome === 'unchanged') {
      this.update('last_outcome = ?, last_outcome_detail = ?, last_outcome_at = ?, last_success_at = ?', outcome, json, at, at);
    } else {
      this.update('last_outcome = ?, last_outcome_detail = ?, last_outcome_at = ?', outcome, json, at);
    }
  }

  /** Pause taking exports (kept if already paused: the first pause's time stays). */
  pause(p: PauseState): PauseState {
    const now = this.paused();
    if (now) return now;
    this.update('paused = ?', JSON.stringify(p));
    return p;
  }

  /** Take exports again; the pause it ended, or null. */
  unpause(): PauseState | null {
    const was = this.paused();
    if (was) this.update('paused = NULL');
    return was;
  }

  /** The pause in force, or null. */
  paused(): PauseState | null {
    const r = this.row()?.paused;
    return r ? (JSON.parse(r) as PauseState) : null;
  }

  /** The active version the snapshot was last confirmed at, or null (cheaper than info(): no record count). */
  confirmedVersion(): number | null {
    return this.row()?.active_version ?? null;
  }

  /** When the dataset last ended a sync published or unchanged (migration 7), or null. */
  lastSuccessAt(): number | null {
    return this.row()?.last_success_at ?? null;
  }

  /**
   * A12: what the key `keyId` (a fingerprint) last showed on `channel` when
   * asked to stage: a draft (`stages`) or an immediate publish (`publishes`,
   * a legacy key); null when it has not shown either yet.
   */
  keyShown(keyId: string, channel: KeyChannel): KeyShown {
    const r = this.conn.prepare('SELECT shown FROM key_staging WHERE dataset = ? AND key_id = ? AND channel = ?').pluck().get(this.dataset, keyId, channel);
    return (r as Exclude<KeyShown, null> | undefined) ?? null;
  }

  /** Remember what the key showed (call in the transaction that records the answer it was learned from). */
  noteKeyShown(keyId: string, channel: KeyChannel, shown: Exclude<KeyShown, null>): void {
    this.conn
      .prepare(
        `INSERT INTO key_staging (dataset, key_id, channel, shown, shown_at) VALUES (?, ?, ?, ?, ?)
         ON CONFLICT (dataset, key_id, channel) DO UPDATE SET shown = excluded.shown, shown_at = excluded.shown_at
         WHERE key_staging.shown <> excluded.shown`,
      )
      .run(this.dataset, keyId, channel, shown, this.clock.now());
  }

  /** Whether the key refused its last publish (its roles are not readable through the API, so a refusal is learnt). */
  publishDenied(keyId: string): boolean {
    return this.conn.prepare('SELECT 1 FROM key_publish WHERE dataset = ? AND key_id = ?').pluck().get(this.dataset, keyId) !== undefined;
  }

  /** Remember that the key was refused a publish (`denied`) or was allowed one (the row goes). */
  notePublish(keyId: string, denied: boolean): void {
    if (denied)
      this.conn
        .prepare('INSERT INTO key_publish (dataset, key_id, denied_at) VALUES (?, ?, ?) ON CONFLICT (dataset, key_id) DO NOTHING')
        .run(this.dataset, keyId, this.clock.now());
    else this.conn.prepare('DELETE FROM key_publish WHERE dataset = ? AND key_id = ?').run(this.dataset, keyId);
  }

  /** Record a held or staged change (replaces any earlier one). `since` defaults to now. */
  hold(held: Omit<HeldDraft, 'since'> & { since?: number }): void {
    this.update(
      'held_kind = ?, held_version = ?, held_reason = ?, held_plan_id = ?, held_summary = ?, held_since = ?',
      held.kind,
      held.version,
      held.reason,
      held.planId,
      held.summary === undefined ? null : JSON.stringify(held.summary),
      held.since ?? this.clock.now(),
    );
  }

  /** Forget the held change (published, discarded or superseded). */
  clearHeld(): void {
    this.update(
      'held_kind = NULL, held_version = NULL, held_reason = NULL, held_plan_id = NULL, held_summary = NULL, held_since = NULL',
    );
  }

  /** The held change, if any. */
  held(): HeldDraft | null {
    return toHeld(this.row());
  }

  /** The server dataset the snapshot mirrors, or null (none confirmed yet, or a database from before migration 20). */
  server(): ServerIdentity | null {
    const r = this.conn.prepare('SELECT base_url, dataset_id FROM dataset_servers WHERE dataset = ?').get(this.dataset) as
      | { base_url: string; dataset_id: string }
      | undefined;
    return r ? { baseUrl: r.base_url, datasetId: r.dataset_id } : null;
  }

  /** Remember the server dataset the snapshot mirrors (part of a rebuild's commit, or taken as it is by an older database). */
  setServer(server: ServerIdentity): void {
    this.conn
      .prepare(
        `INSERT INTO dataset_servers (dataset, base_url, dataset_id) VALUES (?, ?, ?)
         ON CONFLICT (dataset) DO UPDATE SET base_url = excluded.base_url, dataset_id = excluded.dataset_id`,
      )
      .run(this.dataset, server.baseUrl, server.datasetId);
  }

  /** Set the confirmed active version (part of confirm and rebuild commit). */
  protected setConfirmed(version: number, etag: string | null, rebuilt = false): void {
    const now = this.clock.now();
    if (rebuilt) this.update('active_version = ?, etag = ?, confirmed_at = ?, rebuilt_at = ?', version, etag, now, now);
    else this.update('active_version = ?, etag = ?, confirmed_at = ?', version, etag, now);
  }

  /** Everything known about the dataset but its record counts (SnapshotStore.info adds them): one row read. */
  state(): SnapshotState {
    const r = this.row();
    return {
      dataset: this.dataset,
      activeVersion: r?.active_version ?? null,
      etag: r?.etag ?? null,
      confirmedAt: r?.confirmed_at ?? null,
      lastSource:
        r?.source_hash != null || r?.source_rows != null
          ? { fileHash: r.source_hash ?? null, rowCount: r.source_rows ?? 0, at: r.source_at ?? 0 }
          : null,
      lastJob: r?.last_job_ms != null ? { ms: r.last_job_ms, records: r.last_job_records ?? 0 } : null,
      lastOutcome:
        r?.last_outcome != null
          ? {
              outcome: r.last_outcome,
              detail: r.last_outcome_detail == null ? null : (JSON.parse(r.last_outcome_detail) as unknown),
              at: r.last_outcome_at ?? 0,
            }
          : null,
      held: toHeld(r),
      rebuiltAt: r?.rebuilt_at ?? null,
    };
  }

  private row(): StateRow | undefined {
    return this.conn.prepare('SELECT * FROM datasets WHERE dataset = ?').get(this.dataset) as StateRow | undefined;
  }

  private update(assignments: string, ...values: unknown[]): void {
    this.conn.transaction(() => {
      this.conn.prepare('INSERT OR IGNORE INTO datasets (dataset) VALUES (?)').run(this.dataset);
      this.conn.prepare(`UPDATE datasets SET ${assignments} WHERE dataset = ?`).run(...values, this.dataset);
    }).immediate();
  }
}

function toHeld(r: StateRow | undefined): HeldDraft | null {
  if (!r || r.held_kind == null) return null;
  return {
    kind: r.held_kind,
    version: r.held_version,
    reason: r.held_reason ?? '',
    planId: r.held_plan_id,
    summary: r.held_summary == null ? null : (JSON.parse(r.held_summary) as unknown),
    since: r.held_since ?? 0,
  };
}
