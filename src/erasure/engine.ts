/**
 * The erasure engine (docs/architecture.md, "Erasure"; invariants in src/erasure/README.md):
 * what the routes and the app call. It takes requests and redaction orders, answers
 * an erasure's view, its status and its transitions, and runs the worker and the
 * certificate finalizer. The machine is in machine.ts, each step in steps/, each
 * module's part of an erasure in its own erasable.ts (src/erasable.ts, handed in by the
 * composition root), the claim-and-commit loop in worker.ts.
 */
import type { RefusalReason } from './machine.js';
import { hostname } from 'node:os';
import { sql } from 'drizzle-orm';
import { type Certificate, randomBytes, toBase64Url } from '../crypto/index.js';
import type { Database, Transaction } from '../db/client.js';
import type { KeysetPage, KeysetPosition } from '../db/keyset.js';
import type { ErasureRow } from '../db/schema.js';
import { isLetheError, LetheError } from '../errors.js';
import { mapLimit } from '../concurrency.js';
import { newId } from '../ids.js';
import { describeError } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import type { KeyCreationRefusals } from '../vault/keys.js';
import { hashHex } from '../vault/subjects.js';
import { CertificateFinalizer } from './certificates.js';
import { type ErasureStatus, isOpen, STEP_NAMES, type StepName } from './machine.js';
import { ErasureRecords } from './records.js';
import { approveDismissal, proposeDismissal, revokeDismissal } from './dismissal.js';
import { openErasure } from './opening.js';
import { type ForgetRequest, requestForget } from './forget.js';
import { forgottenEntries } from './state.js';
import { orderRedaction } from './redaction.js';
import { type Actor, actorOf, type BulkErasureRequest, type DismissalRequest, type DismissalRevocation, type ErasureRequest, requestContextOf } from './request.js';
import type { CertificateSigner, ErasureResources, ErasureServices, ErasureSettings } from './resources.js';
import { parseState } from './state.js';
import { ERASABLE_NAMES, type Erasable, type ErasableName } from '../erasable.js';
import { CertificateViewSchema, type ErasureTransition, type ErasureView, readableByRuling, type StepView } from './view.js';
import { ErasureWatchers, type Follower } from './watchers.js';
import { leftBehind } from './left.js';
import { failedStep, resumeErasure } from './resume.js';
import { ErasureWorker } from './worker.js';
import { reinstateSubject } from './reinstate.js';
import { SubjectTombstones } from './tombstones.js';

/** How often, and how far apart, a released lease's wake is retried while a replica runs the erasure's drain_leases. */
/** How many of a bulk request's subjects are requested at once (each its own transaction). */
const BULK_LANES = 8;

/** One subject of POST /v1/erasures/batch: its erasure, or why it was refused. Never the subject id: the index in the request names it. */
export type BulkErasureItem =
  | { readonly index: number; readonly erasureId: string; readonly status: ErasureStatus; readonly created: boolean }
  | { readonly index: number; readonly error: { readonly code: string; readonly detail: string } };

const WAKE_TRIES = 20;
const WAKE_RETRY_MS = 100;

export interface ErasureEngineDeps extends ErasureServices, ErasureSettings {
  readonly db: Database;
  /** Each module's part of an erasure (src/erasable.ts): one of each name. */
  readonly erasables: readonly Erasable[];
  /** Signs certificates with the current certificate-signing key (held by the key provider). */
  readonly signer: CertificateSigner;
  /** The events streams' fallback poll (LETHE_SSE_FALLBACK_POLL_MS): a missed notification delays an event by at most this. */
  readonly eventsFallbackMs?: number;
  /** The watcher gauge and refresh counter. */
  readonly metrics?: Metrics;
}

/** The erasables by name: exactly one of each, or the engine refuses to start. */
function byName(list: readonly Erasable[]): Readonly<Record<ErasableName, Erasable>> {
  const out = Object.fromEntries(list.map((e) => [e.name, e])) as Record<ErasableName, Erasable>;
  const missing = ERASABLE_NAMES.filter((n) => !out[n]);
  if (missing.length > 0 || list.length !== ERASABLE_NAMES.length) throw new Error(`the erasure engine needs one erasable of each of ${ERASABLE_NAMES.join(', ')} (missing: ${missing.join(', ') || 'none'}; given ${list.length})`);
  return out;
}

export class ErasureEngine {
  readonly replica = `${hostname()}:${process.pid}:${toBase64Url(randomBytes(6))}`;
  readonly #res: ErasureResources;
  readonly #worker: ErasureWorker;
  readonly #finalizer: CertificateFinalizer;
  readonly #listeners = new Set<() => void>();
  readonly #watchers: ErasureWatchers;
  /** Whether this replica hears erasure notifications; until then, its own transitions wake every watcher. */
  #notified = false;
  #workerRunning = false;
  #lastPassAt: Date | undefined;

  constructor(deps: ErasureEngineDeps) {
    const { db, eventsFallbackMs, metrics, ...rest } = deps;
    this.#res = {
      ...rest,
      records: new ErasureRecords(db, this.replica),
      tombstones: new SubjectTombstones(),
      tiers: byName(deps.erasables),
      ...(metrics ? { onRefusal: (reason: RefusalReason) => metrics.certificateRefusals.inc({ reason }) } : {}),
    };
    this.#watchers = new ErasureWatchers({
      source: {
        status: (id) => this.#res.records.status(id),
        transitions: (id, after) => this.#res.records.transitions(id, after, { checked: true }),
        end: async (id) => {
          const view = await this.get(id);
          return { erasureId: id, status: view.status, class: view.class ?? null, recovered: view.probe.recovered };
        },
      },
      logger: deps.logger,
      fallbackMs: eventsFallbackMs ?? 5000,
      ...(metrics
        ? { onCount: (n: number) => metrics.erasureWatchers.set(n), onRefresh: (cause: string) => metrics.erasureWatcherRefreshes.inc({ cause }) }
        : {}),
    });
    const emit = () => this.#emit();
    this.#finalizer = new CertificateFinalizer(this.#res, emit, metrics ? (reason) => metrics.certificateRefusals.inc({ reason }) : undefined);
    this.#worker = new ErasureWorker(this.#res, {
      emit,
      afterDrain: () => {
        this.#lastPassAt = new Date();
        return this.#finalizer.runQuietly();
      },
      ...(metrics ? { onRetry: (step: StepName, kind: string) => metrics.erasureStepRetries.inc({ step, kind }) } : {}),
    });
  }

  /** POST /v1/erasures: a new erasure, or the subject's open one. From here on the subject is fenced. */
  async request(input: ErasureRequest, by: string | Actor): Promise<{ erasureId: string; status: ErasureStatus; created: boolean }> {
    const actor = actorOf(by);
    const { keys, log, records, tombstones } = this.#res;
    // records scope (entryIds: forget some memories) must not tombstone the person; only a subject-scope erasure does
    const tombstonesSubject = !('entryIds' in input) || input.entryIds === undefined;
    if (input.entryIds) return this.#forget({ subjectHash: keys.subjectHash(input.subject), entryIds: input.entryIds, reason: input.reason, legalBasis: input.legalBasis, requestContext: input.request }, actor);
    const status = await keys.subjectStatus(input.subject);
    const subjectHash = status.subjectHash;
    const open = await records.openFor(subjectHash);
    if (open) return { ...open, created: false };
    if (!status.key && !status.erased && !(await log.hasEntries(subjectHash))) throw new LetheError('not_found', 'lethe has never seen this subject');
    const erasureId = newId('ers');
    let fenced: string | undefined;
    {
      const opening = {
        erasureId,
        subjectHash,
        scope: 'subject' as const,
        legalBasis: input.legalBasis ?? null,
        requestContext: input.request ?? null,
        unlearning: input.unlearning ?? null,
        reason: input.reason ?? null,
        publicAttributes: input.publicAttributes ?? [],
        requestedBy: actor.principal,
      };
      const inserted = await openErasure(this.#res, opening, `requested by ${actor.role}`, async (tx, now) => {
        // leases stop from the request on, in the same commit: an erasure is never open with its key leasable
        fenced = await keys.fenceSubjectWithin(tx, subjectHash, 'erasure');
        // and the subject is tombstoned in the same commit: once its key is destroyed no key is made for it again until an admin reinstates it
        if (tombstonesSubject) await tombstones.mark(tx, subjectHash, erasureId, now);
      });
      if (!inserted) {
        // another request for the subject won the race: answer with its erasure
        const winner = await records.openFor(subjectHash);
        if (!winner) throw new LetheError('unavailable', 'the subject\'s erasure changed during the request; try again', { retryable: true });
        return { ...winner, created: false };
      }
    }
    // this replica's cached DEK goes too; the fence step confirms the fence
    if (fenced) keys.dropCached(fenced);
    this.kick();
    return { erasureId, status: 'pending', created: true };
  }

  /**
   * POST /v1/erasures/batch: each subject's erasure requested as POST /v1/erasures
   * would (a new one, or the subject's open one), a few at a time; one subject's
   * refusal (never seen, an erasure in progress of its entries…) is answered in its
   * own item and stops no other. The erasures then run as any other: claimed by every
   * replica's worker; destructions waiting for the ledger at the same moment share one
   * flush and its chain record (group commit in BackupService.awaitDurable).
   */
  async requestMany(input: BulkErasureRequest, actor: string | Actor): Promise<BulkErasureItem[]> {
    const { subjects, ...shared } = input;
    const items = await mapLimit(subjects, BULK_LANES, async (subject, index): Promise<BulkErasureItem> => {
      try {
        return { index, ...(await this.request({ subject, ...shared }, actor)) };
      } catch (e) {
        // a refusal about this subject is its item's answer; the database or the store failing is the request's
        if (!(e instanceof LetheError) || e.code === 'internal' || e.code === 'unavailable') throw e;
        return { index, error: { code: e.code, detail: e.message } };
      }
    });
    this.kick();
    return items;
  }

  /**
   * DELETE /v1/entries/{entryId}: forget one memory — a records-scope erasure of the
   * entry (forget.ts), or the erasure already forgetting it. not_found for no such entry.
   */
  async forgetEntry(entryId: string, actor: string | Actor): Promise<{ erasureId: string; status: ErasureStatus; created: boolean }> {
    const [entry] = await this.#res.log.locate([entryId]);
    if (!entry) throw new LetheError('not_found', 'no such entry');
    return this.#forget({ subjectHash: entry.subjectHash, entryIds: [entryId] }, actor);
  }

  async #forget(input: ForgetRequest, actor: string | Actor): Promise<{ erasureId: string; status: ErasureStatus; created: boolean }> {
    const result = await requestForget(this.#res, input, actor);
    if (result.created) this.kick();
    return result;
  }

  /** POST /v1/erasures/{id}/redactions: re-key other subjects' logs without the named records, then probe again. */
  async redact(erasureId: string, ids: readonly string[], actor: string | Actor, override?: { readonly reason: string }): Promise<{ erasureId: string; status: ErasureStatus }> {
    await orderRedaction(this.#res, erasureId, ids, actorOf(actor), override);
    this.kick();
    return { erasureId, status: 'running' };
  }

  /**
   * POST /v1/erasures/{id}/dismissals: a person proposes that named matches carry nothing
   * of the subject. A proposal changes nothing until a second principal approves it.
   */
  async dismiss(erasureId: string, request: DismissalRequest, actor: string | Actor): Promise<{ erasureId: string; status: ErasureStatus; dismissalId: string }> {
    const dismissalId = await proposeDismissal(this.#res, erasureId, request, actorOf(actor));
    return { erasureId, status: await this.#res.records.status(erasureId), dismissalId };
  }

  /** POST /v1/erasures/{id}/dismissals/{dismissalId}/approve: a second principal's approval; the probe runs again without the records. */
  async approveDismissal(erasureId: string, dismissalId: string, actor: Actor): Promise<{ erasureId: string; status: ErasureStatus; dismissalId: string }> {
    await approveDismissal(this.#res, erasureId, dismissalId, actor);
    this.kick();
    return { erasureId, status: 'running', dismissalId };
  }

  /** POST /v1/erasures/{id}/dismissals/{dismissalId}/revoke: a proposal rejected, or an approved ruling revoked (the probe runs again). */
  async revokeDismissal(erasureId: string, dismissalId: string, actor: string | Actor, revocation: DismissalRevocation = {}): Promise<{ erasureId: string; status: ErasureStatus; dismissalId: string }> {
    const reopened = await revokeDismissal(this.#res, erasureId, dismissalId, actorOf(actor), revocation.reason);
    if (reopened) this.kick();
    return { erasureId, status: reopened ? 'running' : await this.#res.records.status(erasureId), dismissalId };
  }

  /**
   * The key-creation guard (KeyService.guardCreation), run in the transaction that
   * inserts the key: a tombstoned subject (erased, not reinstated) gets no key again —
   * subject_erased (the guard runs only when the subject has no live key, so while
   * the erasure runs with the fenced key in place the answers stay erasure_in_progress);
   * and an open erasure fences the subject itself, not only its key — no new key
   * until it ends.
   */
  async refuseKeyCreation(tx: Transaction, subjectHash: Uint8Array): Promise<void> {
    if (await this.#res.tombstones.find(tx, subjectHash)) throw keyCreationRefusal('subject_erased');
    if (await this.#res.records.isOpen(tx, subjectHash)) throw keyCreationRefusal('erasure_in_progress');
  }

  /**
   * refuseKeyCreation in SQL, for many subjects in the one statement of a
   * group-committed key creation (KeyService.guardCreation's `refusals`): the same
   * subjects, the same refusals — a tombstone first, then an open subject-scope erasure.
   */
  readonly keyCreationRefusals: KeyCreationRefusals = {
    among: (subjects) => sql`
      select s.subject_hash,
             case when exists (select 1 from subject_tombstones t where t.subject_hash = s.subject_hash) then 'subject_erased'
                  else 'erasure_in_progress' end as code
        from ${subjects} s
       where exists (select 1 from subject_tombstones t where t.subject_hash = s.subject_hash)
          or exists (select 1 from erasures e where e.subject_hash = s.subject_hash and e.status in ('pending', 'running') and e.scope = 'subject')`,
    error: (code) => keyCreationRefusal(code === 'subject_erased' ? 'subject_erased' : 'erasure_in_progress'),
  };

  async get(erasureId: string): Promise<ErasureView> {
    return this.#full(await this.#res.records.row(erasureId));
  }

  /**
   * GET /v1/erasures: a page of erasures, oldest first, each as `get` answers it, with its
   * position; with `subject`, only that subject's (named by its keyed hash, the id is not
   * kept). One query per page; a failed erasure's `left` reads its key's state — a few
   * queries each, bounded by the page.
   */
  async list(page: KeysetPage & { subject?: string | undefined } = {}): Promise<Array<{ view: ErasureView; position: KeysetPosition }>> {
    const subjectHash = page.subject === undefined ? undefined : this.#res.keys.subjectHash(page.subject);
    const rows = await this.#res.records.page({ after: page.after, limit: page.limit, subjectHash });
    const out: Array<{ view: ErasureView; position: KeysetPosition }> = [];
    for (const { row, position } of rows) out.push({ view: await this.#full(row), position });
    return out;
  }

  /** The view of a row, with what a failed erasure left behind. */
  async #full(row: ErasureRow): Promise<ErasureView> {
    const view = this.#view(row);
    if (row.status !== 'failed') return view;
    const state = parseState(row.state);
    return { ...view, left: { ...(await leftBehind(this.#res, row, state)), failedStep: failedStep(state) } };
  }

  /**
   * POST /v1/subjects/{subject}/reinstate (admin): lifts the subject's tombstone, audited
   * (tombstones.ts); conflict when it has none, erasure_in_progress while an erasure of it is open.
   */
  async reinstate(subject: string, reason: string, actor: string): Promise<{ erasureId: string; erasedAt: Date }> {
    return reinstateSubject(this.#res, subject, reason, actor);
  }

  /**
   * POST /v1/erasures/{id}/resume: a failed erasure runs again from the step that
   * failed, its attempts reset (resume.ts); conflict when it is not failed or a newer
   * erasure of the subject exists.
   */
  async resume(erasureId: string, actor: string): Promise<ErasureView> {
    await resumeErasure(this.#res, erasureId, actor);
    this.kick();
    return this.#view(await this.#res.records.row(erasureId));
  }

  /**
   * The signed certificate document alone, as stored: not_found for no such erasure,
   * conflict while it has none yet (it is signed when the erasure finishes, and a
   * failed erasure has none).
   */
  async certificate(erasureId: string): Promise<Certificate> {
    const row = await this.#res.records.row(erasureId);
    const certificate = CertificateViewSchema.nullable().parse(row.certificate);
    if (!certificate) {
      const why = row.status === 'failed' ? 'the erasure failed, and a failed erasure is not certified' : `the erasure is ${row.status}; its certificate is signed when it finishes`;
      throw new LetheError('conflict', `erasure ${row.erasureId} has no certificate yet: ${why}`);
    }
    return { payload: certificate.payload as Certificate['payload'], signature: certificate.signature, publicKey: certificate.publicKey, algorithm: certificate.algorithm };
  }

  /** The erasure's status alone (what a follower polls). */
  status(erasureId: string): Promise<ErasureStatus> {
    return this.#res.records.status(erasureId);
  }

  /** Transitions after `afterId`, oldest first (the events stream). */
  transitions(erasureId: string, afterId = 0): Promise<ErasureTransition[]> {
    return this.#res.records.transitions(erasureId, afterId);
  }

  /**
   * Every transition of the erasure, oldest first (the report's timeline and outcome
   * history: rows are only ever inserted, so an outcome a redaction superseded is still
   * there); not_found for no such erasure.
   */
  async allTransitions(erasureId: string): Promise<ErasureTransition[]> {
    const all = await this.#res.records.transitions(erasureId);
    for (let page = all; page.length > 0; ) {
      page = await this.#res.records.transitions(erasureId, page.at(-1)!.id, { checked: true });
      all.push(...page);
    }
    return all;
  }

  /** Runs `fn` whenever this replica commits a transition. */
  onTransition(fn: () => void): () => void {
    this.#listeners.add(fn);
    return () => this.#listeners.delete(fn);
  }

  /**
   * Follows an erasure's events after transition `afterId` (the events stream): the
   * timeline, then each transition as it commits, then `end` once it finished. Streams
   * on one erasure share one watcher; `close()` the follower when the stream ends.
   */
  follow(erasureId: string, afterId = 0): Follower {
    return this.#watchers.follow(erasureId, afterId);
  }

  /** Watchers running on this replica (one per followed erasure). */
  get watchers(): number {
    return this.#watchers.size;
  }

  /**
   * From now on the watchers wake on erasure notifications (`heard`) — every
   * replica's transitions, this one's included — instead of on this replica's own.
   */
  hearNotifications(): void {
    this.#notified = true;
  }

  /** A notification: a transition of this erasure committed somewhere. */
  heard(erasureId: string): void {
    this.#watchers.heard(erasureId);
  }

  /** The notification listener reconnected: notifications may have been missed, every watcher reads. */
  missedNotifications(): void {
    this.#watchers.wakeAll('reconnect');
  }

  /** Starts claiming work every LETHE_ERASURE_POLL_MS (and at once when kicked). */
  start(): void {
    this.#workerRunning = true;
    this.#worker.start();
  }

  /** Whether this replica's worker runs, and when it last finished a pass (drained what it could claim). */
  workerStatus(): { running: boolean; lastPassAt: Date | undefined } {
    return { running: this.#workerRunning, lastPassAt: this.#lastPassAt };
  }

  /** Stops the worker and every watcher (their streams end). */
  stop(): Promise<void> {
    this.#workerRunning = false;
    this.#watchers.close();
    return this.#worker.stop();
  }

  /** Looks for claimable work now, when the worker runs. */
  kick(): void {
    this.#worker.kick();
  }

  /**
   * A lease of the subject was released (KeyService.onLeaseReleased): its erasure parked
   * at drain_leases runs now — on this replica at once, on the others at their next
   * poll — and reads the outstanding leases again. One a replica is running right now
   * may have read the leases before the release committed: it is woken again, in the
   * background, once that run has parked (every WAKE_RETRY_MS, at most WAKE_TRIES times).
   */
  async leasesReleased(subjectHash: Uint8Array): Promise<void> {
    if ((await this.#res.records.wake(subjectHash, 'drain_leases')) === 'running') {
      void (async () => {
        for (let i = 0; i < WAKE_TRIES; i++) {
          await new Promise((r) => setTimeout(r, WAKE_RETRY_MS));
          if ((await this.#res.records.wake(subjectHash, 'drain_leases')) !== 'running') break;
        }
        this.kick();
      })().catch((e: unknown) => this.#res.logger.warn({ err: describeError(e) }, 'could not wake an erasure after a lease release'));
    }
    this.kick();
  }

  /** Claims and runs erasures until none is claimable; then finalizes certificates whose epochs retired. */
  drain(): Promise<number> {
    return this.#worker.drain();
  }

  /** Claims one erasure and runs only its next step (operators stepping through, tests). */
  stepOnce(): Promise<StepName | undefined> {
    return this.#worker.stepOnce();
  }

  /** Re-signs provisional certificates as final once every epoch they wait on is retired. */
  finalizeCertificates(): Promise<number> {
    return this.#finalizer.run();
  }

  /** Waits until the erasure is finished (tests and in-process use), draining meanwhile. */
  async settle(erasureId: string, timeoutMs = 60_000): Promise<ErasureView> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const view = await this.get(erasureId);
      if (!isOpen(view.status)) return view;
      if (Date.now() > deadline) {
        throw new LetheError('unavailable', `erasure ${erasureId} did not finish in ${timeoutMs} ms (at ${JSON.stringify(view.steps.find((s) => s.status !== 'done' && s.status !== 'skipped')?.name)})`);
      }
      await this.drain();
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  #emit(): void {
    if (!this.#notified) this.#watchers.wakeAll('local');
    for (const fn of this.#listeners) fn();
  }

  #view(row: ErasureRow): ErasureView {
    const state = parseState(row.state);
    const steps: StepView[] = [];
    for (const name of STEP_NAMES) {
      const s = state.steps[name];
      if (name === 'redact' && !s) continue;
      steps.push({ name, status: s?.status ?? 'pending', ...(s?.detail ? { detail: s.detail } : {}), ...(s?.startedAt ? { startedAt: s.startedAt } : {}), ...(s?.finishedAt ? { finishedAt: s.finishedAt } : {}) });
    }
    const certificate = CertificateViewSchema.nullable().parse(row.certificate);
    const request = requestContextOf(row);
    // what a finished erasure keeps readable on two people's word (the last probe's approved rulings)
    const ruled = isOpen(row.status) ? [] : readableByRuling(state.probe);
    return {
      erasureId: row.erasureId,
      status: row.status,
      ...(row.class ? { class: row.class } : {}),
      subjectHash: hashHex(row.subjectHash),
      scope: row.scope,
      ...(row.scope === 'records' ? { entryIds: [...(forgottenEntries(row) ?? [])] } : {}),
      ...(row.legalBasis ? { legalBasis: row.legalBasis } : {}),
      ...(request ? { request } : {}),
      createdAt: row.createdAt.toISOString(),
      ...(row.finishedAt ? { finishedAt: row.finishedAt.toISOString() } : {}),
      steps,
      residuals: state.residuals ?? [],
      probe: state.probe ?? { recovered: 0, threshold: this.#res.probeThreshold, matches: [] },
      ...(certificate ? { certificate: { payload: certificate.payload, signature: certificate.signature, publicKey: certificate.publicKey, algorithm: certificate.algorithm } } : {}),
      ...(row.certificateState ? { certificateState: row.certificateState } : {}),
      graph: state.graph ?? { nodes: [], edges: [] },
      ...(state.dismissals?.length ? { dismissals: state.dismissals } : {}),
      ...(ruled.length ? { readableByRuling: ruled } : {}),
      ...(row.attempts > 0
        ? {
            retry: {
              attempts: row.attempts,
              ...(row.lastError ? { lastError: row.lastError } : {}),
              ...(isOpen(row.status) ? { nextAttemptAt: row.notBefore.toISOString() } : {}),
            },
          }
        : {}),
    };
  }
}

/** What refuseKeyCreation throws (and its SQL form answers) for a subject refused a key. */
function keyCreationRefusal(code: 'subject_erased' | 'erasure_in_progress'): LetheError {
  return code === 'subject_erased'
    ? new LetheError('subject_erased', 'the subject was erased: no new key, lease or append is accepted for it until an admin reinstates it')
    : new LetheError('erasure_in_progress', 'the subject is being erased; no new key is created until the erasure ends');
}
