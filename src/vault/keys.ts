/**
 * Subject keys: creation, leases, fencing, destruction and validity — the façade over
 * key-ensure.ts, key-lease.ts, key-deks.ts, key-reads.ts and key-fence.ts (types in
 * key-types.ts).
 *
 * - A subject has at most one live key (unique subject_hash). A destroyed key's row
 *   is removed and a ledger row written in the same transaction; the subject's next
 *   key is a new key with a new id.
 * - The plaintext DEK exists only in this process's memory (cache, request), is
 *   handed out only in a lease, and is zeroed when dropped.
 */
import { sql } from 'drizzle-orm';
import { toBase64Url } from '../crypto/index.js';
import type { Transaction } from '../db/client.js';
import { isLetheError, type LetheError } from '../errors.js';
import { type CreationGuards, KeyCreator, NO_REFUSALS } from './creation.js';
import { destroySubjectKey, type Destruction, type Replacement, replaceSubjectKey } from './key-destruction.js';
import { dekFor, deksFor, deksOfRows, type SubjectKeyWrap } from './key-deks.js';
import { ensureKey, ensureKeys } from './key-ensure.js';
import { awaitRekey, fenceSubjectWithin, transition, unfenceKey } from './key-fence.js';
import { lease, releaseLease, writingKey } from './key-lease.js';
import { liveKeyOf, liveKeysOf, reserveSeqs, states, statusOf, validity } from './key-reads.js';
import { keysOf, keysOfSubjects, rollHead } from './key-shards.js';
import type {
  BulkKeyResult,
  KeyContext,
  KeyCreationGuard,
  KeyCreationRefusals,
  KeyServiceDeps,
  Lease,
  LeaseRelease,
  LiveKey,
  SubjectKeyInfo,
  SubjectKeyRef,
  SubjectStatus,
  Validity,
} from './key-types.js';
import { SHARD_ENTRIES } from './key-types.js';
import { LeaseRecorder, leaseSummary, type LeaseSummary } from './leases.js';
import { hashHex } from './subjects.js';

export type { Destruction, Replacement } from './key-destruction.js';
export type { LeaseSummary } from './leases.js';
export type { SubjectKeyWrap } from './key-deks.js';
export * from './key-types.js';

export class KeyService {
  readonly #c: KeyContext;
  readonly #guards: Array<{ readonly check: KeyCreationGuard; readonly refusals: KeyCreationRefusals | undefined }> = [];
  readonly #onRelease: Array<(subjectHash: Uint8Array) => Promise<void>> = [];
  readonly #rolling = new Set<string>();
  readonly #shardEntries: number;

  constructor(deps: KeyServiceDeps) {
    const now = deps.now ?? (() => new Date());
    this.#shardEntries = deps.shardEntries ?? SHARD_ENTRIES;
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
    this.#c = {
      d: deps,
      now,
      creator: new KeyCreator({ db: deps.db, provider: deps.provider, audit: deps.audit, guards, now }),
      leases: new LeaseRecorder(deps.db, deps.audit),
      onRelease: this.#onRelease,
      refusal: (tx, subjectHash) => this.#refusal(tx, subjectHash),
      dropCached: (keyId) => this.dropCached(keyId),
    };
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
   * Why no key would be created now for each of these subjects, by the hex of the
   * subject's keyed hash (absent: a key would be created). The guards run as before an
   * insert, in one transaction that inserts nothing.
   */
  async creationRefusals(subjectHashes: readonly Uint8Array[]): Promise<Map<string, LetheError>> {
    const refusals = new Map<string, LetheError>();
    const unique = new Map(subjectHashes.map((h) => [hashHex(h), h]));
    if (unique.size === 0 || this.#guards.length === 0) return refusals;
    await this.#c.d.db.transaction(async (tx) => {
      for (const [hex, subjectHash] of unique) {
        const refusal = await this.#refusal(tx, subjectHash);
        if (refusal) refusals.set(hex, refusal);
      }
    });
    return refusals;
  }

  async #refusal(tx: Transaction, subjectHash: Uint8Array): Promise<LetheError | undefined> {
    try {
      for (const guard of this.#guards) await guard.check(tx, subjectHash);
    } catch (e) {
      if (!isLetheError(e)) throw e; // a guard refuses with a LetheError; anything else is a failure
      return e;
    }
    return undefined;
  }

  ensureKey = (subject: string, actor: string): Promise<SubjectKeyInfo> => ensureKey(this.#c, subject, actor);
  ensureKeys = (subjects: readonly string[], actor: string): Promise<BulkKeyResult[]> => ensureKeys(this.#c, subjects, actor);

  /** Runs `fn` after every release of one of the subject's leases, before the release answers (a drain waiting on it looks again). */
  onLeaseReleased(fn: (subjectHash: Uint8Array) => Promise<void>): void {
    this.#onRelease.push(fn);
  }

  releaseLease = (subject: string, leaseId: string, actor: string): Promise<LeaseRelease> => releaseLease(this.#c, subject, leaseId, actor);
  leases = (keyId: string): Promise<LeaseSummary> => leaseSummary(this.#c.d.db, keyId);
  lease = (subject: string, actor: string): Promise<Lease> => lease(this.#c, subject, actor);
  writingKey = (subject: string, actor: string): Promise<{ keyId: string; dek: Uint8Array; subjectHash: Uint8Array }> => writingKey(this.#c, subject, actor);

  /** Drops a cached DEK this replica found stale (its key was destroyed elsewhere). */
  invalidate(keyId: string): void {
    if (this.#c.d.cache.dropKey(keyId)) this.#c.d.metrics.dekCacheInvalidations.inc({ source: 'lease-check' });
    this.#c.d.metrics.dekCacheEntries.set(this.#c.d.cache.size);
  }

  /** The keyed hash that names the subject in the database. */
  subjectHash(subject: string): Uint8Array {
    return this.#c.d.hasher.hash(subject);
  }

  subjectStatus = (subject: string): Promise<SubjectStatus> => statusOf(this.#c, this.subjectHash(subject));
  statusOf = (subjectHash: Uint8Array): Promise<SubjectStatus> => statusOf(this.#c, subjectHash);
  dekFor = (keyId: string): Promise<{ dek: Uint8Array; state: 'active' | 'fenced' }> => dekFor(this.#c, keyId);
  deksFor = (keyIds: readonly string[]): Promise<Map<string, Uint8Array>> => deksFor(this.#c, keyIds);

  /** `deksFor` of key rows the caller read itself (joined into its own query): no query unless a rotation moved one. */
  deksOfRows = (rows: readonly SubjectKeyWrap[]): Promise<Map<string, Uint8Array>> => deksOfRows(this.#c, rows);

  /** Destroys a key: row, ledger and audit row in one transaction; every replica drops it. Idempotent. */
  async destroyKey(keyId: string, options: { reason: string; actor: string }): Promise<Destruction> {
    const result = await destroySubjectKey(this.#c.d, keyId, options);
    this.dropCached(keyId);
    if (result.destroyedNow) this.#c.d.metrics.keysDestroyed.inc();
    return result;
  }

  /**
   * Replaces a subject's key in one transaction (key-destruction.ts): the old key
   * destroyed, the new one live, `migrate` moving the caller's records onto it. A new
   * active key is refused while a creation guard refuses the subject a key: an erasure
   * of the subject requested while the caller held the fence takes the old key over.
   */
  async replaceKey(oldKeyId: string, options: Replacement): Promise<Destruction> {
    const refuseIf = async (tx: Transaction, subjectHash: Uint8Array) => (await this.#refusal(tx, subjectHash)) !== undefined;
    const result = await replaceSubjectKey(this.#c.d, oldKeyId, { ...options, refuseIf });
    this.dropCached(oldKeyId);
    this.#c.d.metrics.keysDestroyed.inc();
    this.#c.d.metrics.keysCreated.inc(1 + (options.shards?.length ?? 0));
    return result;
  }

  /** Drops this replica's cached DEK of `keyId` (other replicas drop theirs on the key's notification). */
  dropCached(keyId: string): void {
    if (this.#c.d.cache.dropKey(keyId)) this.#c.d.metrics.dekCacheInvalidations.inc({ source: 'local' });
    this.#c.d.metrics.dekCacheEntries.set(this.#c.d.cache.size);
  }

  /** Blocks new leases for the key (the erasure engine's fence step). */
  fenceKey = (keyId: string, actor: string): Promise<void> => transition(this.#c, keyId, 'fenced', actor);
  unfenceKey = (keyId: string, actor: string): Promise<void> => unfenceKey(this.#c, keyId, actor);
  fenceSubjectWithin = (tx: Transaction, subjectHash: Uint8Array, actor: string): Promise<string | undefined> =>
    fenceSubjectWithin(this.#c, tx, subjectHash, actor);
  awaitRekey = (subjectHash: Uint8Array, timeoutMs?: number): Promise<boolean> => awaitRekey(this.#c, subjectHash, timeoutMs);
  validity = (keyIds: readonly string[]): Promise<Record<string, Validity>> => validity(this.#c, keyIds);
  findKey = (subject: string): Promise<LiveKey | undefined> => liveKeyOf(this.#c, this.subjectHash(subject));
  liveKeyOf = (subjectHash: Uint8Array): Promise<LiveKey | undefined> => liveKeyOf(this.#c, subjectHash);
  liveKeysOf = (subjectHashes: readonly Uint8Array[]): Promise<Map<string, LiveKey>> => liveKeysOf(this.#c, subjectHashes);
  states = (keyIds: readonly string[]): Promise<Map<string, LiveKey['state']>> => states(this.#c, keyIds);
  keysOf = (subjectHash: Uint8Array): Promise<SubjectKeyRef[]> => keysOf(this.#c, subjectHash);
  keysOfSubjects = (subjectHashes: readonly Uint8Array[]): Promise<Map<string, SubjectKeyRef[]>> => keysOfSubjects(this.#c, subjectHashes);

  /**
   * Reserves up to `count` sequence numbers under the head `keyId` — no more than it has
   * room for, at least one — (undefined: fenced, gone or no longer the head); a full head
   * is rolled meanwhile.
   */
  async reserveSeqs(keyId: string, count: number): Promise<{ first: number; count: number } | undefined> {
    const reserved = await reserveSeqs(this.#c, keyId, count, this.#shardEntries);
    if (!reserved) return undefined;
    // rolled once a reservation finds it full already — not by the one that fills it, whose writer leases the head next
    if (reserved.sinceHead > this.#shardEntries && !this.#rolling.has(keyId)) {
      this.#rolling.add(keyId);
      // off the append's path: the head stays writable while it rolls, and a failed roll is tried by the next append
      void rollHead(this.#c, keyId, this.#shardEntries)
        .then((made) => {
          if (made) this.#c.d.metrics.keysCreated.inc();
        })
        .catch(() => {})
        .finally(() => this.#rolling.delete(keyId));
    }
    return { first: reserved.first, count: reserved.count };
  }

  /** Rolls the head `keyId` into a shard now if it is full (what reserveSeqs does on its own). */
  rollHead = (keyId: string): Promise<string | undefined> => rollHead(this.#c, keyId, this.#shardEntries);

  /** How many entries a key holds before it is rolled or split (KeyServiceDeps.shardEntries). */
  get shardEntries(): number {
    return this.#shardEntries;
  }
}

/** base64url of a DEK for the wire; zeroes nothing (the caller owns the buffer). */
export function encodeDek(dek: Uint8Array): string {
  return toBase64Url(dek);
}
