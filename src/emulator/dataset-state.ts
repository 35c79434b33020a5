import type { DatasetRecord } from '../model/record.js';
import { diffRecordMaps, EMPTY_SUMMARY, type ChangeSummary } from './diff.js';
import { httpError } from './http-error.js';
import type { GuardOptions, VersionStatus } from './types.js';

/** Draft lifetime (spec: 24 hours). */
export const DRAFT_TTL_MS = 24 * 60 * 60 * 1000;

/** Who made a version: the API, or a person in the portal (a "foreign" editor). */
export type Author = 'api' | 'portal';

/** One content version of a dataset. */
export interface VersionState {
  version: number;
  status: VersionStatus;
  baseVersion: number | null;
  createdAt: number;
  author: Author;
  /** Full content while active or draft; dropped once superseded, discarded or expired. */
  records: Map<string, DatasetRecord> | null;
  /** A draft's base content, for its detail and diff. */
  baseRecords: Map<string, DatasetRecord> | null;
  /** The change from its base, frozen once the version stops being a draft. */
  summary: ChangeSummary | null;
}

/** A5: which guard, if any, holds a record set back from publishing over `active`. */
export function guardFor(
  active: ReadonlyMap<string, DatasetRecord>,
  next: ReadonlyMap<string, DatasetRecord>,
  options: GuardOptions,
): 'MASS_DELETE_GUARD' | 'EMPTY_RESULT_GUARD' | null {
  if (active.size === 0) return null;
  // An empty result is the more specific refusal, and allow_empty alone lets it through.
  if (next.size === 0) return options.allow_empty ? null : 'EMPTY_RESULT_GUARD';
  let deleted = 0;
  for (const id of active.keys()) if (!next.has(id)) deleted++;
  if (deleted * 2 > active.size && !options.allow_mass_delete) return 'MASS_DELETE_GUARD';
  return null;
}

/** A dataset with its versions (A18–A22): one active version, at most one pending draft. */
export class DatasetState {
  readonly id: string;
  name: string;
  apiEnabled: boolean;
  readonly versions = new Map<number, VersionState>();
  activeVersion = 0;
  #nextVersion = 1;

  constructor(id: string, name: string, now: number, apiEnabled = true) {
    this.id = id;
    this.name = name;
    this.apiEnabled = apiEnabled;
    // A22: version 0 is the empty dataset before any publish.
    this.versions.set(0, {
      version: 0,
      status: 'active',
      baseVersion: null,
      createdAt: now,
      author: 'api',
      records: new Map(),
      baseRecords: null,
      summary: EMPTY_SUMMARY,
    });
  }

  /** The active version. */
  get active(): VersionState {
    return this.versions.get(this.activeVersion) as VersionState;
  }

  /** The active version's records. */
  get activeRecords(): Map<string, DatasetRecord> {
    return this.active.records as Map<string, DatasetRecord>;
  }

  /** A8: ETag of the active version. */
  get etag(): string {
    return `"v${this.activeVersion}"`;
  }

  /** Mark drafts older than 24 hours as expired (spec: a draft is kept for 24 hours). */
  expireDrafts(now: number): void {
    for (const v of this.versions.values()) {
      if (v.status === 'draft' && v.createdAt + DRAFT_TTL_MS <= now) this.#close(v, 'expired');
    }
  }

  /** The pending (not expired) draft, or null. */
  pendingDraft(now: number): VersionState | null {
    this.expireDrafts(now);
    for (const v of this.versions.values()) if (v.status === 'draft') return v;
    return null;
  }

  /** A10/A17: a new draft based on the active version, holding `records` (default: a copy of the active ones). */
  createDraft(now: number, author: Author, records?: Map<string, DatasetRecord>): VersionState {
    const draft: VersionState = {
      version: this.#nextVersion++,
      status: 'draft',
      baseVersion: this.activeVersion,
      createdAt: now,
      author,
      records: records ?? new Map(this.activeRecords),
      baseRecords: this.activeRecords,
      summary: null,
    };
    this.versions.set(draft.version, draft);
    return draft;
  }

  /** A10: publish a new version at once from the active one plus `mutate`. */
  publishDirect(now: number, author: Author, mutate: (records: Map<string, DatasetRecord>) => void): VersionState {
    const records = new Map(this.activeRecords);
    mutate(records);
    const draft = this.createDraft(now, author, records);
    this.activate(draft);
    return draft;
  }

  /** Make a draft the active version; the old active one becomes superseded. */
  activate(draft: VersionState): void {
    const previous = this.active;
    draft.summary = diffRecordMaps(draft.baseRecords ?? new Map(), draft.records ?? new Map());
    draft.status = 'active';
    draft.baseRecords = null;
    this.activeVersion = draft.version;
    if (previous !== draft) this.#close(previous, 'superseded');
  }

  /** A21: discard a pending draft. */
  discard(draft: VersionState): void {
    this.#close(draft, 'discarded');
  }

  /** A20: check that `v` can be published now; returns the draft or throws 404/409/410/422. */
  publishable(v: number, now: number, options: GuardOptions): VersionState {
    this.expireDrafts(now);
    const version = this.versions.get(v);
    if (!version || version.status === 'discarded') throw httpError(404, 'VERSION_NOT_FOUND', `version ${v} is not a pending draft`);
    if (version.status === 'expired') throw httpError(410, 'DRAFT_EXPIRED', `draft ${v} is older than 24 hours`);
    if (version.status !== 'draft' || version.baseVersion !== this.activeVersion) {
      throw httpError(409, 'CONFLICT', `another version was published since the base of version ${v}`, {
        version: v,
        base_version: version.baseVersion,
        active_version: this.activeVersion,
        version_status: version.status,
      });
    }
    const guard = guardFor(this.activeRecords, version.records as Map<string, DatasetRecord>, options);
    if (guard) {
      throw httpError(422, guard, guardMessage(guard), {
        version: v,
        active_record_count: this.activeRecords.size,
        draft_record_count: version.records?.size ?? 0,
      });
    }
    return version;
  }

  /** A19: the change a version makes from its base. */
  summaryOf(v: VersionState): ChangeSummary {
    if (v.summary) return v.summary;
    return diffRecordMaps(v.baseRecords ?? new Map(), v.records ?? new Map());
  }

  /** A25: the draft version number, or null. */
  draftVersion(now: number): number | null {
    return this.pendingDraft(now)?.version ?? null;
  }

  #close(v: VersionState, status: 'superseded' | 'discarded' | 'expired'): void {
    v.summary = this.summaryOf(v);
    v.status = status;
    v.records = null;
    v.baseRecords = null;
  }
}

/** Human text of a guard refusal. */
export function guardMessage(guard: 'MASS_DELETE_GUARD' | 'EMPTY_RESULT_GUARD'): string {
  return guard === 'MASS_DELETE_GUARD'
    ? 'the change deletes more than half of the records; set options.allow_mass_delete to publish it'
    : 'the change leaves zero records; set options.allow_empty to publish it';
}
