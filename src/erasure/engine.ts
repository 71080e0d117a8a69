/**
 * The erasure engine: a durable state machine in PostgreSQL (ARCHITECTURE.md,
 * "Erasure"; invariants in src/erasure/README.md).
 *
 * - One `erasures` row per request; `step` names the next step to run. Any replica
 *   claims a row whose claim lapsed (FOR UPDATE SKIP LOCKED), runs steps, and commits
 *   each step's outcome, the next step and a transition row in one transaction that
 *   also checks it still holds the claim. A replica killed mid-step leaves the claim
 *   to lapse; whoever claims next re-runs that step.
 * - Every step is safe to run again: fencing, destroying and propagating are
 *   idempotent; the cascade regenerates what still touches the subject; the tiers
 *   report cumulative removals, so a re-run reports what the first run did.
 * - A tier that provenance says the subject contributed to, and that reports zero
 *   removals (or anything left), fails the erasure: never a silent no-op.
 */
import { hostname } from 'node:os';
import { hkdf } from '@noble/hashes/hkdf.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { and, asc, eq, gt, inArray, sql } from 'drizzle-orm';
import { encodeContext, open, randomBytes, seal, toBase64Url, utf8, zeroize } from '../crypto/index.js';
import { type Database, queryRows, type Transaction } from '../db/client.js';
import { artifacts, destructionLedger, epochs, erasures, erasureTransitions, type ErasureRow, logEntries } from '../db/schema.js';
import { isLetheError, LetheError } from '../errors.js';
import type { ArtifactService } from '../artifacts/service.js';
import type { TrainingExposures } from '../artifacts/exposures.js';
import { touchingRecords, touchingSubject, upwardClosure } from '../artifacts/provenance.js';
import type { BackupService } from '../backups/service.js';
import type { LogService } from '../log/service.js';
import { describeError, type Logger } from '../observability/logger.js';
import type { KeyDestructions } from '../vault/destructions.js';
import type { EpochService } from '../vault/epochs.js';
import type { KeyService } from '../vault/keys.js';
import type { VersionKeys } from '../vault/version-keys.js';
import type { Vectors } from '../vectors/service.js';
import { isId, newId } from '../ids.js';
import { hashHex } from '../vault/subjects.js';
import { certificatePublicKey, type Json, signCertificate } from './certificate.js';
import { artifactsTier, backupsTier, count, keyTableTier, liveKey, logTier, type ProbeFinding, regenerateDerived, staleSince, type Tier, type TierName, type TierScope, vectorIndexTier } from './tiers.js';
import { decodeFingerprints, encodeFingerprints, type Fingerprints, keyedShingles, type ProbeCandidate, type RecordFingerprint, scoreProbe } from './probe.js';
import { type ErasureClass, type ErasureStatus, FIRST_RUN, STEP_NAMES, type StepName, TRANSITIONS } from './machine.js';
import type { ErasureRequest } from './request.js';
import { MAX_REDACTION_IDS } from './request.js';
import { type ErasureState, parseState } from './state.js';
import type { ErasureGraph, ErasureTransition, ErasureView, GraphNode, ProbeView, Residual, StepView } from './view.js';

/** Nearest neighbours looked at per fingerprint vector and per public attribute. */
const PROBE_NEIGHBOURS = 8;
/** Fingerprinted records used as nearest-neighbour queries (every record is still scored against every candidate). */
export const PROBE_MAX_QUERIES = 128;
const GRAPH_NODE_LIMIT = 300;

/** At most `n` items of `list`, evenly spread over it. */
function spread<T>(list: readonly T[], n: number): T[] {
  if (list.length <= n) return [...list];
  return Array.from({ length: n }, (_, i) => list[Math.floor((i * list.length) / n)]!);
}
const MAX_ATTEMPTS = 5;

/** A tier's hard failure: it reported nothing removed (or something left) for a subject provenance says contributed. */
class TierFailure extends Error {}

/** The step asks to be run again later (leases still outstanding). */
class Park {
  constructor(readonly until: Date, readonly detail: string) {}
}

export interface ErasureEngineDeps {
  readonly db: Database;
  readonly keys: KeyService;
  readonly destructions: KeyDestructions;
  readonly log: LogService;
  readonly artifacts: ArtifactService;
  readonly versionKeys: VersionKeys;
  readonly vectors: Vectors;
  readonly backups: BackupService;
  readonly exposures: TrainingExposures;
  readonly epochs: EpochService;
  readonly logger: Logger;
  /** Ed25519 secret key signing certificates (derived from the root key); the vault zeroes it. */
  readonly signingKey: Uint8Array;
  readonly probeThreshold: number;
  readonly probeSimilarity: number;
  readonly claimSeconds: number;
  readonly pollMs: number;
  /** Test fault injection: kill the process at a named point (never honoured in production). */
  readonly failpoint?: (name: string) => void;
}

const iso = (d: Date | string | null | undefined): string | undefined => (d ? new Date(d).toISOString() : undefined);

export class ErasureEngine {
  readonly #d: ErasureEngineDeps;
  readonly replica = `${hostname()}:${process.pid}:${toBase64Url(randomBytes(6))}`;
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> | undefined;
  #stopped = false;
  #started = false;
  readonly #listeners = new Set<() => void>();

  /** Retired epochs at the last finalize pass (-1: never looked), and whether that pass left provisional rows unread. */
  #retiredSeen = -1;
  #finalizeMore = false;

  /** base64url of the Ed25519 key that verifies this vault's certificates. */
  readonly publicKey: string;

  readonly #tiers: Readonly<Record<TierName, Tier>>;
  /** The running cascade's erasure and state, so the artifacts tier can checkpoint the version keys it will destroy. */
  #cascading: { erasureId: string; state: ErasureState } | undefined;

  constructor(deps: ErasureEngineDeps) {
    this.#d = deps;
    this.publicKey = toBase64Url(certificatePublicKey(deps.signingKey));
    this.#tiers = {
      'key-table': keyTableTier(deps),
      log: logTier(deps),
      'vector-index': vectorIndexTier(deps),
      artifacts: artifactsTier(deps, {
        beforeRegenerate: async (keys) => {
          const c = this.#cascading;
          if (!c) return;
          c.state.versionKeys = [...new Set([...(c.state.versionKeys ?? []), ...keys])];
          await this.#checkpoint(c.erasureId, c.state);
        },
      }),
      backups: backupsTier(deps),
    };
  }

  // ---------------------------------------------------------------- requests

  /** POST /v1/erasures: a new erasure, or the subject's open one. */
  async request(input: ErasureRequest, actor: string): Promise<{ erasureId: string; status: ErasureStatus; created: boolean }> {
    const status = await this.#d.keys.subjectStatus(input.subject);
    const subjectHash = status.subjectHash;
    const open = await this.#openFor(subjectHash);
    if (open) return { erasureId: open.erasureId, status: open.status, created: false };
    if (!status.key && !status.erased) {
      const [seen] = await queryRows<{ one: number }>(this.#d.db, sql`select 1 as one from log_entries where subject_hash = ${subjectHash} limit 1`);
      if (!seen) throw new LetheError('not_found', 'lethe has never seen this subject');
    }
    const erasureId = newId('ers');
    const { keyId: sealKeyId, key } = this.#d.versionKeys.fresh();
    try {
      const sealedRequest = this.#seal(key, sealKeyId, erasureId, 'request', utf8.encode(JSON.stringify({ reason: input.reason ?? null, publicAttributes: input.publicAttributes ?? [] })));
      const now = new Date();
      const inserted = await this.#d.db.transaction(async (tx) => {
        const rows = await tx
          .insert(erasures)
          .values({
            erasureId,
            subjectHash,
            status: 'pending',
            step: 'classify',
            legalBasis: input.legalBasis ?? null,
            unlearning: input.unlearning ?? null,
            sealKeyId,
            sealedRequest,
            state: { steps: {} } satisfies ErasureState,
            notBefore: now,
            createdAt: now,
            updatedAt: now,
          })
          .onConflictDoNothing()
          .returning({ erasureId: erasures.erasureId });
        if (rows.length === 0) return false;
        await this.#d.versionKeys.store(tx, { keyId: sealKeyId, key, artifactId: erasureId, version: 0 });
        await this.#transition(tx, erasureId, null, 'classify', 'pending', `requested by ${actor}`);
        return true;
      });
      if (!inserted) {
        // another request for the subject won the race: answer with its erasure
        const winner = await this.#openFor(subjectHash);
        if (!winner) throw new LetheError('unavailable', 'the subject\'s erasure changed during the request; try again', { retryable: true });
        return { erasureId: winner.erasureId, status: winner.status, created: false };
      }
    } finally {
      zeroize(key);
    }
    // leases stop from the request on; the fence step confirms it (and covers a crash right here)
    if (status.key?.state === 'active') {
      await this.#d.keys.fenceKey(status.key.keyId, 'erasure').catch((e: unknown) => {
        if (!isLetheError(e, 'not_found')) throw e;
      });
    }
    this.kick();
    return { erasureId, status: 'pending', created: true };
  }

  /**
   * The key-creation guard (KeyService.guardCreation): an open erasure fences the
   * subject itself, not only its key — no new key until it ends. Runs in the
   * transaction that inserts the key.
   */
  async refuseKeyWhileOpen(tx: Transaction, subjectHash: Uint8Array): Promise<void> {
    const [erasing] = await queryRows<{ one: number }>(
      tx,
      sql`select 1 as one from erasures where subject_hash = ${subjectHash} and status in ('pending', 'running') limit 1`,
    );
    if (erasing) throw new LetheError('erasure_in_progress', 'the subject is being erased; no new key is created until the erasure ends');
  }

  async #openFor(subjectHash: Uint8Array): Promise<{ erasureId: string; status: ErasureStatus } | undefined> {
    const [row] = await this.#d.db
      .select({ erasureId: erasures.erasureId, status: erasures.status })
      .from(erasures)
      .where(and(eq(erasures.subjectHash, subjectHash), inArray(erasures.status, ['pending', 'running'])));
    return row;
  }

  /** POST /v1/erasures/{id}/redactions: re-key other subjects' logs without the named records, then probe again. */
  async redact(erasureId: string, ids: readonly string[], actor: string): Promise<{ erasureId: string; status: ErasureStatus }> {
    const unique = [...new Set(ids)];
    if (unique.length === 0) throw new LetheError('validation_failed', 'ids: name at least one entry');
    if (unique.length > MAX_REDACTION_IDS) throw new LetheError('validation_failed', `ids: at most ${MAX_REDACTION_IDS} entries per redaction`);
    const row = await this.#row(erasureId);
    if (row.status === 'pending' || row.status === 'running') throw new LetheError('conflict', 'the erasure is still running; order the redaction once it has finished');
    if (row.status === 'failed') throw new LetheError('conflict', 'the erasure failed; request a new erasure of the subject first');
    if (!row.sealKeyId) throw new LetheError('conflict', 'the probe fingerprints were destroyed when the erasure finished with no match left; request a new erasure to probe again');
    const notEntries = unique.filter((id) => !id.startsWith('entry_'));
    if (notEntries.length > 0) {
      throw new LetheError('validation_failed', `ids: ${notEntries.length} id(s) are not log entries (derived artifacts are regenerated from their sources: redact the sources)`);
    }
    const rows = await queryRows<{ entry_id: string; subject_hash: Uint8Array; live: boolean }>(
      this.#d.db,
      sql`select e.entry_id, e.subject_hash, (k.key_id is not null) as live
            from log_entries e left join subject_keys k on k.key_id = e.key_id
           where e.entry_id in (select json_array_elements_text(${JSON.stringify(unique)}::json))`,
    );
    if (rows.length !== unique.length) throw new LetheError('validation_failed', `ids: ${unique.length - rows.length} id(s) are not entries lethe holds`);
    const own = rows.filter((r) => Buffer.from(r.subject_hash).equals(Buffer.from(row.subjectHash)));
    if (own.length > 0) throw new LetheError('validation_failed', `ids: ${own.length} id(s) are the erased subject's own entries (already unreadable)`);
    const dead = rows.filter((r) => !r.live);
    if (dead.length > 0) throw new LetheError('validation_failed', `ids: ${dead.length} id(s) are already unreadable (their key was destroyed)`);
    await this.#d.db.transaction(async (tx) => {
      const [locked] = await tx.select().from(erasures).where(eq(erasures.erasureId, erasureId)).for('update');
      if (!locked || (locked.status !== 'completed' && locked.status !== 'incomplete')) throw new LetheError('conflict', 'the erasure changed meanwhile; try again');
      const state = parseState(locked.state);
      state.pendingRedaction = unique;
      state.redactions = [...(state.redactions ?? []), { ids: unique, orderedAt: new Date().toISOString() }];
      for (const s of ['redact', 'propagate', 'probe', 'certify'] as const) state.steps[s] = { status: 'pending' };
      try {
        await tx
          .update(erasures)
          .set({ status: 'running', step: 'redact', state, finishedAt: null, notBefore: new Date(), claimedBy: null, claimedUntil: null, attempts: 0, updatedAt: new Date() })
          .where(eq(erasures.erasureId, erasureId));
      } catch (e) {
        if (String((e as { code?: string }).code) === '23505') throw new LetheError('conflict', 'another erasure of this subject is open');
        throw e;
      }
      await this.#transition(tx, erasureId, null, 'redact', 'running', `redaction of ${unique.length} record(s) ordered by ${actor}`);
    });
    this.kick();
    return { erasureId, status: 'running' };
  }

  // ---------------------------------------------------------------- reading

  async #row(erasureId: string): Promise<ErasureRow> {
    if (!isId('ers', erasureId)) throw new LetheError('not_found', 'no such erasure');
    const [row] = await this.#d.db.select().from(erasures).where(eq(erasures.erasureId, erasureId));
    if (!row) throw new LetheError('not_found', 'no such erasure');
    return row;
  }

  async get(erasureId: string): Promise<ErasureView> {
    return this.#view(await this.#row(erasureId));
  }

  #view(row: ErasureRow): ErasureView {
    const state = parseState(row.state);
    const steps: StepView[] = [];
    for (const name of STEP_NAMES) {
      const s = state.steps[name];
      if (name === 'redact' && !s) continue;
      steps.push({ name, status: s?.status ?? 'pending', ...(s?.detail ? { detail: s.detail } : {}), ...(s?.startedAt ? { startedAt: s.startedAt } : {}), ...(s?.finishedAt ? { finishedAt: s.finishedAt } : {}) });
    }
    const certificate = row.certificate as { payload: Record<string, unknown>; signature: string; publicKey: string; algorithm: 'Ed25519' } | null;
    return {
      erasureId: row.erasureId,
      status: row.status,
      ...(row.class ? { class: row.class } : {}),
      subjectHash: hashHex(row.subjectHash),
      ...(row.legalBasis ? { legalBasis: row.legalBasis } : {}),
      createdAt: row.createdAt.toISOString(),
      ...(row.finishedAt ? { finishedAt: row.finishedAt.toISOString() } : {}),
      steps,
      residuals: state.residuals ?? [],
      probe: state.probe ?? { recovered: 0, threshold: this.#d.probeThreshold, matches: [] },
      ...(certificate ? { certificate: { payload: certificate.payload, signature: certificate.signature, publicKey: certificate.publicKey, algorithm: certificate.algorithm } } : {}),
      ...(row.certificateState ? { certificateState: row.certificateState } : {}),
      graph: state.graph ?? { nodes: [], edges: [] },
    };
  }

  /** Transitions after `afterId`, oldest first (the events stream). */
  /** The erasure's status alone (what a follower polls). */
  async status(erasureId: string): Promise<ErasureStatus> {
    if (!isId('ers', erasureId)) throw new LetheError('not_found', 'no such erasure');
    const [row] = await this.#d.db.select({ status: erasures.status }).from(erasures).where(eq(erasures.erasureId, erasureId));
    if (!row) throw new LetheError('not_found', 'no such erasure');
    return row.status;
  }

  async transitions(erasureId: string, afterId = 0): Promise<ErasureTransition[]> {
    await this.status(erasureId);
    const rows = await this.#d.db
      .select()
      .from(erasureTransitions)
      .where(and(eq(erasureTransitions.erasureId, erasureId), gt(erasureTransitions.id, afterId)))
      .orderBy(asc(erasureTransitions.id))
      .limit(500);
    return rows.map((r) => ({ id: r.id, fromStep: r.fromStep, toStep: r.toStep, status: r.status, at: r.at.toISOString(), detail: r.detail }));
  }

  /** Runs `fn` whenever this replica commits a transition (the events stream wakes on it). */
  onTransition(fn: () => void): () => void {
    this.#listeners.add(fn);
    return () => this.#listeners.delete(fn);
  }

  // ---------------------------------------------------------------- the worker

  /** Starts claiming work every pollMs (and at once when kicked). */
  start(): void {
    this.#stopped = false;
    this.#started = true;
    const tick = () => {
      if (this.#stopped) return;
      this.kick();
      this.#timer = setTimeout(tick, this.#d.pollMs);
      this.#timer.unref();
    };
    tick();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    await this.#running?.catch(() => {});
  }

  /** Looks for claimable work now, when the worker runs (one drain at a time per replica). */
  kick(): void {
    if (!this.#started || this.#running || this.#stopped) return;
    this.#running = this.drain()
      .then(() => undefined)
      .catch((e: unknown) => this.#d.logger.error({ err: describeError(e) }, 'erasure worker failed'))
      .finally(() => {
        this.#running = undefined;
      });
  }

  /** Claims and runs erasures until none is claimable; also finalizes certificates whose epochs retired. */
  async drain(): Promise<number> {
    let ran = 0;
    for (;;) {
      if (this.#stopped) return ran;
      const row = await this.#claim();
      if (!row) break;
      ran++;
      await this.#run(row);
    }
    await this.finalizeCertificates().catch((e: unknown) => this.#d.logger.warn({ err: describeError(e) }, 'could not finalize certificates'));
    return ran;
  }

  /** Waits until the erasure is finished (tests and the CLI's in-process use). */
  async settle(erasureId: string, timeoutMs = 60_000): Promise<ErasureView> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const view = await this.get(erasureId);
      if (view.status !== 'pending' && view.status !== 'running') return view;
      if (Date.now() > deadline) throw new LetheError('unavailable', `erasure ${erasureId} did not finish in ${timeoutMs} ms (at ${JSON.stringify(view.steps.find((s) => s.status !== 'done' && s.status !== 'skipped')?.name)})`);
      await this.drain();
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  async #claim(): Promise<ErasureRow | undefined> {
    const rows = await queryRows<{ erasure_id: string }>(
      this.#d.db,
      sql`update erasures
             set claimed_by = ${this.replica},
                 claimed_until = now() + make_interval(secs => ${this.#d.claimSeconds}),
                 status = case when status = 'pending' then 'running' else status end,
                 updated_at = now()
           where erasure_id = (
                 select erasure_id from erasures
                  where status in ('pending', 'running') and not_before <= now()
                    and (claimed_until is null or claimed_until < now())
                  order by not_before
                  limit 1
                  for update skip locked)
       returning erasure_id`,
    );
    if (!rows[0]) return undefined;
    return this.#row(rows[0].erasure_id);
  }

  /**
   * Claims one erasure and runs only its next step, then hands it back (operators
   * stepping through an erasure, and tests). Returns the step run, if any.
   */
  async stepOnce(): Promise<StepName | undefined> {
    const row = await this.#claim();
    if (!row) return undefined;
    const step = row.step as StepName;
    await this.#run(row, 1);
    await this.#d.db
      .update(erasures)
      .set({ claimedBy: null, claimedUntil: null })
      .where(and(eq(erasures.erasureId, row.erasureId), eq(erasures.claimedBy, this.replica)));
    return step;
  }

  async #run(initial: ErasureRow, maxSteps = Number.POSITIVE_INFINITY): Promise<void> {
    let row = initial;
    let ran = 0;
    const heartbeat = setInterval(() => {
      void this.#d.db
        .update(erasures)
        .set({ claimedUntil: sql`now() + make_interval(secs => ${this.#d.claimSeconds})` })
        .where(and(eq(erasures.erasureId, row.erasureId), eq(erasures.claimedBy, this.replica)))
        .catch(() => {});
    }, Math.max(200, (this.#d.claimSeconds * 1000) / 3));
    heartbeat.unref();
    try {
      while (row.step && !this.#stopped && ran++ < maxSteps) {
        const step = row.step as StepName;
        const state = parseState(row.state);
        const startedAt = new Date().toISOString();
        state.steps[step] = { status: 'running', startedAt };
        await this.#checkpoint(row.erasureId, state);
        let outcome: { detail: string; cls?: ErasureClass; final?: { status: ErasureStatus; certificate: unknown; certificateState: 'provisional' | 'final'; destroySealKey: boolean } } | Park;
        try {
          outcome = await this.#step(step, row, state);
        } catch (e) {
          await this.#failStep(row, step, state, e);
          return;
        }
        if (outcome instanceof Park) {
          state.steps[step] = { status: 'running', startedAt, detail: outcome.detail };
          const parked = await this.#d.db.transaction(async (tx) => {
            const r = await tx
              .update(erasures)
              .set({ state, notBefore: outcome.until, claimedBy: null, claimedUntil: null, updatedAt: new Date() })
              .where(and(eq(erasures.erasureId, row.erasureId), eq(erasures.claimedBy, this.replica)))
              .returning({ id: erasures.erasureId });
            if (r.length > 0) await this.#transition(tx, row.erasureId, step, step, 'running', outcome.detail);
            return r.length > 0;
          });
          if (parked) this.#emit();
          return;
        }
        this.#d.failpoint?.(step);
        const next = TRANSITIONS[step];
        state.steps[step] = { status: 'done', startedAt, finishedAt: new Date().toISOString(), detail: outcome.detail };
        const committed = await this.#d.destructions.transaction(async (tx) => {
          const finished = outcome.final;
          const status: ErasureStatus = finished ? finished.status : 'running';
          const r = await tx
            .update(erasures)
            .set({
              step: next,
              state,
              status,
              ...(outcome.cls ? { class: outcome.cls } : {}),
              ...(finished
                ? {
                    certificate: finished.certificate as Json,
                    certificateState: finished.certificateState,
                    finishedAt: new Date(),
                    claimedBy: null,
                    claimedUntil: null,
                    ...(finished.destroySealKey ? { sealKeyId: null, sealedRequest: null, sealedFingerprints: null } : {}),
                  }
                : {}),
              attempts: 0,
              lastError: null,
              updatedAt: new Date(),
            })
            .where(and(eq(erasures.erasureId, row.erasureId), eq(erasures.claimedBy, this.replica)))
            .returning();
          if (r.length === 0) return undefined;
          if (finished?.destroySealKey && row.sealKeyId) {
            await this.#d.versionKeys.destroy(tx, row.sealKeyId, { reason: 'erasure fingerprints no longer needed', actor: 'erasure', artifactId: row.erasureId });
          }
          await this.#transition(tx, row.erasureId, step, next, status, outcome.detail);
          return r[0];
        });
        if (!committed) {
          this.#d.logger.warn({ erasureId: row.erasureId, step }, 'lost the claim on an erasure; another replica continues it');
          return;
        }
        this.#emit();
        row = committed;
      }
    } finally {
      clearInterval(heartbeat);
      if (this.#stopped) {
        // shutting down between steps: hand the erasure over now rather than when the claim lapses
        await this.#d.db
          .update(erasures)
          .set({ claimedBy: null, claimedUntil: null })
          .where(and(eq(erasures.erasureId, row.erasureId), eq(erasures.claimedBy, this.replica)))
          .catch(() => {});
      }
    }
  }

  async #failStep(row: ErasureRow, step: StepName, state: ErasureState, e: unknown): Promise<void> {
    const hard = e instanceof TierFailure;
    const message = e instanceof TierFailure || isLetheError(e) ? (e as Error).message : 'internal error';
    const attempts = row.attempts + 1;
    const give_up = hard || attempts >= MAX_ATTEMPTS || (isLetheError(e) && !e.retryable && e.code !== 'conflict');
    this.#d.logger.warn({ erasureId: row.erasureId, step, attempts, err: describeError(e) }, give_up ? 'erasure step failed' : 'erasure step will be retried');
    state.steps[step] = { ...state.steps[step], status: give_up ? 'failed' : 'running', detail: give_up ? message : `attempt ${attempts} failed (${message}); retrying` };
    await this.#d.db.transaction(async (tx) => {
      const r = await tx
        .update(erasures)
        .set({
          state,
          attempts,
          lastError: message,
          claimedBy: null,
          claimedUntil: null,
          updatedAt: new Date(),
          ...(give_up ? { status: 'failed', step: null, finishedAt: new Date() } : { notBefore: new Date(Date.now() + 500 * 2 ** attempts) }),
        })
        .where(and(eq(erasures.erasureId, row.erasureId), eq(erasures.claimedBy, this.replica)))
        .returning({ id: erasures.erasureId });
      if (r.length > 0) await this.#transition(tx, row.erasureId, step, give_up ? null : step, give_up ? 'failed' : 'running', message);
    });
    this.#emit();
  }

  /** Saves the running step's progress (only while this replica holds the claim). */
  async #checkpoint(erasureId: string, state: ErasureState): Promise<void> {
    await this.#d.db
      .update(erasures)
      .set({ state, updatedAt: new Date() })
      .where(and(eq(erasures.erasureId, erasureId), eq(erasures.claimedBy, this.replica)));
  }

  async #transition(tx: Transaction, erasureId: string, from: string | null, to: string | null, status: string, detail: string): Promise<void> {
    await tx.insert(erasureTransitions).values({ erasureId, fromStep: from, toStep: to, status, at: new Date(), replica: this.replica, detail });
  }

  #emit(): void {
    for (const fn of this.#listeners) fn();
  }

  // ---------------------------------------------------------------- steps

  async #step(step: StepName, row: ErasureRow, state: ErasureState) {
    switch (step) {
      case 'classify':
        return this.#classify(row, state);
      case 'fingerprint':
        return { detail: await this.#fingerprint(row, state) };
      case 'fence':
        return { detail: await this.#fence(row, state) };
      case 'destroy':
        return { detail: await this.#destroy(row, state) };
      case 'drain_leases':
        return this.#drain(state);
      case 'cascade':
        return { detail: await this.#cascade(row, state) };
      case 'propagate':
        return { detail: await this.#propagate(row, state) };
      case 'probe':
        return { detail: await this.#probe(row, state) };
      case 'certify':
        return this.#certify(row, state);
      case 'redact':
        return { detail: await this.#redact(row, state) };
    }
  }

  async #classify(row: ErasureRow, state: ErasureState) {
    const h = row.subjectHash;
    const key = await liveKey(this.#d.db, h);
    const keyId = key?.keyId ?? null;
    const scope = { erasureId: row.erasureId, subjectHash: h, keyId };
    const contributions = {} as Record<TierName, number>;
    for (const tier of Object.values(this.#tiers)) contributions[tier.name] = await tier.contributions(scope);
    const touching = await touchingSubject(this.#d.db, h);
    const exposures = await this.#d.exposures.forSubjectHash(h);
    const affectedIds = touching.length ? (await upwardClosure(this.#d.db, touching.map((t) => t.artifactId))).map((a) => a.artifactId) : [];
    const versions = affectedIds.length
      ? await this.#d.db.select({ artifactId: artifacts.artifactId, version: artifacts.version, kind: artifacts.kind }).from(artifacts).where(inArray(artifacts.artifactId, affectedIds))
      : [];
    state.keyId = keyId;
    state.contributions = contributions;
    state.exposures = exposures.map((e) => e.exposureId);
    state.affected = versions.map((v) => ({ artifactId: v.artifactId, version: v.version }));
    state.graph = await this.#graph(h, versions);
    const cls: ErasureClass = exposures.length > 0 ? 'C' : touching.length > 0 ? 'B' : 'A';
    const detail =
      `class ${cls}: ${contributions.log} entries under ${keyId ? 'the live key' : 'no live key'}, ${contributions['vector-index']} vector(s), ` +
      `${touching.length} derived artifact(s) touch the subject (${affectedIds.length} to regenerate with what lies above them), ` +
      `${contributions.backups} backup(s) hold the key, ${exposures.length} training exposure(s)`;
    return { detail, cls };
  }

  /** Runs one tier's erasure against what it was recorded to hold, failing hard on a zero-removal or a leftover. */
  async #eraseTier(name: TierName, row: ErasureRow, state: ErasureState): Promise<string> {
    const contributed = state.contributions?.[name] ?? 0;
    const scope: TierScope = {
      erasureId: row.erasureId,
      subjectHash: row.subjectHash,
      keyId: state.keyId ?? null,
      contributed,
      otherKeys: [...(state.versionKeys ?? []), ...(state.redactedKeys ?? [])],
      affected: (state.affected ?? []).map((a) => a.artifactId),
      ...(state.destruction ? { since: new Date(state.destruction.destroyedAt) } : {}),
    };
    const result = await this.#tiers[name].erase(scope);
    if (contributed > 0 && result.removed === 0) {
      throw new TierFailure(`tier ${name} reported 0 removals for a subject that contributed ${contributed} record(s) to it`);
    }
    if (result.left > 0) throw new TierFailure(`tier ${name} still holds ${result.left} readable record(s) of the subject after erasing`);
    state.removed = { ...state.removed, [name]: result.removed };
    return result.detail;
  }

  /** The provenance graph of the affected artifacts and their direct sources (bounded). */
  async #graph(subjectHash: Uint8Array, affected: ReadonlyArray<{ artifactId: string; kind: string }>): Promise<ErasureGraph> {
    if (affected.length === 0) return { nodes: [], edges: [] };
    const ids = affected.slice(0, GRAPH_NODE_LIMIT).map((a) => a.artifactId);
    const edges = await queryRows<{ artifact_id: string; source_id: string; source_type: 'entry' | 'artifact'; erased: boolean | null; kind: string | null }>(
      this.#d.db,
      sql`select p.artifact_id, p.source_id, p.source_type, (e.subject_hash = ${subjectHash}) as erased, a.kind
            from provenance p
            left join log_entries e on p.source_type = 'entry' and e.entry_id = p.source_id
            left join artifacts a on p.source_type = 'artifact' and a.artifact_id = p.source_id
           where p.artifact_id in (select json_array_elements_text(${JSON.stringify(ids)}::json))
           order by p.artifact_id, p.source_id`,
    );
    const nodes = new Map<string, GraphNode>();
    for (const a of affected.slice(0, GRAPH_NODE_LIMIT)) nodes.set(a.artifactId, { id: a.artifactId, type: 'artifact', kind: a.kind, erasedSubject: false });
    let truncated = affected.length > GRAPH_NODE_LIMIT;
    const kept: Array<{ from: string; to: string }> = [];
    for (const e of edges) {
      if (!nodes.has(e.source_id)) {
        if (nodes.size >= GRAPH_NODE_LIMIT) {
          truncated = true;
          continue;
        }
        nodes.set(e.source_id, e.source_type === 'entry'
          ? { id: e.source_id, type: 'entry', erasedSubject: e.erased === true }
          : { id: e.source_id, type: 'artifact', ...(e.kind ? { kind: e.kind } : {}), erasedSubject: false });
      }
      kept.push({ from: e.source_id, to: e.artifact_id });
    }
    return { nodes: [...nodes.values()], edges: kept, ...(truncated ? { truncated } : {}) };
  }

  /** The erasure's own key (the caller zeroes it) and the shingle key derived from it. */
  async #sealKey(row: ErasureRow): Promise<Uint8Array> {
    if (!row.sealKeyId) throw new LetheError('conflict', 'the erasure key was destroyed');
    return this.#d.versionKeys.unwrap(row.sealKeyId);
  }

  #seal(key: Uint8Array, keyId: string, erasureId: string, what: string, plaintext: Uint8Array): Uint8Array {
    try {
      return seal({ key, keyId, plaintext, associatedData: encodeContext('erasure', { erasureId, what, keyId }) });
    } finally {
      plaintext.fill(0);
    }
  }

  #open(key: Uint8Array, keyId: string, erasureId: string, what: string, envelope: Uint8Array): Uint8Array {
    return open({ key, envelope, associatedData: encodeContext('erasure', { erasureId, what, keyId }), expectedKeyId: keyId });
  }

  async #fingerprint(row: ErasureRow, state: ErasureState): Promise<string> {
    const key = await this.#sealKey(row);
    const shingleKey = hkdf(sha256, key, undefined, utf8.encode('lethe/v1/erasure/shingles'), 32);
    try {
      const request = JSON.parse(utf8.decode(this.#open(key, row.sealKeyId!, row.erasureId, 'request', row.sealedRequest!))) as { publicAttributes: string[] };
      const records: RecordFingerprint[] = [];
      if (state.keyId) {
        const ids = (await this.#d.db.select({ id: logEntries.entryId }).from(logEntries).where(eq(logEntries.keyId, state.keyId)).orderBy(asc(logEntries.seq))).map((r) => r.id);
        for (let i = 0; i < ids.length; i += 256) {
          const chunk = ids.slice(i, i + 256);
          const entries = await this.#d.log.readMany(chunk);
          const readable = chunk.filter((id) => entries.has(id));
          const vectors = await this.#d.vectors.embedder.embed(readable.map((id) => entries.get(id)!.text));
          readable.forEach((id, j) => records.push({ id, vector: vectors[j]!, shingles: keyedShingles(entries.get(id)!.text, shingleKey) }));
        }
      }
      const fingerprints: Fingerprints = { model: this.#d.vectors.embedder.model, records, attributes: request.publicAttributes };
      const sealed = this.#seal(key, row.sealKeyId!, row.erasureId, 'fingerprints', encodeFingerprints(fingerprints));
      await this.#d.db
        .update(erasures)
        .set({ sealedFingerprints: sealed })
        .where(and(eq(erasures.erasureId, row.erasureId), eq(erasures.claimedBy, this.replica)));
      row.sealedFingerprints = sealed;
      state.fingerprinted = records.length;
      for (const r of records) r.vector.fill(0);
      return `${records.length} record(s) and ${request.publicAttributes.length} public attribute(s) fingerprinted (sealed under the erasure key)`;
    } finally {
      zeroize(key, shingleKey);
    }
  }

  async #fence(row: ErasureRow, state: ErasureState): Promise<string> {
    if (!state.keyId) return 'no live key to fence (the subject was erased before)';
    const live = await liveKey(this.#d.db, row.subjectHash);
    if (!live || live.keyId !== state.keyId) {
      // the classified key is gone (destroyed by a crash-resumed run of this step? no: by someone else); re-classify
      if (!live) return 'the key was already destroyed';
      state.keyId = live.keyId;
    }
    await this.#d.keys.fenceKey(state.keyId, 'erasure');
    // entries appended between fingerprint and fence are fingerprinted too
    const now = await count(this.#d.db, sql`select count(*) as n from log_entries where key_id = ${state.keyId}`);
    let extra = '';
    if (now !== state.fingerprinted) {
      await this.#fingerprint(row, state);
      extra = `; ${state.fingerprinted} record(s) fingerprinted again after late appends`;
    }
    return `key ${state.keyId} fenced: no new leases, appends or keys for the subject${extra}`;
  }

  async #destroy(row: ErasureRow, state: ErasureState): Promise<string> {
    const keyId = state.keyId;
    // the key table tier destroys the key; then the tiers the destruction erased are checked
    // (cumulative: a re-run reports the same)
    const details = [await this.#eraseTier('key-table', row, state)];
    if (keyId) {
      const [d] = await this.#d.db.select().from(destructionLedger).where(eq(destructionLedger.keyId, keyId));
      if (!d) throw new TierFailure(`tier key-table: key ${keyId} is not in the destruction ledger after its destruction`);
      state.destruction = { keyId, destroyedAt: d.destroyedAt.toISOString(), wrappedEpoch: d.wrappedEpoch, leasedUntil: d.leasedUntil?.toISOString() ?? null };
      this.#d.failpoint?.('destroy-committed');
    }
    for (const name of ['log', 'vector-index'] as const) details.push(await this.#eraseTier(name, row, state));
    return keyId ? `${details.join('; ')} (the key was wrapped under epoch ${state.destruction?.wrappedEpoch})` : 'no live key (nothing to destroy)';
  }

  #drain(state: ErasureState): { detail: string } | Park {
    const until = state.destruction?.leasedUntil ? new Date(state.destruction.leasedUntil) : undefined;
    if (until && until.getTime() > Date.now()) return new Park(until, `waiting for key leases handed to writers to expire at ${until.toISOString()}`);
    return { detail: until ? `every lease expired (the last at ${until.toISOString()})` : 'no lease was outstanding' };
  }

  async #cascade(row: ErasureRow, state: ErasureState): Promise<string> {
    this.#cascading = { erasureId: row.erasureId, state };
    try {
      const detail = await this.#eraseTier('artifacts', row, state);
      await this.#outcomes(state);
      return detail;
    } finally {
      this.#cascading = undefined;
    }
  }

  /** Marks each graph artifact regenerated / removed / unchanged against its version at classification. */
  async #outcomes(state: ErasureState): Promise<void> {
    const graph = state.graph;
    if (!graph || graph.nodes.length === 0) return;
    const before = new Map((state.affected ?? []).map((a) => [a.artifactId, a.version]));
    const ids = graph.nodes.filter((n) => n.type === 'artifact').map((n) => n.id);
    const now = new Map(
      (await this.#d.db.select({ id: artifacts.artifactId, version: artifacts.version, state: artifacts.state }).from(artifacts).where(inArray(artifacts.artifactId, ids))).map((r) => [r.id, r]),
    );
    state.graph = {
      ...graph,
      nodes: graph.nodes.map((n) => {
        if (n.type !== 'artifact') return n;
        const r = now.get(n.id);
        const outcome = !r || r.state === 'erased' ? 'removed' : before.has(n.id) && r.version > before.get(n.id)! ? 'regenerated' : 'unchanged';
        return { ...n, outcome };
      }),
    };
  }

  async #propagate(row: ErasureRow, state: ErasureState): Promise<string> {
    return this.#eraseTier('backups', row, state);
  }

  async #probe(row: ErasureRow, state: ErasureState): Promise<string> {
    const scope: TierScope = { erasureId: row.erasureId, subjectHash: row.subjectHash, keyId: state.keyId ?? null, contributed: 0 };
    for (const f of await this.#tiers['key-table'].probe(scope, { vectors: [], records: [], neighbours: 0 })) {
      if (f.kind === 'live-key') throw new TierFailure(`tier key-table: the subject has a live key (${f.keyId}) after its destruction`);
    }
    if (!row.sealedFingerprints) throw new TierFailure('the probe fingerprints are missing: the probe cannot run');
    const key = await this.#sealKey(row);
    const shingleKey = hkdf(sha256, key, undefined, utf8.encode('lethe/v1/erasure/shingles'), 32);
    let fp: Fingerprints | undefined;
    try {
      fp = decodeFingerprints(this.#open(key, row.sealKeyId!, row.erasureId, 'fingerprints', row.sealedFingerprints));
      const embedder = this.#d.vectors.embedder;
      const sameModel = fp.model === embedder.model;
      // candidates: the index's neighbours of every fingerprint and every public attribute, and the affected artifacts
      // at most PROBE_MAX_QUERIES of the records, evenly spread, query the index (each query is a full pass of it)
      const vectors: Float32Array[] = sameModel ? spread(fp.records, PROBE_MAX_QUERIES).map((r) => r.vector) : [];
      if (fp.attributes.length) vectors.push(...(await embedder.embed(fp.attributes)));
      const found = await this.#tiers['vector-index'].probe(scope, { vectors, records: [], neighbours: PROBE_NEIGHBOURS });
      const records = new Map<string, 'entry' | 'artifact'>();
      for (const f of found) if (f.kind === 'neighbour') records.set(f.id, f.type);
      for (const n of state.graph?.nodes ?? []) if (n.type === 'artifact') records.set(n.id, 'artifact');
      this.#d.failpoint?.('probe-candidates');
      const query = { vectors: [], records: [...records].map(([id, type]) => ({ id, type })), neighbours: 0 };
      const texts = [...(await this.#tiers.log.probe(scope, query)), ...(await this.#tiers.artifacts.probe(scope, query))].filter(
        (f): f is Extract<ProbeFinding, { kind: 'text' }> => f.kind === 'text',
      );
      const textVectors = texts.length ? await embedder.embed(texts.map((t) => t.text)) : [];
      const candidates: ProbeCandidate[] = texts.map((t, i) => ({
        id: t.id,
        tier: t.tier,
        vector: sameModel ? textVectors[i]! : new Float32Array(0),
        shingles: keyedShingles(t.text, shingleKey),
      }));
      for (const f of found) if (f.kind === 'vector') candidates.push({ id: f.id, tier: 'vector-index', vector: f.vector, shingles: new Set() });
      const { recovered, matches } = scoreProbe(fp.records, candidates, this.#d.probeSimilarity);
      state.probe = { recovered, threshold: this.#d.probeThreshold, matches };
      return `recovered ${recovered} of the subject's private content (threshold ${this.#d.probeThreshold}) from ${candidates.length} readable candidate record(s); ${matches.length} match(es)`;
    } finally {
      zeroize(key, shingleKey);
      for (const r of fp?.records ?? []) r.vector.fill(0);
    }
  }

  async #certify(row: ErasureRow, state: ErasureState) {
    const cls = (row.class ?? 'A') as ErasureClass;
    const probe = state.probe ?? { recovered: 1, threshold: this.#d.probeThreshold, matches: [] };
    const unlearning = row.unlearning as { method: string; bound: number } | null;
    const ok = probe.recovered <= probe.threshold && (cls !== 'C' || unlearning !== null);
    const status: ErasureStatus = ok ? 'completed' : 'incomplete';
    // the fingerprints stay (sealed) only while a redaction could still need them
    const destroySealKey = probe.matches.length === 0;
    const residuals = await this.#residuals(row, state, cls, probe, unlearning, !destroySealKey);
    state.residuals = residuals;
    const epochsHeld = await this.#wrappedEpochs(state, destroySealKey ? null : row.sealKeyId);
    state.wrappedEpochs = epochsHeld.epochs;
    const certificateState = epochsHeld.allRetired ? 'final' : 'provisional';
    state.steps.certify = { status: 'done', startedAt: state.steps.certify?.startedAt ?? new Date().toISOString(), finishedAt: new Date().toISOString() };
    const certificate = signCertificate(this.#payload(row, state, cls, status, certificateState, epochsHeld), this.#d.signingKey);
    return {
      detail: `${status}; certificate ${certificateState} (${certificateState === 'final' ? 'every epoch that wrapped a destroyed key is retired' : `until epoch(s) ${epochsHeld.epochs.join(', ')} retire`})`,
      final: { status, certificate, certificateState, destroySealKey },
    } as const;
  }

  #payload(
    row: ErasureRow,
    state: ErasureState,
    cls: ErasureClass,
    status: ErasureStatus,
    certificateState: 'provisional' | 'final',
    held: { epochs: number[]; retiredAt: Record<string, string> },
  ): { [key: string]: Json } {
    const steps = STEP_NAMES.flatMap((name) => {
      const s = state.steps[name];
      if (!s) return [];
      return [{ name, status: s.status, ...(s.startedAt ? { startedAt: s.startedAt } : {}), ...(s.finishedAt ? { finishedAt: s.finishedAt } : {}) }];
    });
    return {
      format: 'lethe-erasure-certificate/1',
      erasureId: row.erasureId,
      subjectHash: hashHex(row.subjectHash),
      class: cls,
      status,
      certificateState,
      legalBasis: row.legalBasis,
      requestedAt: row.createdAt.toISOString(),
      issuedAt: new Date().toISOString(),
      steps,
      probe: { recovered: state.probe?.recovered ?? 1, threshold: state.probe?.threshold ?? this.#d.probeThreshold, matches: (state.probe?.matches ?? []).map((m) => ({ ...m })) },
      residuals: (state.residuals ?? []).map((r) => ({ ...r })) as Json,
      // what each tier held of the subject at classification and reported removed
      tiers: Object.fromEntries(
        Object.entries(state.contributions ?? {}).map(([tier, contributed]) => [tier, { contributed: contributed ?? 0, removed: state.removed?.[tier as TierName] ?? 0 }]),
      ),
      wrappedEpochs: held.epochs,
      epochsRetiredAt: held.retiredAt,
    };
  }

  /** The epochs that wrapped every key this erasure destroyed (or keeps), and whether all are retired. */
  async #wrappedEpochs(state: ErasureState, keptSealKey: string | null): Promise<{ epochs: number[]; allRetired: boolean; retiredAt: Record<string, string> }> {
    const keyIds = [...new Set([...(state.keyId ? [state.keyId] : []), ...(state.versionKeys ?? []), ...(state.redactedKeys ?? [])])];
    const set = new Set<number>();
    if (keyIds.length) {
      const rows = await this.#d.db.select({ epoch: destructionLedger.wrappedEpoch }).from(destructionLedger).where(inArray(destructionLedger.keyId, keyIds));
      for (const r of rows) set.add(r.epoch);
    }
    if (keptSealKey) {
      const [k] = await queryRows<{ epoch: number }>(this.#d.db, sql`select epoch from artifact_keys where key_id = ${keptSealKey}`);
      if (k) set.add(k.epoch);
    }
    const list = [...set].sort((a, b) => a - b);
    const states = list.length ? await this.#d.db.select().from(epochs).where(inArray(epochs.epoch, list)) : [];
    const retiredAt: Record<string, string> = {};
    for (const e of states) if (e.state === 'retired' && e.retiredAt) retiredAt[String(e.epoch)] = e.retiredAt.toISOString();
    return { epochs: list, allRetired: list.every((e) => retiredAt[String(e)] !== undefined), retiredAt };
  }

  async #residuals(
    row: ErasureRow,
    state: ErasureState,
    cls: ErasureClass,
    probe: ProbeView,
    unlearning: { method: string; bound: number } | null,
    fingerprintsKept: boolean,
  ): Promise<Residual[]> {
    const out: Residual[] = [];
    out.push({
      tier: 'vector-index',
      kind: 'gist',
      detail:
        'The erased records\' embeddings were deleted with their key and dropped from every replica\'s index. Their gist stays a property of the embedding model\'s vector space: text elsewhere that says the same lands near it. The probe measured what remains recoverable.',
      bound: probe.recovered,
    });
    const d = state.destruction;
    if (d) {
      const [epoch] = await this.#d.db.select().from(epochs).where(eq(epochs.epoch, d.wrappedEpoch));
      const retired = epoch?.state === 'retired';
      const backups = await count(this.#d.db, sql`select count(*) as n from backup_keys where key_id = ${d.keyId}`);
      const until = retired ? iso(epoch?.retiredAt) : undefined;
      const bound = retired ? 0 : `until epoch ${d.wrappedEpoch} is retired (not scheduled: rotate the KEK with POST /v1/admin/kek/rotate)`;
      out.push({
        tier: 'key-table',
        kind: 'wrapped-dek',
        detail: `Copies of the destroyed key ${d.keyId}, wrapped under epoch ${d.wrappedEpoch}'s KEK, may remain in PostgreSQL dead tuples, WAL and database backups; they unwrap only while that epoch's KEK exists.`,
        ...(until ? { until } : {}),
        bound,
      });
      if (backups > 0) {
        out.push({
          tier: 'backups',
          kind: 'wrapped-dek',
          detail: `${backups} lethe backup(s) hold the destroyed key's wrapped copy in their key table and database export (their manifests mark it destroyed); it unwraps only while epoch ${d.wrappedEpoch}'s KEK exists.`,
          ...(until ? { until } : {}),
          bound,
        });
      }
      if (d.leasedUntil) {
        out.push({
          tier: 'caches',
          kind: 'lease',
          detail: 'Writers that leased the key before the fence could hold the DEK in memory until their lease expired; lethe refuses every write under the destroyed key.',
          until: d.leasedUntil,
          bound: d.leasedUntil,
        });
      }
    }
    for (const m of probe.matches) {
      out.push({
        tier: m.tier,
        kind: 'cross-subject',
        detail: `Record ${m.id} (not the subject's) still carries the erased content (score ${m.score}). ${m.tier === 'log' ? 'Order a redaction (POST /v1/erasures/{id}/redactions) to re-key its subject\'s log without it.' : m.tier === 'artifacts' ? 'It is derived from surviving sources that carry the content: redact those.' : 'The index still holds its vector.'}`,
        bound: 'unbounded until redacted',
      });
    }
    if (cls === 'C') {
      out.push({
        tier: 'model-weights',
        kind: 'parametric',
        detail: unlearning
          ? `The subject's records were in ${state.exposures?.length ?? 0} registered training exposure(s); the requester states unlearning by "${unlearning.method}" with bound ${unlearning.bound}.`
          : `The subject's records were in ${state.exposures?.length ?? 0} registered training exposure(s) and no unlearning bound was stated: what the weights retain is bounded only by model capacity.`,
        bound: unlearning ? unlearning.bound : 'unbounded',
      });
    }
    if (fingerprintsKept) {
      out.push({
        tier: 'erasure',
        kind: 'fingerprints',
        detail: `The probe fingerprints (keyed shingle hashes and embeddings of the erased records) stay sealed under the erasure's key ${row.sealKeyId} so a redaction can be probed again; the key is destroyed once a probe finds no match.`,
        bound: 'until no probe match remains',
      });
    }
    return out;
  }

  async #redact(row: ErasureRow, state: ErasureState): Promise<string> {
    const ids = state.pendingRedaction ?? [];
    const round = state.redactions?.at(-1);
    // what was derived from the named records, recorded before their keys are destroyed:
    // a re-run after a crash still finds an artifact above one already regenerated
    if (round && !round.affected) {
      const touching = ids.length ? await touchingRecords(this.#d.db, ids) : [];
      round.affected = touching.length ? (await upwardClosure(this.#d.db, touching.map((t) => t.artifactId))).map((a) => a.artifactId) : [];
      await this.#checkpoint(row.erasureId, state);
    }
    const rows = ids.length
      ? await queryRows<{ entry_id: string; key_id: string; state: 'active' | 'fenced' | null }>(
          this.#d.db,
          sql`select e.entry_id, e.key_id, k.state from log_entries e left join subject_keys k on k.key_id = e.key_id
               where e.entry_id in (select json_array_elements_text(${JSON.stringify(ids)}::json))`,
        )
      : [];
    // entries whose key is already destroyed were re-keyed out by an earlier run of this step
    const byKey = new Map<string, { state: 'active' | 'fenced'; ids: string[] }>();
    for (const r of rows) {
      if (!r.state) continue;
      const g = byKey.get(r.key_id) ?? { state: r.state, ids: [] };
      g.ids.push(r.entry_id);
      byKey.set(r.key_id, g);
    }
    for (const [keyId, g] of byKey) {
      const result = await this.#d.log.rekeyKey(keyId, g.state, { exclude: g.ids, actor: 'erasure', reason: `redaction for erasure ${row.erasureId}` });
      state.redactedKeys = [...new Set([...(state.redactedKeys ?? []), result.oldKeyId])];
      await this.#checkpoint(row.erasureId, state);
    }
    if (round && !round.rekeyedAt) {
      round.rekeyedAt = new Date().toISOString();
      await this.#checkpoint(row.erasureId, state);
    }
    // what was derived from the redacted records is regenerated without them
    const pending = async () => {
      const touching = ids.length ? (await touchingRecords(this.#d.db, ids)).map((t) => t.artifactId) : [];
      const stale = await staleSince(this.#d.db, round?.affected ?? [], round?.rekeyedAt ? new Date(round.rekeyedAt) : undefined);
      return [...new Set([...touching, ...stale])];
    };
    const { regenerated, removed, left } = await regenerateDerived(this.#d, pending, {
      reason: `redaction for erasure ${row.erasureId}`,
      beforeRegenerate: async (keys) => {
        state.versionKeys = [...new Set([...(state.versionKeys ?? []), ...keys])];
        await this.#checkpoint(row.erasureId, state);
      },
    });
    if (left > 0) throw new TierFailure(`tier artifacts still derives ${left} artifact(s) from redacted records`);
    if (round) round.done = new Date().toISOString();
    state.pendingRedaction = [];
    return `${ids.length} record(s) redacted by re-keying ${byKey.size} subject log(s) (old keys destroyed); ${regenerated} artifact(s) regenerated, ${removed} removed`;
  }

  // ---------------------------------------------------------------- certificates

  /** Re-signs provisional certificates as final once every epoch they wait on is retired. */
  async finalizeCertificates(): Promise<number> {
    // nothing can turn final unless an epoch retired since the last look (the worker calls this every poll)
    const [retired] = await queryRows<{ n: string | number }>(this.#d.db, sql`select count(*) as n from epochs where state = 'retired'`);
    const retiredNow = Number(retired?.n ?? 0);
    if (retiredNow === this.#retiredSeen && !this.#finalizeMore) return 0;
    this.#retiredSeen = retiredNow;
    const rows = await this.#d.db.select().from(erasures).where(eq(erasures.certificateState, 'provisional')).orderBy(asc(erasures.finishedAt)).limit(100);
    let done = 0;
    for (const row of rows) {
      const state = parseState(row.state);
      const held = await this.#wrappedEpochs(state, row.sealKeyId);
      if (!held.allRetired) continue;
      const previous = row.certificate as { payload: { [key: string]: Json } } | null;
      if (!previous) continue;
      const payload: { [key: string]: Json } = { ...previous.payload, certificateState: 'final', issuedAt: new Date().toISOString(), wrappedEpochs: held.epochs, epochsRetiredAt: held.retiredAt };
      // residuals bounded by those epochs end at their retirement
      const residuals = (state.residuals ?? []).map((r) => (r.kind === 'wrapped-dek' ? { ...r, bound: 0, until: Object.values(held.retiredAt).sort().at(-1)! } : r));
      state.residuals = residuals;
      payload.residuals = residuals.map((r) => ({ ...r })) as Json;
      const certificate = signCertificate(payload, this.#d.signingKey);
      const updated = await this.#d.db
        .update(erasures)
        .set({ certificate: certificate as unknown as Json, certificateState: 'final', state, updatedAt: new Date() })
        .where(and(eq(erasures.erasureId, row.erasureId), eq(erasures.certificateState, 'provisional')))
        .returning({ id: erasures.erasureId });
      if (updated.length) {
        done++;
        await this.#d.db.insert(erasureTransitions).values({ erasureId: row.erasureId, fromStep: null, toStep: null, status: row.status, at: new Date(), replica: this.replica, detail: 'certificate final: every epoch that wrapped a destroyed key is retired' });
      }
    }
    // a full batch that all turned final may have more behind it (older erasures finalize first)
    this.#finalizeMore = rows.length === 100 && done === rows.length;
    if (done) this.#emit();
    return done;
  }
}

