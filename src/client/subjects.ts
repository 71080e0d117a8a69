/**
 * Subject keys through the `Lethe` facade (lethe.ts): creating them (one, or many at
 * once), leasing a subject's DEK and releasing the lease, reinstating an erased subject,
 * and the backup role's key validity. Leases and key creations are retried across a
 * forget's re-key (retry.ts).
 */
import { fromBase64Url } from '../crypto/index.js';
import { LetheError } from '../errors.js';
import type { KeyLeaseAnswer, KeyValidity, KeyValidityState, SubjectKey } from '../wire/keys.js';
import { type RetryOptions, retryPolicy, withRetries } from './retry.js';
import { type RoleCalls, seg } from './roles.js';

/** A lease as the wire has it (src/wire/keys.ts), its DEK decoded. */
export type KeyLease = Readonly<Omit<KeyLeaseAnswer, 'dek'>> & {
  /** The 32-byte DEK: zero it when done (`zeroize`). */
  readonly dek: Uint8Array;
};

/** What POST /v1/keys/batch answers for one subject (`ensureKeys`), in the order asked. */
export type KeyBatchItem =
  | { readonly subject: string; readonly status: 'created' | 'existing'; readonly keyId: string; readonly createdAt: string }
  | {
      readonly subject: string;
      readonly status: 'refused';
      /** Why: 410 `subject_erased`, 409 `erasure_in_progress` (an erasure open, or the key fenced). */
      readonly problem: { readonly code: string; readonly status: number; readonly title: string; readonly detail: string; readonly type: string };
    };

export interface KeyBatch {
  readonly created: number;
  readonly existing: number;
  readonly refused: number;
  readonly keys: readonly KeyBatchItem[];
}

/** At most this many subjects in one POST /v1/keys/batch (`ensureKeys` sends more in several). */
export const KEY_BATCH_MAX_SUBJECTS = 10_000;

/** Subject keys, their leases, and reinstating a subject after its erasure. */
export class Subjects {
  readonly #calls: RoleCalls;
  readonly #retry: Required<RetryOptions>;

  constructor(calls: RoleCalls, retry: RetryOptions = {}) {
    this.#calls = calls;
    this.#retry = retryPolicy(retry);
  }

  /** Creates the subject's key, or answers the live one (retried across a forget's re-key, like `lease`). */
  ensureKey(subject: string): Promise<SubjectKey> {
    return withRetries(this.#retry, () => this.#calls.json<SubjectKey>('writer', 'PUT', `/v1/subjects/${seg(subject)}/key`));
  }

  /**
   * Creates keys for many subjects at once (imports): POST /v1/keys/batch, 10,000
   * subjects per request (more are sent in several requests, one after the other).
   * Idempotent: a subject with a live key answers it (`existing`); a refused subject
   * (erased, or being erased) answers its problem without failing the others. Subjects
   * must be distinct. Answers key ids, never DEKs.
   */
  async ensureKeys(subjects: readonly string[]): Promise<KeyBatch> {
    if (subjects.length === 0) throw new LetheError('validation_failed', 'subjects: at least one subject');
    const out = { created: 0, existing: 0, refused: 0, keys: [] as KeyBatchItem[] };
    for (let at = 0; at < subjects.length; at += KEY_BATCH_MAX_SUBJECTS) {
      const part = await this.#calls.json<KeyBatch>('writer', 'POST', '/v1/keys/batch', {
        body: { subjects: subjects.slice(at, at + KEY_BATCH_MAX_SUBJECTS) },
      });
      out.created += part.created;
      out.existing += part.existing;
      out.refused += part.refused;
      out.keys.push(...part.keys);
    }
    return out;
  }

  /**
   * Leases the subject's DEK (the writer does this itself): zero `dek` when done, and
   * release the lease. Retried while a forget re-keys the subject (a retryable 409).
   */
  async lease(subject: string): Promise<KeyLease> {
    const body = await withRetries(this.#retry, () => this.#calls.json<KeyLeaseAnswer>('writer', 'POST', `/v1/subjects/${seg(subject)}/key/lease`));
    const dek = fromBase64Url(body.dek);
    if (!dek || dek.length !== 32) throw new LetheError('internal', 'the service returned a malformed lease');
    return { keyId: body.keyId, leaseId: body.leaseId, expiresAt: body.expiresAt, dek };
  }

  /** Ends a lease before it expires (idempotent), so an erasure need not wait for it. */
  releaseLease(subject: string, leaseId: string): Promise<void> {
    return this.#calls.delete('writer', `/v1/subjects/${seg(subject)}/key/lease/${seg(leaseId)}`);
  }

  /** Admin: lets an erased subject be written again (audited); 409 conflict when it is not erased. */
  reinstate(subject: string, reason: string): Promise<{ subject: string; reinstated: true }> {
    return this.#calls.json('admin', 'POST', `/v1/subjects/${seg(subject)}/reinstate`, { body: { reason } });
  }

  /** Backup role: the state of each key id (active, destruction_pending, destroyed, unknown). */
  async validity(keyIds: readonly string[]): Promise<Record<string, KeyValidityState>> {
    return (await this.#calls.json<KeyValidity>('backup', 'POST', '/v1/keys/validity', { body: { keyIds } })).keys;
  }
}
