/** Handing out a subject's DEK: a lease (audited, for the TTL), the service's own writing key, releasing a lease. */
import { zeroize } from '../crypto/index.js';
import { LetheError } from '../errors.js';
import { newId } from '../ids.js';
import type { LiveKeyRow } from './creation.js';
import { unwrapRow } from './key-deks.js';
import { awaitRekey } from './key-fence.js';
import { fencedRefusal, type KeyContext, type Lease, type LeaseRelease, MAX_KEY_MOVES } from './key-types.js';
import { findLease, recordRelease } from './leases.js';
import { hashHex } from './subjects.js';

/** Hands out the subject's DEK for the lease TTL, creating the key when needed. */
export async function lease(c: KeyContext, subject: string, actor: string): Promise<Lease> {
  const subjectHash = c.d.hasher.hash(subject);
  const subjectHex = hashHex(subjectHash);
  const { cache, metrics } = c.d;
  // a head rolled into a shard meanwhile ('gone': key-shards.ts) is a move, not a failed try
  for (let attempt = 0, moves = 0; attempt < 3; attempt++) {
    let current = cache.get(subjectHex);
    metrics.dekCacheLookups.inc({ result: current ? 'hit' : 'miss' });
    if (!current) current = await loadOrCreate(c, subjectHash, subjectHex, actor);
    const leaseId = newId('lease');
    const expiresAt = new Date(c.now().getTime() + c.d.leaseTtlSeconds * 1000);
    let outcome;
    try {
      outcome = await c.leases.record({ keyId: current.keyId, subjectHash, leaseId, expiresAt, actor });
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
      if (attempt < 2 && (await awaitRekey(c, subjectHash))) continue;
      metrics.leases.inc({ outcome: 'fenced' });
      throw new LetheError(
        'erasure_in_progress',
        'the subject key is fenced: the subject is being erased, or re-keyed for a moment while some of its entries are forgotten; no new leases are handed out until then',
      );
    }
    // 'gone': the cached key was destroyed or rolled meanwhile; look again.
    if (++moves <= MAX_KEY_MOVES) attempt--;
  }
  throw new LetheError('unavailable', 'the subject key changed repeatedly during the lease; try again');
}

/**
 * The subject's current key and DEK for writing (created when needed), without a
 * lease: for the service's own encryption. Caller zeroes the DEK.
 */
export async function writingKey(c: KeyContext, subject: string, actor: string): Promise<{ keyId: string; dek: Uint8Array; subjectHash: Uint8Array }> {
  const subjectHash = c.d.hasher.hash(subject);
  const subjectHex = hashHex(subjectHash);
  const cached = c.d.cache.get(subjectHex);
  c.d.metrics.dekCacheLookups.inc({ result: cached ? 'hit' : 'miss' });
  const current = cached ?? (await loadOrCreate(c, subjectHash, subjectHex, actor));
  return { ...current, subjectHash };
}

/**
 * DELETE /v1/subjects/{subject}/key/lease/{leaseId}: the writer is done with the
 * lease. Recorded as a `key.lease.release` audit row on the lease's key — the
 * subject's live key, or one of its keys destroyed within the day (an erasure
 * waiting for the lease) — so the key's outstanding leases no longer count it.
 * Idempotent. `not_found` for a lease not handed out for this subject within the
 * last day (leases live at most a day).
 */
export async function releaseLease(c: KeyContext, subject: string, leaseId: string, actor: string): Promise<LeaseRelease> {
  const subjectHash = c.d.hasher.hash(subject);
  const lease = await findLease(c.d.db, subjectHash, leaseId);
  if (!lease) throw new LetheError('not_found', 'no such lease for this subject (a lease is known for a day after it was handed out)');
  let outcome: LeaseRelease['outcome'];
  if (lease.released) outcome = 'already_released';
  else if (lease.expiresAt.getTime() <= c.now().getTime()) outcome = 'expired';
  else outcome = (await recordRelease(c.d.db, c.d.audit, { keyId: lease.keyId, subjectHash, leaseId, actor })) ? 'released' : 'already_released';
  // told even when nothing was recorded now: a wake lost after the first release is made again by a retry
  await Promise.all(c.onRelease.map((fn) => fn(subjectHash)));
  return { keyId: lease.keyId, outcome };
}

export async function loadOrCreate(c: KeyContext, subjectHash: Uint8Array, subjectHex: string, actor: string): Promise<{ keyId: string; dek: Uint8Array }> {
  const found = await c.creator.lookup(subjectHash);
  if (found && 'refusal' in found) throw found.refusal;
  let row: LiveKeyRow | undefined = found?.row;
  let keyId: string;
  let dek: Uint8Array;
  if (!row) {
    const [outcome] = await c.creator.create([{ subjectHash, actor }], { keepDek: true });
    if (outcome!.kind === 'refused') throw outcome!.refusal;
    if (outcome!.kind === 'existing')
      row = outcome!.row; // another request created it first: use that one
    else c.d.metrics.keysCreated.inc();
    keyId = outcome!.kind === 'created' ? outcome!.keyId : outcome!.row.keyId;
    dek = outcome!.kind === 'created' ? outcome!.dek! : new Uint8Array(0);
  }
  if (row) {
    if (row.state === 'fenced') {
      c.d.metrics.leases.inc({ outcome: 'fenced' });
      throw fencedRefusal();
    }
    keyId = row.keyId;
    dek = await unwrapRow(c, { keyId: row.keyId, epoch: row.epoch, wrappedDek: row.wrappedDek });
  }
  c.d.cache.set(subjectHex, keyId!, dek!);
  c.d.metrics.dekCacheEntries.set(c.d.cache.size);
  return { keyId: keyId!, dek: dek! };
}
