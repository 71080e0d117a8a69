/**
 * Opening an erasure: the request's free text (reason, public attributes, the unlearning
 * method) sealed under a fresh erasure key, then in
 * one transaction the `erasures` row, the wrapped erasure key, the first transition, and
 * what the caller must commit with them (a subject's fence and tombstone, the forgotten
 * marks of entries). Both kinds of request open this way (engine.ts, forget.ts).
 */
import { utf8, zeroize } from '../crypto/index.js';
import type { Transaction } from '../db/client.js';
import type { ErasureRow } from '../db/schema.js';
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
  const { versionKeys, records } = res;
  const { erasureId } = opening;
  const { keyId: sealKeyId, key } = versionKeys.fresh();
  try {
    const request = utf8.encode(
      JSON.stringify({ reason: opening.reason, publicAttributes: opening.publicAttributes, unlearningMethod: opening.unlearning?.method ?? null }),
    );
    const sealedRequest = sealWithErasureKey(key, { erasureId, keyId: sealKeyId }, 'request', request);
    const now = new Date();
    return await records.db.transaction(async (tx) => {
      const fresh = await records.insert(tx, {
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
        sealKeyId,
        sealedRequest,
        state: { steps: {}, ...(opening.requestedBy ? { requestedBy: opening.requestedBy } : {}) } satisfies ErasureState,
        notBefore: now,
        createdAt: now,
        updatedAt: now,
      });
      if (!fresh) return false;
      await versionKeys.store(tx, { keyId: sealKeyId, key, artifactId: erasureId, version: 0, purpose: 'erasure' });
      await records.transition(tx, erasureId, null, 'classify', 'pending', transition);
      await within(tx, now);
      return true;
    });
  } finally {
    zeroize(key);
  }
}
