/**
 * How every lethe key is kept: wrapped under the active epoch's KEK by the key
 * provider, never stored in the clear. Subject DEKs, artifact-version keys and
 * erasure keys share these two operations (and their destruction, in
 * destructions.ts), so a rotation re-wraps them alike.
 *
 * - `wrapUnderActive` takes FOR SHARE on the active epoch row inside the caller's
 *   transaction: a rotation cannot switch epochs under a key being wrapped, and once
 *   the new epoch is active no key is still wrapped under the old one.
 * - `unwrapCurrent` retries once when the row it read was re-wrapped and its epoch
 *   retired meanwhile (epoch_unavailable): the fresh row is under the new epoch.
 */
import { eq } from 'drizzle-orm';
import type { Transaction } from '../db/client.js';
import { epochs } from '../db/schema.js';
import { isLetheError, LetheError } from '../errors.js';
import type { KeyProvider } from '../keyprovider/provider.js';

export interface WrappedKeyRow {
  readonly keyId: string;
  readonly epoch: number;
  readonly wrappedDek: Uint8Array;
}

/** `key` wrapped under the active epoch (held FOR SHARE until `tx` ends). */
export async function wrapUnderActive(
  tx: Transaction,
  provider: KeyProvider,
  keyId: string,
  key: Uint8Array,
): Promise<{ epoch: number; wrappedDek: Uint8Array }> {
  const [active] = await tx.select().from(epochs).where(eq(epochs.state, 'active')).for('share');
  if (!active) throw new LetheError('unavailable', 'no active KEK epoch: run `lethe migrate` or start the service once');
  return { epoch: active.epoch, wrappedDek: await provider.wrap(active.epoch, key, keyId) };
}

/**
 * The plaintext key of `row` (the caller zeroes it). When a rotation re-wrapped the
 * row and retired its epoch since it was read, `reread` fetches it again (undefined:
 * destroyed meanwhile, answered by `gone`).
 */
export async function unwrapCurrent(
  provider: KeyProvider,
  row: WrappedKeyRow,
  reread: () => Promise<WrappedKeyRow | undefined>,
  gone: () => LetheError,
): Promise<Uint8Array> {
  try {
    return await provider.unwrap(row.epoch, row.wrappedDek, row.keyId);
  } catch (e) {
    if (!isLetheError(e, 'epoch_unavailable')) throw e;
    const fresh = await reread();
    if (!fresh) throw gone();
    if (fresh.epoch === row.epoch) throw e;
    return provider.unwrap(fresh.epoch, fresh.wrappedDek, fresh.keyId);
  }
}
