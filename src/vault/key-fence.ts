/** Fencing a key (no leases, appends or new keys) and lifting a fence, audited and announced; waiting out a forget's re-key. */
import { and, asc, eq } from 'drizzle-orm';
import type { Transaction } from '../db/client.js';
import { destructionLedger, subjectKeys } from '../db/schema.js';
import { LetheError } from '../errors.js';
import { notify } from './events.js';
import { type KeyContext, REKEY_WAIT_MS } from './key-types.js';
import { assertKeyTransition, type KeyState } from './lifecycle.js';

/**
 * Lifts a fence the caller set (a re-key that gave up) — unless a creation guard
 * refuses the subject a key now: an erasure of the subject requested meanwhile found
 * the key fenced and counts on it, so it stays fenced.
 */
export async function unfenceKey(c: KeyContext, keyId: string, actor: string): Promise<void> {
  await c.d.db.transaction(async (tx) => {
    const [row] = await tx.select({ subjectHash: subjectKeys.subjectHash }).from(subjectKeys).where(eq(subjectKeys.keyId, keyId)).for('update');
    if (row && (await c.refusal(tx, row.subjectHash))) return;
    await transitionWithin(c, tx, keyId, 'active', actor);
  });
  c.dropCached(keyId);
}

/**
 * After a refusal because the subject's key was fenced or replaced: waits out a
 * forget's re-key (the key fenced with no erasure of the subject open) for up to
 * `timeoutMs`. True when the subject can be written again (an active key, or none
 * yet); false while an erasure of the subject holds the fence, or after the wait.
 */
export async function awaitRekey(c: KeyContext, subjectHash: Uint8Array, timeoutMs = REKEY_WAIT_MS): Promise<boolean> {
  const until = Date.now() + timeoutMs;
  for (let pause = 10; ; pause = Math.min(pause * 2, 200)) {
    const state = await c.d.db.transaction(async (tx) => {
      if (await c.refusal(tx, subjectHash)) return 'refused';
      const [row] = await tx
        .select({ state: subjectKeys.state })
        .from(subjectKeys)
        .where(and(eq(subjectKeys.subjectHash, subjectHash), eq(subjectKeys.head, true)));
      return row?.state ?? 'none';
    });
    if (state === 'refused') return false;
    if (state !== 'fenced') return true;
    if (Date.now() + pause > until) return false;
    await new Promise((r) => setTimeout(r, pause));
  }
}

export async function transition(c: KeyContext, keyId: string, to: KeyState, actor: string): Promise<void> {
  await c.d.db.transaction((tx) => transitionWithin(c, tx, keyId, to, actor));
  c.dropCached(keyId);
}

/**
 * Fences the subject's keys inside the caller's transaction — its head and its shards
 * — and answers the head's id, or undefined when the subject has none: the erasure
 * request fences them in the transaction that records the erasure, so no erasure is
 * ever open with a key of the subject still leasable or writable (a connection lost
 * after the commit cannot split the two). Other replicas drop the keys on commit (the
 * notification); the caller drops this replica's cached copies with `dropCached`.
 */
export async function fenceSubjectWithin(c: KeyContext, tx: Transaction, subjectHash: Uint8Array, actor: string): Promise<string | undefined> {
  // the subject's live keys as they are now, locked in key order: a key re-keyed or destroyed since the caller looked is not one fenced.
  // Looked at again until none is active: a key a roll or a re-key committed while this statement waited for its lock is
  // not in its snapshot, and the next statement sees it (once this one holds the locks, no new key can be made past the guards).
  let head: string | undefined;
  for (let round = 0; round < FENCE_ROUNDS; round++) {
    const rows = await tx
      .select({ keyId: subjectKeys.keyId, state: subjectKeys.state, head: subjectKeys.head })
      .from(subjectKeys)
      .where(eq(subjectKeys.subjectHash, subjectHash))
      .orderBy(asc(subjectKeys.keyId))
      .for('update');
    head = rows.find((r) => r.head)?.keyId ?? head;
    const active = rows.filter((r) => r.state === 'active');
    if (active.length === 0) return head;
    for (const row of active) await transitionWithin(c, tx, row.keyId, 'fenced', actor);
  }
  throw new LetheError('unavailable', "the subject's keys kept changing while the erasure fenced them; try again", { retryable: true });
}

/** Times the erasure request looks at the subject's keys again for one made meanwhile. */
const FENCE_ROUNDS = 5;

export async function transitionWithin(c: KeyContext, tx: Transaction, keyId: string, to: KeyState, actor: string): Promise<void> {
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
    .set({ state: to as 'active' | 'fenced', updatedAt: c.now() })
    .where(eq(subjectKeys.keyId, keyId));
  await c.d.audit.append(tx, [{ actor, action: to === 'fenced' ? 'key.fence' : 'key.unfence', keyId, subjectHash: row.subjectHash }]);
  await notify(tx, { t: 'key', keyId });
}
