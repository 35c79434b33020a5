import type { Journal, JournalEntry, JournalIntent } from '../../snapshot/journal.js';
import { crashPoint } from './crash-hook.js';

/**
 * The journal of one plan as execute uses it: steps are found by a name
 * (`post:A-1`, `replace`, `job`, `verify`, `publish`), intent is written
 * before each request and its result after, and each write is a crash point
 * (`<kind>.intent`, `<kind>.done`) for the crash test.
 *
 * Steps of the per-record path: plan.begun → (post|patch|delete).intent/.done
 * per record → verify.done → publish.intent → publish.done.
 * Steps of the replace path: plan.begun → replace.intent → replace.done (job id)
 * → job.done (terminal status, draft version) → verify.done → publish.intent →
 * publish.done.
 */
export class RunJournal {
  readonly #entries = new Map<string, JournalEntry>();
  #nextStep = 1;

  constructor(
    private readonly journal: Journal,
    readonly planId: string,
  ) {
    for (const e of journal.entries(planId)) {
      const name = (e.intent as { name?: string } | null)?.name ?? e.kind;
      this.#entries.set(name, e);
      this.#nextStep = Math.max(this.#nextStep, e.step + 1);
    }
  }

  /** The step recorded under `name`, if any. */
  get(name: string): JournalEntry | undefined {
    return this.#entries.get(name);
  }

  /** Every recorded step. */
  all(): JournalEntry[] {
    return [...this.#entries.values()];
  }

  /** Record the intent of a request before sending it. */
  intent(name: string, i: Omit<JournalIntent, 'step'> & { intent?: Record<string, unknown> }): JournalEntry {
    const e = this.journal.recordIntent(this.planId, { ...i, step: this.#nextStep++, intent: { ...i.intent, name } });
    this.#entries.set(name, e);
    crashPoint(`${i.kind}.intent`);
    return e;
  }

  /** Add the job id or draft version that became known. */
  update(name: string, patch: { jobId?: string | null; draftVersion?: number | null }): JournalEntry {
    const e = this.journal.update(this.must(name).id, patch);
    this.#entries.set(name, e);
    return e;
  }

  /** Mark a step done (call inside the transaction that applies its effect, if any). */
  done(name: string, result?: unknown): JournalEntry {
    const e = this.journal.markDone(this.must(name).id, result);
    this.#entries.set(name, e);
    return e;
  }

  /** Mark a step failed for sure (nothing applied). */
  failed(name: string, result?: unknown): JournalEntry {
    const e = this.journal.markFailed(this.must(name).id, result);
    this.#entries.set(name, e);
    return e;
  }

  /** The crash point after a done step; call once its transaction committed. */
  committed(kind: string): void {
    crashPoint(`${kind}.done`);
  }

  private must(name: string): JournalEntry {
    const e = this.#entries.get(name);
    if (!e) throw new TypeError(`journal step ${name} was never recorded`);
    return e;
  }
}
