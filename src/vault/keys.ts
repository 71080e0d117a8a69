/**
 * Subject keys: creation, leases, fencing, destruction and validity.
 *
 * - A subject has at most one live key (unique subject_hash). A destroyed key's row
 *   is removed and a ledger row written in the same transaction; the subject's next
 *   key is a new key with a new id.
 * - The plaintext DEK exists only in this process's memory (cache, request), is
 *   handed out only in a lease, and is zeroed when dropped.
 */
import { eq, inArray, type SQL, sql } from 'drizzle-orm';
import { toBase64Url, zeroize } from '../crypto/index.js';
import { type Database, queryRows, type Transaction } from '../db/client.js';
import { destructionLedger, subjectKeys, type SubjectKeyRow } from '../db/schema.js';
import { LetheError, isLetheError } from '../errors.js';
import { assertSubjectId, newId } from '../ids.js';
import type { KeyProvider } from '../keyprovider/provider.js';
import type { Metrics } from '../observability/metrics.js';
import type { AuditLog } from './audit.js';
import type { DekCache } from './cache.js';
import { type CreationGuards, type CreationOutcome, KeyCreator, type LiveKeyRow, NO_REFUSALS } from './creation.js';
import type { KeyDestructions } from './destructions.js';
import { notify } from './events.js';
import { destroySubjectKey, type Destruction, type Replacement, replaceSubjectKey } from './key-destruction.js';
import { findLease, LeaseRecorder, leaseSummary, type LeaseSummary, recordRelease } from './leases.js';
import { assertKeyTransition, type KeyState } from './lifecycle.js';
import { hashHex, type SubjectHasher } from './subjects.js';
import { unwrapCurrent } from './wrapping.js';

export type { Destruction, Replacement } from './key-destruction.js';
export type { LeaseSummary } from './leases.js';

export interface SubjectKeyInfo {
  readonly keyId: string;
  readonly state: 'active' | 'fenced';
  readonly createdAt: Date;
  /** True when this call created the key. */
  readonly created: boolean;
}

export interface Lease {
  readonly keyId: string;
  /** The plaintext DEK. The caller zeroes it once it has been sent. */
  readonly dek: Uint8Array;
  readonly leaseId: string;
  readonly expiresAt: Date;
}

/**
 * A key's state as a backup job or a client sees it: `destruction_pending` is a key
 * already unusable whose destruction record is not yet durable in the backup
 * bucket's ledger chain (a restore could still bring it back); only then `destroyed`.
 */
export type Validity = 'active' | 'destruction_pending' | 'destroyed' | 'unknown';

export interface LiveKey {
  readonly keyId: string;
  readonly state: 'active' | 'fenced';
}

export interface SubjectStatus {
  readonly subjectHash: Uint8Array;
  /** The subject's live key, if it has one. */
  readonly key?: LiveKey;
  /** True when it has no live key and one of its keys was destroyed. */
  readonly erased: boolean;
}

export const MAX_VALIDITY_IDS = 10_000;

/**
 * What a release did: `released` recorded it now; `already_released` found it
 * recorded; `expired` found the lease over already (nothing to record).
 */
export interface LeaseRelease {
  readonly keyId: string;
  readonly outcome: 'released' | 'already_released' | 'expired';
}

/**
 * A check that runs in the transaction creating a subject's key, before the insert:
 * it throws a LetheError to refuse the key (an erasure of the subject is open:
 * erasure_in_progress; the subject was erased and not reinstated: subject_erased).
 */
export type KeyCreationGuard = (tx: Transaction, subjectHash: Uint8Array) => Promise<void>;

/**
 * A creation guard's SQL form, run inside the one statement of a group-committed key
 * creation (creation.ts): `among(subjects)` selects `(subject_hash, code)` for each
 * subject of `subjects` (a relation with a bytea `subject_hash`) the guard refuses a
 * key now; `error(code)` is the LetheError the guard throws for that code. It must
 * refuse exactly the subjects the guard function refuses, with the same errors.
 */
export interface KeyCreationRefusals {
  readonly among: (subjects: SQL) => SQL;
  readonly error: (code: string) => LetheError;
}

/** At most this many subjects in one bulk creation (`ensureKeys`, POST /v1/keys/batch). */
export const MAX_BULK_SUBJECTS = 10_000;

/** What a bulk creation answers for one subject, in the order asked. */
export type BulkKeyResult =
  | { readonly subject: string; readonly status: 'created' | 'existing'; readonly keyId: string; readonly createdAt: Date }
  | { readonly subject: string; readonly status: 'refused'; readonly refusal: LetheError };

/** How long a write waits out a forget's re-key before it is refused (a re-key of thousands of entries takes about a second). */
const REKEY_WAIT_MS = 10_000;

const fencedRefusal = () =>
  new LetheError(
    'erasure_in_progress',
    'the subject key is fenced: the subject is being erased, or re-keyed for a moment while some of its entries are forgotten; no new leases are handed out until then',
  );

export interface KeyServiceDeps {
  readonly db: Database;
  readonly provider: KeyProvider;
  readonly hasher: SubjectHasher;
  readonly audit: AuditLog;
  readonly cache: DekCache;
  readonly destructions: KeyDestructions;
  readonly metrics: Metrics;
  readonly leaseTtlSeconds: number;
  readonly now?: () => Date;
}

export class KeyService {
  readonly #d: KeyServiceDeps;
  readonly #leases: LeaseRecorder;
  readonly #now: () => Date;
  readonly #guards: Array<{ readonly check: KeyCreationGuard; readonly refusals: KeyCreationRefusals | undefined }> = [];
  readonly #onRelease: Array<(subjectHash: Uint8Array) => Promise<void>> = [];
  readonly #creator: KeyCreator;

  constructor(deps: KeyServiceDeps) {
    this.#d = deps;
    this.#leases = new LeaseRecorder(deps.db, deps.audit);
    this.#now = deps.now ?? (() => new Date());
    const guards: CreationGuards = {
      refusal: (tx, subjectHash) => this.#refusal(tx, subjectHash),
      among: (subjects) => {
        if (this.#guards.length === 0) return NO_REFUSALS;
        if (this.#guards.some((g) => g.refusals === undefined)) return undefined;
        return sql.join(
          this.#guards.map((g, i) => sql`select r.subject_hash, ${sql.raw(String(i))} as g, r.code from (${g.refusals!.among(subjects)}) r`),
          sql` union all `,
        );
      },
      error: (g, code) => this.#guards[g]!.refusals!.error(code),
    };
    this.#creator = new KeyCreator({ db: deps.db, provider: deps.provider, audit: deps.audit, guards, now: this.#now });
  }

  /**
   * Adds a check to every key creation (the erasure engine: no new key while the
   * subject's erasure is open, nor for a subject it erased until an admin reinstates it).
   * `refusals` is the same check in SQL, for the group-committed creation's one
   * statement; without it creations take the head's lock in a transaction each batch.
   */
  guardCreation(guard: KeyCreationGuard, refusals?: KeyCreationRefusals): void {
    this.#guards.push({ check: guard, refusals });
  }

  /**
   * Why no key would be created now for each of these subjects: the refusal (a
   * LetheError) a creation guard throws, by the hex of the subject's keyed hash;
   * subjects a key would be created for are absent. The guards run as they do before an
   * insert, in one transaction that inserts nothing (a segment registration tells an
   * erased subject's entries from a destroyed key's).
   */
  async creationRefusals(subjectHashes: readonly Uint8Array[]): Promise<Map<string, LetheError>> {
    const refusals = new Map<string, LetheError>();
    const unique = new Map(subjectHashes.map((h) => [hashHex(h), h]));
    if (unique.size === 0 || this.#guards.length === 0) return refusals;
    await this.#d.db.transaction(async (tx) => {
      for (const [hex, subjectHash] of unique) {
        const refusal = await this.#refusal(tx, subjectHash);
        if (refusal) refusals.set(hex, refusal);
      }
    });
    return refusals;
  }

  /** The refusal a creation guard answers for the subject now, in `tx` (undefined: a key would be created). */
  async #refusal(tx: Transaction, subjectHash: Uint8Array): Promise<LetheError | undefined> {
    try {
      for (const guard of this.#guards) await guard.check(tx, subjectHash);
    } catch (e) {
      if (!isLetheError(e)) throw e; // a guard refuses with a LetheError; anything else is a failure
      return e;
    }
    return undefined;
  }

  /** PUT /v1/subjects/{subject}/key: the subject's live key, created when there is none. */
  async ensureKey(subject: string, actor: string): Promise<SubjectKeyInfo> {
    const subjectHash = this.#d.hasher.hash(subject);
    if (this.#d.cache.has(hashHex(subjectHash))) {
      // its DEK is cached here, so it has a key: look it up (concurrent look-ups share one statement)
      const found = await this.#creator.lookup(subjectHash);
      if (found && 'refusal' in found) throw found.refusal;
      if (found) return { keyId: found.row.keyId, state: found.row.state, createdAt: found.row.createdAt, created: false };
    }
    // Otherwise straight to the creation group commit: its one statement answers a key the
    // subject has (`existing`) or a guard's refusal, so a new subject costs one statement
    // (shared with the batch) instead of a look-up and then the creation. An existing
    // subject not cached here costs a DEK wrapped for nothing (one provider call).
    const [outcome] = await this.#creator.create([{ subjectHash, actor }], { keepDek: false });
    if (outcome!.kind === 'refused') throw outcome!.refusal;
    if (outcome!.kind === 'existing') return { keyId: outcome!.row.keyId, state: outcome!.row.state, createdAt: outcome!.row.createdAt, created: false };
    this.#d.metrics.keysCreated.inc();
    return { keyId: outcome!.keyId, state: 'active', createdAt: outcome!.createdAt, created: true };
  }

  /**
   * POST /v1/keys/batch: a key for each subject that has none (for imports), in one
   * call — the subjects' live keys and refusals read in one query, the new keys'
   * DEKs wrapped, then committed by the creation group commit (a statement per
   * 2,000 keys, their `key.create` audit rows chained in it). Idempotent: a subject
   * with a live active key answers it (`existing`); one whose key is fenced, or that
   * a creation guard refuses (erased, or an erasure open), answers its refusal. No
   * DEK leaves: they are zeroed once committed, and not cached. Subjects must be
   * distinct, valid subject ids, 1 to MAX_BULK_SUBJECTS of them.
   */
  async ensureKeys(subjects: readonly string[], actor: string): Promise<BulkKeyResult[]> {
    if (subjects.length === 0) throw new LetheError('validation_failed', 'subjects: at least one subject');
    if (subjects.length > MAX_BULK_SUBJECTS) throw new LetheError('payload_too_large', `subjects: at most ${MAX_BULK_SUBJECTS} subjects per request (got ${subjects.length})`);
    const seen = new Set<string>();
    subjects.forEach((subject, i) => {
      try {
        assertSubjectId(subject);
      } catch (e) {
        throw new LetheError('validation_failed', `subjects.${i}: ${(e as Error).message}`);
      }
      if (seen.has(subject)) throw new LetheError('validation_failed', `subjects.${i}: duplicate subject (each subject at most once per request)`);
      seen.add(subject);
    });
    const hashes = subjects.map((s) => this.#d.hasher.hash(s));
    const known = await this.#creator.survey(hashes);
    const toCreate = hashes.flatMap((subjectHash, i) => (known.has(hashHex(subjectHash)) ? [] : [{ i, subjectHash }]));
    const made = await this.#creator.create(
      toCreate.map((x) => ({ subjectHash: x.subjectHash, actor })),
      { keepDek: false },
    );
    const outcomes = new Map<number, CreationOutcome>(toCreate.map((x, n) => [x.i, made[n]!]));
    this.#d.metrics.keysCreated.inc(made.filter((o) => o.kind === 'created').length);
    return subjects.map((subject, i): BulkKeyResult => {
      const fromSurvey = known.get(hashHex(hashes[i]!));
      const outcome: CreationOutcome = outcomes.get(i) ?? (fromSurvey && 'row' in fromSurvey ? { kind: 'existing', row: fromSurvey.row } : { kind: 'refused', refusal: (fromSurvey as { refusal: LetheError }).refusal });
      if (outcome.kind === 'refused') return { subject, status: 'refused', refusal: outcome.refusal };
      if (outcome.kind === 'created') return { subject, status: 'created', keyId: outcome.keyId, createdAt: outcome.createdAt };
      if (outcome.row.state === 'fenced') return { subject, status: 'refused', refusal: fencedRefusal() };
      return { subject, status: 'existing', keyId: outcome.row.keyId, createdAt: outcome.row.createdAt };
    });
  }

  /**
   * Runs `fn` after every release of one of the subject's leases, before the release
   * answers (the erasure engine: a drain waiting on it looks again now). `fn` reports
   * its own failures: the release is recorded whatever it does.
   */
  onLeaseReleased(fn: (subjectHash: Uint8Array) => Promise<void>): void {
    this.#onRelease.push(fn);
  }

  /**
   * DELETE /v1/subjects/{subject}/key/lease/{leaseId}: the writer is done with the
   * lease. Recorded as a `key.lease.release` audit row on the lease's key — the
   * subject's live key, or one of its keys destroyed within the day (an erasure
   * waiting for the lease) — so the key's outstanding leases no longer count it.
   * Idempotent. `not_found` for a lease not handed out for this subject within the
   * last day (leases live at most a day).
   */
  async releaseLease(subject: string, leaseId: string, actor: string): Promise<LeaseRelease> {
    const subjectHash = this.#d.hasher.hash(subject);
    const lease = await findLease(this.#d.db, subjectHash, leaseId);
    if (!lease) throw new LetheError('not_found', 'no such lease for this subject (a lease is known for a day after it was handed out)');
    let outcome: LeaseRelease['outcome'];
    if (lease.released) outcome = 'already_released';
    else if (lease.expiresAt.getTime() <= this.#now().getTime()) outcome = 'expired';
    else outcome = (await recordRelease(this.#d.db, this.#d.audit, { keyId: lease.keyId, subjectHash, leaseId, actor })) ? 'released' : 'already_released';
    // told even when nothing was recorded now: a wake lost after the first release is made again by a retry
    await Promise.all(this.#onRelease.map((fn) => fn(subjectHash)));
    return { keyId: lease.keyId, outcome };
  }

  /** What became of the key's leases of the last day: how many, how many released, and the latest outstanding expiry. */
  leases(keyId: string): Promise<LeaseSummary> {
    return leaseSummary(this.#d.db, keyId);
  }

  /** Hands out the subject's DEK for the lease TTL, creating the key when needed. */
  async lease(subject: string, actor: string): Promise<Lease> {
    const subjectHash = this.#d.hasher.hash(subject);
    const subjectHex = hashHex(subjectHash);
    const { cache, metrics } = this.#d;
    for (let attempt = 0; attempt < 3; attempt++) {
      let current = cache.get(subjectHex);
      metrics.dekCacheLookups.inc({ result: current ? 'hit' : 'miss' });
      if (!current) current = await this.#loadOrCreate(subjectHash, subjectHex, actor);
      const leaseId = newId('lease');
      const expiresAt = new Date(this.#now().getTime() + this.#d.leaseTtlSeconds * 1000);
      let outcome;
      try {
        outcome = await this.#leases.record({ keyId: current.keyId, subjectHash, leaseId, expiresAt, actor });
      } catch (e) {
        zeroize(current.dek);
        throw e;
      }
      if (outcome === 'ok') {
        metrics.leases.inc({ outcome: 'granted' });
        return { keyId: current.keyId, dek: current.dek, leaseId, expiresAt };
      }
      zeroize(current.dek);
      if (cache.dropKey(current.keyId)) metrics.dekCacheInvalidations.inc({ source: 'lease-check' });
      metrics.dekCacheEntries.set(cache.size);
      if (outcome === 'fenced') {
        if (attempt < 2 && (await this.awaitRekey(subjectHash))) continue;
        metrics.leases.inc({ outcome: 'fenced' });
        throw new LetheError('erasure_in_progress', 'the subject key is fenced: the subject is being erased, or re-keyed for a moment while some of its entries are forgotten; no new leases are handed out until then');
      }
      // 'gone': the cached key was destroyed meanwhile; look again.
    }
    throw new LetheError('unavailable', 'the subject key changed repeatedly during the lease; try again');
  }

  /**
   * The subject's current key and DEK for writing (created when needed), without a
   * lease: for the service's own encryption. Caller zeroes the DEK.
   */
  async writingKey(subject: string, actor: string): Promise<{ keyId: string; dek: Uint8Array; subjectHash: Uint8Array }> {
    const subjectHash = this.#d.hasher.hash(subject);
    const subjectHex = hashHex(subjectHash);
    const cached = this.#d.cache.get(subjectHex);
    this.#d.metrics.dekCacheLookups.inc({ result: cached ? 'hit' : 'miss' });
    const current = cached ?? (await this.#loadOrCreate(subjectHash, subjectHex, actor));
    return { ...current, subjectHash };
  }

  /** Drops a cached DEK this replica found stale (its key was destroyed elsewhere). */
  invalidate(keyId: string): void {
    if (this.#d.cache.dropKey(keyId)) this.#d.metrics.dekCacheInvalidations.inc({ source: 'lease-check' });
    this.#d.metrics.dekCacheEntries.set(this.#d.cache.size);
  }

  /** The keyed hash that names the subject in the database. */
  subjectHash(subject: string): Uint8Array {
    return this.#d.hasher.hash(subject);
  }

  /** Whether the subject has a live key, had one destroyed, or was never seen. */
  subjectStatus(subject: string): Promise<SubjectStatus> {
    return this.statusOf(this.#d.hasher.hash(subject));
  }

  /** subjectStatus for a subject known by its keyed hash. */
  async statusOf(subjectHash: Uint8Array): Promise<SubjectStatus> {
    const row = await this.#find(subjectHash);
    if (row) return { subjectHash, key: { keyId: row.keyId, state: row.state }, erased: false };
    const [destroyed] = await this.#d.db
      .select({ keyId: destructionLedger.keyId })
      .from(destructionLedger)
      .where(eq(destructionLedger.subjectHash, subjectHash))
      .limit(1);
    return { subjectHash, erased: destroyed !== undefined };
  }

  /** The DEK of a live key by id (for services that decrypt: log, artifacts). Caller zeroes. */
  async dekFor(keyId: string): Promise<{ dek: Uint8Array; state: 'active' | 'fenced' }> {
    const [row] = await this.#d.db.select().from(subjectKeys).where(eq(subjectKeys.keyId, keyId));
    if (!row) {
      const destroyed = await this.#d.destructions.get(keyId);
      if (destroyed) throw new LetheError('key_destroyed', 'the key was destroyed');
      throw new LetheError('not_found', 'no such key');
    }
    return { dek: await this.#unwrapRow(row), state: row.state };
  }

  /**
   * The DEKs of the live keys among `keyIds`, one query for all (keys not live are
   * absent from the answer). The caller zeroes every DEK.
   */
  async deksFor(keyIds: readonly string[]): Promise<Map<string, Uint8Array>> {
    const out = new Map<string, Uint8Array>();
    const unique = [...new Set(keyIds)];
    if (unique.length === 0) return out;
    const rows = await this.#d.db.select().from(subjectKeys).where(inArray(subjectKeys.keyId, unique));
    try {
      for (const row of rows) {
        // the row says the key is live; the cache, when it holds this very key, saves the unwrap
        const cached = this.#d.cache.get(hashHex(row.subjectHash));
        if (cached && cached.keyId === row.keyId) out.set(row.keyId, cached.dek);
        else {
          if (cached) zeroize(cached.dek);
          out.set(row.keyId, await this.#unwrapRow(row));
        }
      }
    } catch (e) {
      for (const dek of out.values()) zeroize(dek);
      if (isLetheError(e, 'key_destroyed')) return this.deksFor(unique); // destroyed mid-read: look again
      throw e;
    }
    return out;
  }

  /**
   * Destroys a key: removes its wrapped DEK row, writes the destruction ledger and
   * the audit row in the same transaction, and tells every replica to drop it.
   * Idempotent: destroying a destroyed key returns the original destruction.
   */
  async destroyKey(keyId: string, options: { reason: string; actor: string }): Promise<Destruction> {
    const result = await destroySubjectKey(this.#d, keyId, options);
    this.dropCached(keyId);
    if (result.destroyedNow) this.#d.metrics.keysDestroyed.inc();
    return result;
  }

  /**
   * Replaces a subject's key with a new one in one transaction: the old key is
   * destroyed (ledger, audit, notification, as destroyKey), the new key — whose DEK
   * the caller already used to re-encrypt what survives — becomes the subject's live
   * key, and `migrate` moves the caller's records onto it inside the same
   * transaction. The old key may be fenced (the caller fences it first). A new key
   * meant to be active is refused (conflict, nothing changed) while a creation guard
   * refuses the subject a key: an erasure of the subject requested while the caller
   * held the fence takes the old key over.
   */
  async replaceKey(oldKeyId: string, options: Replacement): Promise<Destruction> {
    // an erasure of the subject requested while the caller held the old key fenced counts on that key:
    // no active key replaces it (a creation guard refuses the subject a key now)
    const refuseIf = async (tx: Transaction, subjectHash: Uint8Array) => (await this.#refusal(tx, subjectHash)) !== undefined;
    const result = await replaceSubjectKey(this.#d, oldKeyId, { ...options, refuseIf });
    this.dropCached(oldKeyId);
    this.#d.metrics.keysDestroyed.inc();
    this.#d.metrics.keysCreated.inc();
    return result;
  }

  /** Drops this replica's cached DEK of `keyId` (other replicas drop theirs on the key's notification). */
  dropCached(keyId: string): void {
    if (this.#d.cache.dropKey(keyId)) this.#d.metrics.dekCacheInvalidations.inc({ source: 'local' });
    this.#d.metrics.dekCacheEntries.set(this.#d.cache.size);
  }

  /** Blocks new leases for the key (the erasure engine's fence step). */
  fenceKey(keyId: string, actor: string): Promise<void> {
    return this.#transition(keyId, 'fenced', actor);
  }

  /**
   * Lifts a fence the caller set (a re-key that gave up) — unless a creation guard
   * refuses the subject a key now: an erasure of the subject requested meanwhile found
   * the key fenced and counts on it, so it stays fenced.
   */
  async unfenceKey(keyId: string, actor: string): Promise<void> {
    await this.#d.db.transaction(async (tx) => {
      const [row] = await tx.select({ subjectHash: subjectKeys.subjectHash }).from(subjectKeys).where(eq(subjectKeys.keyId, keyId)).for('update');
      if (row && (await this.#refusal(tx, row.subjectHash))) return;
      await this.#transitionWithin(tx, keyId, 'active', actor);
    });
    this.dropCached(keyId);
  }

  /** The state of each key id (subject DEKs and artifact-version keys alike), in one round trip. */
  async validity(keyIds: readonly string[]): Promise<Record<string, Validity>> {
    if (keyIds.length > MAX_VALIDITY_IDS) throw new LetheError('validation_failed', `keyIds: at most ${MAX_VALIDITY_IDS} ids per request`);
    const unique = [...new Set(keyIds)];
    const out: Record<string, Validity> = {};
    if (unique.length === 0) return out;
    const rows = await queryRows<{ id: string; state: Validity }>(
      this.#d.db,
      sql`select v.id,
                 case when sk.key_id is not null or ak.key_id is not null then 'active'
                      when dl.key_id is not null and dl.durable_at is not null then 'destroyed'
                      when dl.key_id is not null then 'destruction_pending'
                      else 'unknown' end as state
            from json_array_elements_text(${JSON.stringify(unique)}::json) as v(id)
            left join subject_keys sk on sk.key_id = v.id
            left join artifact_keys ak on ak.key_id = v.id
            left join destruction_ledger dl on dl.key_id = v.id`,
    );
    for (const r of rows) out[r.id] = r.state;
    return out;
  }

  /**
   * After a refusal because the subject's key was fenced or replaced: waits out a
   * forget's re-key (the key fenced with no erasure of the subject open) for up to
   * `timeoutMs`. True when the subject can be written again (an active key, or none
   * yet); false while an erasure of the subject holds the fence, or after the wait.
   */
  async awaitRekey(subjectHash: Uint8Array, timeoutMs = REKEY_WAIT_MS): Promise<boolean> {
    const until = Date.now() + timeoutMs;
    for (let pause = 10; ; pause = Math.min(pause * 2, 200)) {
      const state = await this.#d.db.transaction(async (tx) => {
        if (await this.#refusal(tx, subjectHash)) return 'refused';
        const [row] = await tx.select({ state: subjectKeys.state }).from(subjectKeys).where(eq(subjectKeys.subjectHash, subjectHash));
        return row?.state ?? 'none';
      });
      if (state === 'refused') return false;
      if (state !== 'fenced') return true;
      if (Date.now() + pause > until) return false;
      await new Promise((r) => setTimeout(r, pause));
    }
  }

  /** The subject's live key without creating one, or undefined. */
  findKey(subject: string): Promise<LiveKey | undefined> {
    return this.liveKeyOf(this.#d.hasher.hash(subject));
  }

  /** findKey for a subject known by its keyed hash (a subject has at most one live key). */
  async liveKeyOf(subjectHash: Uint8Array): Promise<LiveKey | undefined> {
    const row = await this.#find(subjectHash);
    return row ? { keyId: row.keyId, state: row.state } : undefined;
  }

  /** liveKeyOf for many subjects in one query: by the hex of each keyed hash that has a live key (the others are absent). */
  async liveKeysOf(subjectHashes: readonly Uint8Array[]): Promise<Map<string, LiveKey>> {
    if (subjectHashes.length === 0) return new Map();
    const rows = await this.#d.db
      .select({ subjectHash: subjectKeys.subjectHash, keyId: subjectKeys.keyId, state: subjectKeys.state })
      .from(subjectKeys)
      .where(inArray(subjectKeys.subjectHash, [...subjectHashes]));
    return new Map(rows.map((r) => [hashHex(r.subjectHash), { keyId: r.keyId, state: r.state }]));
  }

  /** The state of each live key among `keyIds` (destroyed and unknown keys are absent). */
  async states(keyIds: readonly string[]): Promise<Map<string, LiveKey['state']>> {
    const unique = [...new Set(keyIds)];
    if (unique.length === 0) return new Map();
    const rows = await this.#d.db.select({ keyId: subjectKeys.keyId, state: subjectKeys.state }).from(subjectKeys).where(inArray(subjectKeys.keyId, unique));
    return new Map(rows.map((r) => [r.keyId, r.state]));
  }

  /**
   * Reserves `count` log sequence numbers under a live, active key: the first one, or
   * undefined when the key is fenced or gone (sequence numbers are ordered per key,
   * not dense).
   */
  async reserveSeqs(keyId: string, count: number): Promise<number | undefined> {
    const [reserved] = await queryRows<{ first: number }>(
      this.#d.db,
      sql`update subject_keys set next_seq = next_seq + ${count}, updated_at = now()
           where key_id = ${keyId} and state = 'active' returning next_seq - ${count} as first`,
    );
    return reserved ? Number(reserved.first) : undefined;
  }

  async #find(subjectHash: Uint8Array): Promise<SubjectKeyRow | undefined> {
    const [row] = await this.#d.db.select().from(subjectKeys).where(eq(subjectKeys.subjectHash, subjectHash));
    return row;
  }

  async #transition(keyId: string, to: KeyState, actor: string): Promise<void> {
    await this.#d.db.transaction((tx) => this.#transitionWithin(tx, keyId, to, actor));
    this.dropCached(keyId);
  }

  /**
   * Fences the subject's live key inside the caller's transaction (answers its id, or
   * undefined when the subject has none): the erasure request fences the key in
   * the transaction that records the erasure, so no erasure is ever open with its key
   * still leasable (a connection lost after the commit cannot split the two). Other
   * replicas drop the key on commit (the notification); the caller drops this
   * replica's cached copy with `dropCached` after the commit.
   */
  async fenceSubjectWithin(tx: Transaction, subjectHash: Uint8Array, actor: string): Promise<string | undefined> {
    // the subject's live key as it is now, locked: a key re-keyed or destroyed since the caller looked is not the one fenced
    const [row] = await tx
      .select({ keyId: subjectKeys.keyId, state: subjectKeys.state })
      .from(subjectKeys)
      .where(eq(subjectKeys.subjectHash, subjectHash))
      .for('update');
    if (!row) return undefined;
    if (row.state === 'active') await this.#transitionWithin(tx, row.keyId, 'fenced', actor);
    return row.keyId;
  }

  async #transitionWithin(tx: Transaction, keyId: string, to: KeyState, actor: string): Promise<void> {
    const [row] = await tx.select().from(subjectKeys).where(eq(subjectKeys.keyId, keyId)).for('update');
    if (!row) {
      const [prior] = await tx.select().from(destructionLedger).where(eq(destructionLedger.keyId, keyId));
      if (prior) assertKeyTransition('destroyed', to);
      throw new LetheError('not_found', 'no such key');
    }
    if (row.state === to) return;
    assertKeyTransition(row.state, to);
    await tx
      .update(subjectKeys)
      .set({ state: to as 'active' | 'fenced', updatedAt: this.#now() })
      .where(eq(subjectKeys.keyId, keyId));
    await this.#d.audit.append(tx, [{ actor, action: to === 'fenced' ? 'key.fence' : 'key.unfence', keyId, subjectHash: row.subjectHash }]);
    await notify(tx, { t: 'key', keyId });
  }

  async #loadOrCreate(subjectHash: Uint8Array, subjectHex: string, actor: string): Promise<{ keyId: string; dek: Uint8Array }> {
    const found = await this.#creator.lookup(subjectHash);
    if (found && 'refusal' in found) throw found.refusal;
    let row: LiveKeyRow | undefined = found?.row;
    let keyId: string;
    let dek: Uint8Array;
    if (!row) {
      const [outcome] = await this.#creator.create([{ subjectHash, actor }], { keepDek: true });
      if (outcome!.kind === 'refused') throw outcome!.refusal;
      if (outcome!.kind === 'existing') row = outcome!.row; // another request created it first: use that one
      else this.#d.metrics.keysCreated.inc();
      keyId = outcome!.kind === 'created' ? outcome!.keyId : outcome!.row.keyId;
      dek = outcome!.kind === 'created' ? outcome!.dek! : new Uint8Array(0);
    }
    if (row) {
      if (row.state === 'fenced') {
        this.#d.metrics.leases.inc({ outcome: 'fenced' });
        throw fencedRefusal();
      }
      keyId = row.keyId;
      dek = await this.#unwrapRow({ keyId: row.keyId, epoch: row.epoch, wrappedDek: row.wrappedDek });
    }
    this.#d.cache.set(subjectHex, keyId!, dek!);
    this.#d.metrics.dekCacheEntries.set(this.#d.cache.size);
    return { keyId: keyId!, dek: dek! };
  }

  /** Unwraps a row's DEK; re-reads once if a rotation moved the row meanwhile. */
  #unwrapRow(row: { keyId: string; epoch: number; wrappedDek: Uint8Array }): Promise<Uint8Array> {
    return unwrapCurrent(
      this.#d.db,
      this.#d.provider,
      row,
      'subject',
      async () => (await this.#d.db.select().from(subjectKeys).where(eq(subjectKeys.keyId, row.keyId)))[0],
      () => new LetheError('key_destroyed', 'the key was destroyed'),
    );
  }
}

/** base64url of a DEK for the wire; zeroes nothing (the caller owns the buffer). */
export function encodeDek(dek: Uint8Array): string {
  return toBase64Url(dek);
}
