/**
 * Opening an erasure: the request's free text (reason, public attributes, the unlearning
 * method) sealed under a fresh erasure key and the key wrapped (before any transaction), then in
 * one transaction the `erasures` row, the wrapped erasure key, the first transition, and
 * what the caller must commit with them (a subject's fence and tombstone, the forgotten
 * marks of entries). Both kinds of request open this way (engine.ts, forget.ts).
 */
import { utf8, zeroize } from '../crypto/index.js';
import type { Transaction } from '../db/client.js';
import type { ErasureRow } from '../db/schema.js';
import type { WrappedVersionKey } from '../vault/version-keys.js';
import { sealWithErasureKey } from './erasure-key.js';
import type { RequestContext, Unlearning } from './request.js';
import type { ErasureResources } from './resources.js';
import type { ErasureState } from './state.js';

export interface Opening {
  readonly erasureId: string;
  readonly subjectHash: Uint8Array;
  readonly scope: ErasureRow['scope'];
  readonly entryIds?: readonly string[] | undefined;
  /** A supersession's successor entry (inserted by `within`). */
  readonly successorId?: string | undefined;
  readonly legalBasis: string | null;
  /** The request's context (reason category, legal basis, controller, reference): in the clear, never personal data. */
  readonly requestContext?: RequestContext | null | undefined;
  /** Class C's stated unlearning: the bound is stored in the clear, the method (free text) sealed with the reason. */
  readonly unlearning: Unlearning | null;
  /** Sealed under the erasure's own key, never stored in the clear. */
  readonly reason: string | null;
  readonly publicAttributes: readonly string[];
  /** The requesting principal (over HTTP), kept so it can never approve a dismissal of this erasure. */
  readonly requestedBy?: string | undefined;
}

/** An opening made ready outside any transaction: its request sealed and its erasure key wrapped (`commitOpening` stores them). */
export interface PreparedOpening {
  readonly opening: Opening;
  readonly key: WrappedVersionKey;
  readonly sealedRequest: Uint8Array;
}

/** Seals the request's free text under a fresh erasure key and wraps that key; the caller commits or `dropOpening`s it. */
export async function prepareOpening(res: Pick<ErasureResources, 'versionKeys'>, opening: Opening): Promise<PreparedOpening> {
  const { keyId, key } = res.versionKeys.fresh();
  try {
    const request = utf8.encode(
      JSON.stringify({ reason: opening.reason, publicAttributes: opening.publicAttributes, unlearningMethod: opening.unlearning?.method ?? null }),
    );
    const sealedRequest = sealWithErasureKey(key, { erasureId: opening.erasureId, keyId }, 'request', request);
    const wrapped = await res.versionKeys.wrap({ keyId, key, artifactId: opening.erasureId, version: 0, purpose: 'erasure' });
    return { opening, key: wrapped, sealedRequest };
  } catch (e) {
    zeroize(key);
    throw e;
  }
}

/** An opening that will not be committed: its key zeroed. */
export function dropOpening(prepared: PreparedOpening): void {
  zeroize(prepared.key.key);
}

/**
 * Opens the erasure: false when the insert lost to a concurrent open erasure of the
 * subject (the unique open index), and then nothing was written. `within` runs in the
 * transaction after the row is in; what it throws rolls everything back.
 */
export async function openErasure(
  res: Pick<ErasureResources, 'versionKeys' | 'records'>,
  opening: Opening,
  transition: string,
  within: (tx: Transaction, now: Date) => Promise<void>,
): Promise<boolean> {
  return commitOpening(res, await prepareOpening(res, opening), transition, within);
}

/** `openErasure` of a prepared opening (its key zeroed, whatever happens). */
export async function commitOpening(
  res: Pick<ErasureResources, 'versionKeys' | 'records'>,
  prepared: PreparedOpening,
  transition: string,
  within: (tx: Transaction, now: Date) => Promise<void>,
): Promise<boolean> {
  const { versionKeys, records } = res;
  const { opening, key, sealedRequest } = prepared;
  const { erasureId } = opening;
  try {
    const now = new Date();
    return await records.db.transaction(async (tx) => {
      const row = {
        erasureId,
        subjectHash: opening.subjectHash,
        scope: opening.scope,
        entryIds: opening.entryIds ? [...opening.entryIds] : null,
        successorId: opening.successorId ?? null,
        status: 'pending',
        step: 'classify',
        legalBasis: opening.legalBasis,
        requestContext: opening.requestContext ?? null,
        unlearning: opening.unlearning ? { bound: opening.unlearning.bound } : null,
        sealKeyId: key.keyId,
        sealedRequest,
        state: { steps: {}, ...(opening.requestedBy ? { requestedBy: opening.requestedBy } : {}) } satisfies ErasureState,
        notBefore: now,
        createdAt: now,
        updatedAt: now,
      } as const;
      if (!(await records.insert(tx, row, transition))) return false;
      await versionKeys.storeWrapped(tx, key);
      await within(tx, now);
      return true;
    });
  } finally {
    dropOpening(prepared);
  }
}
