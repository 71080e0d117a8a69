/**
 * The erasure engine (docs/architecture.md, "Erasure"; invariants in src/erasure/README.md):
 * the façade the routes and the app call, over one file per operation — a subject's
 * request (subject-request.ts), forgetting records (forget.ts), redactions, dismissals,
 * resume, reinstatement, views (views.ts), the key-creation guard (key-guard.ts) — and
 * the worker (worker.ts) and certificate finalizer it runs. Each module's part of an
 * erasure comes from the composition root (src/erasable.ts).
 */
import { hostname } from 'node:os';
import { type Certificate, randomBytes, toBase64Url } from '../crypto/index.js';
import type { Database, Transaction } from '../db/client.js';
import type { KeysetPage, KeysetPosition } from '../db/keyset.js';
import type { Erasable, ErasureTarget } from '../erasable.js';
import { LetheError } from '../errors.js';
import type { Metrics } from '../observability/metrics.js';
import { CertificateFinalizer } from './certificates.js';
import { approveDismissal, proposeDismissal, revokeDismissal } from './dismissal.js';
import { type ForgetRequest, requestForget } from './forget.js';
import { requestSupersede, type Superseded, type SupersedeRequest } from './supersede.js';
import { refuseKeyCreation, keyCreationRefusals } from './key-guard.js';
import { wakeOnRelease } from './lease-wake.js';
import { type ErasureStatus, isOpen, type RefusalReason, type StepName } from './machine.js';
import { type ProbePart, type ProbePartInput, probePart } from './probe-part.js';
import { ErasureRecords } from './records.js';
import { orderRedaction } from './redaction.js';
import { reinstateSubject } from './reinstate.js';
import { type Actor, actorOf, type BulkErasureRequest, type DismissalRequest, type DismissalRevocation, type ErasureRequest } from './request.js';
import { type CertificateSigner, type ErasureResources, type ErasureServices, type ErasureSettings, erasablesByName, type ShardProbes } from './resources.js';
import { resumeErasure } from './resume.js';
import { type BulkErasureItem, type Requested, requestEach, requestSubjectErasure } from './subject-request.js';
import { SubjectTombstones } from './tombstones.js';
import type { ErasureTransition, ErasureView } from './view.js';
import { certificateOf, fullView, viewOf } from './views.js';
import { ErasureWatchers, type Follower } from './watchers.js';
import { ErasureWorker } from './worker.js';

export type { BulkErasureItem } from './subject-request.js';

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

export class ErasureEngine {
  readonly replica = `${hostname()}:${process.pid}:${toBase64Url(randomBytes(6))}`;
  readonly #res: ErasureResources;
  readonly #worker: ErasureWorker;
  readonly #finalizer: CertificateFinalizer;
  /** The events streams' watchers (watchers.ts): what the replica's notifications wake. */
  readonly watchers: ErasureWatchers;
  #workerRunning = false;
  #lastPassAt: Date | undefined;

  constructor(deps: ErasureEngineDeps) {
    const { db, eventsFallbackMs, metrics, ...rest } = deps;
    this.#res = {
      ...rest,
      records: new ErasureRecords(db, this.replica),
      tombstones: new SubjectTombstones(),
      tiers: erasablesByName(deps.erasables),
      ...(metrics ? { onRefusal: (reason: RefusalReason) => metrics.certificateRefusals.inc({ reason }) } : {}),
    };
    this.watchers = new ErasureWatchers({
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
    const emit = () => this.watchers.committedHere();
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

  /** POST /v1/erasures: a new erasure, or the subject's open one (with `entryIds`: forgetting those records of it). */
  async request(input: ErasureRequest, by: string | Actor): Promise<Requested> {
    const actor = actorOf(by);
    if (input.entryIds) {
      const forget = {
        subjectHash: this.#res.keys.subjectHash(input.subject),
        entryIds: input.entryIds,
        reason: input.reason,
        legalBasis: input.legalBasis,
        requestContext: input.request,
      };
      return this.#forget(forget, actor);
    }
    const { fenced, ...requested } = await requestSubjectErasure(this.#res, input, actor);
    // this replica's cached DEK goes too; the fence step confirms the fence
    if (fenced) this.#res.keys.dropCached(fenced);
    if (requested.created) this.#kick();
    return requested;
  }

  /** POST /v1/erasures/batch: each subject's erasure as `request` would, its refusal in its own item. */
  async requestMany(input: BulkErasureRequest, actor: string | Actor): Promise<BulkErasureItem[]> {
    const items = await requestEach((one) => this.request(one, actor), input);
    this.#kick();
    return items;
  }

  /** DELETE /v1/entries/{entryId}: forget one memory (forget.ts), or the erasure already forgetting it. */
  async forgetEntry(entryId: string, actor: string | Actor): Promise<Requested> {
    const [entry] = await this.#res.log.locate([entryId]);
    if (!entry) throw new LetheError('not_found', 'no such entry');
    return this.#forget({ subjectHash: entry.subjectHash, entryIds: [entryId] }, actor);
  }

  /** POST /v1/subjects/{subject}/entries/{entryId}/supersede: the successor appended and the old version forgotten, atomically (supersede.ts). */
  async supersedeEntry(input: SupersedeRequest, actor: string | Actor): Promise<Superseded> {
    const result = await requestSupersede(this.#res, input, actor);
    this.#kick();
    return result;
  }

  async #forget(input: ForgetRequest, actor: string | Actor): Promise<Requested> {
    const result = await requestForget(this.#res, input, actor);
    if (result.created) this.#kick();
    return result;
  }

  /** POST /v1/erasures/{id}/redactions: re-key other subjects' logs without the named records, then probe again. */
  async redact(
    erasureId: string,
    ids: readonly string[],
    actor: string | Actor,
    override?: { readonly reason: string },
  ): Promise<{ erasureId: string; status: ErasureStatus }> {
    await orderRedaction(this.#res, erasureId, ids, actorOf(actor), override);
    this.#kick();
    return { erasureId, status: 'running' };
  }

  /** POST /v1/erasures/{id}/dismissals: a proposal, which changes nothing until a second principal approves it. */
  async dismiss(
    erasureId: string,
    request: DismissalRequest,
    actor: string | Actor,
  ): Promise<{ erasureId: string; status: ErasureStatus; dismissalId: string }> {
    const dismissalId = await proposeDismissal(this.#res, erasureId, request, actorOf(actor));
    return { erasureId, status: await this.#res.records.status(erasureId), dismissalId };
  }

  /** POST …/dismissals/{dismissalId}/approve: the probe runs again without the records. */
  async approveDismissal(erasureId: string, dismissalId: string, actor: Actor): Promise<{ erasureId: string; status: ErasureStatus; dismissalId: string }> {
    await approveDismissal(this.#res, erasureId, dismissalId, actor);
    this.#kick();
    return { erasureId, status: 'running', dismissalId };
  }

  /** POST …/dismissals/{dismissalId}/revoke: a proposal rejected, or an approved ruling revoked (the probe runs again). */
  async revokeDismissal(
    erasureId: string,
    dismissalId: string,
    actor: string | Actor,
    revocation: DismissalRevocation = {},
  ): Promise<{ erasureId: string; status: ErasureStatus; dismissalId: string }> {
    const reopened = await revokeDismissal(this.#res, erasureId, dismissalId, actorOf(actor), revocation.reason);
    if (reopened) this.#kick();
    return { erasureId, status: reopened ? 'running' : await this.#res.records.status(erasureId), dismissalId };
  }

  /** The key-creation guard (key-guard.ts), in the transaction that inserts a key. */
  refuseKeyCreation(tx: Transaction, subjectHash: Uint8Array): Promise<void> {
    return refuseKeyCreation(this.#res, tx, subjectHash);
  }

  /** refuseKeyCreation in SQL, for a group-committed creation's one statement. */
  readonly keyCreationRefusals = keyCreationRefusals;

  async get(erasureId: string): Promise<ErasureView> {
    return fullView(this.#res, await this.#res.records.row(erasureId));
  }

  /** GET /v1/erasures: a page, oldest first, each as `get` answers it; with `subject`, that subject's alone. */
  async list(page: KeysetPage & { subject?: string | undefined } = {}): Promise<Array<{ view: ErasureView; position: KeysetPosition }>> {
    const subjectHash = page.subject === undefined ? undefined : this.#res.keys.subjectHash(page.subject);
    const rows = await this.#res.records.page({ after: page.after, limit: page.limit, subjectHash });
    const out: Array<{ view: ErasureView; position: KeysetPosition }> = [];
    for (const { row, position } of rows) out.push({ view: await fullView(this.#res, row), position });
    return out;
  }

  /** POST /v1/subjects/{subject}/reinstate (admin): lifts the subject's tombstone, audited (reinstate.ts). */
  reinstate(subject: string, reason: string, actor: string): Promise<{ erasureId: string; erasedAt: Date }> {
    return reinstateSubject(this.#res, subject, reason, actor);
  }

  /** POST /v1/erasures/{id}/resume: a failed erasure runs again from the step that failed (resume.ts). */
  async resume(erasureId: string, actor: string): Promise<ErasureView> {
    await resumeErasure(this.#res, erasureId, actor);
    this.#kick();
    return viewOf(await this.#res.records.row(erasureId), this.#res.probeThreshold);
  }

  /** The signed certificate document alone, as stored (views.ts). */
  async certificate(erasureId: string): Promise<Certificate> {
    return certificateOf(await this.#res.records.row(erasureId));
  }

  status(erasureId: string): Promise<ErasureStatus> {
    return this.#res.records.status(erasureId);
  }

  /** Transitions after `afterId`, oldest first (the events stream). */
  transitions(erasureId: string, afterId = 0): Promise<ErasureTransition[]> {
    return this.#res.records.transitions(erasureId, afterId);
  }

  /** Every transition, oldest first (the report: rows are only inserted, so a superseded outcome is still there). */
  async allTransitions(erasureId: string): Promise<ErasureTransition[]> {
    const all = await this.#res.records.transitions(erasureId);
    for (let page = all; page.length > 0; ) {
      page = await this.#res.records.transitions(erasureId, page.at(-1)!.id, { checked: true });
      all.push(...page);
    }
    return all;
  }

  /** Follows an erasure's events after `afterId` (watchers.ts); `close()` the follower when the stream ends. */
  follow(erasureId: string, afterId = 0): Follower {
    return this.watchers.follow(erasureId, afterId);
  }

  /** A sharded replica's probes cover every shard from now on: this replica's part and each owner's (src/app/shard-keeper.ts). */
  useShards(probes: ShardProbes): void {
    this.#res.shardProbes = probes;
  }

  /** Another replica's probe asks for this replica's part (the shards it answers for), reconciling its index first when asked. */
  async probeForPeer(
    target: ErasureTarget,
    input: ProbePartInput,
    options: { readonly reconcile: boolean; readonly shards: ReadonlySet<number> },
  ): Promise<ProbePart> {
    if (options.reconcile) await this.#res.vectors.reconcile();
    return probePart(this.#res, target, input, options.shards);
  }

  /** Starts claiming work every LETHE_ERASURE_POLL_MS (and at once when kicked). */
  start(): void {
    this.#workerRunning = true;
    this.#worker.start();
  }

  workerStatus(): { running: boolean; lastPassAt: Date | undefined } {
    return { running: this.#workerRunning, lastPassAt: this.#lastPassAt };
  }

  /** Stops the worker and every watcher (their streams end). */
  stop(): Promise<void> {
    this.#workerRunning = false;
    this.watchers.close();
    return this.#worker.stop();
  }

  /** Looks for claimable work now, when the worker runs. */
  #kick(): void {
    this.#worker.kick();
  }

  /** A lease of the subject was released (KeyService.onLeaseReleased): its erasure parked at drain_leases runs now. */
  leasesReleased(subjectHash: Uint8Array): Promise<void> {
    return wakeOnRelease(this.#res.records, subjectHash, () => this.#kick(), this.#res.logger);
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
        throw new LetheError(
          'unavailable',
          `erasure ${erasureId} did not finish in ${timeoutMs} ms (at ${JSON.stringify(view.steps.find((s) => s.status !== 'done' && s.status !== 'skipped')?.name)})`,
        );
      }
      await this.drain();
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}
