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
 * - Every key is wrapped for its purpose (`KeyPurpose`: subject DEK, artifact-version
 *   key, erasure key), bound in the wrap's associated data, and unwrapped only as the
 *   purpose its caller expects: a wrapped key copied onto a row of another kind does
 *   not unwrap. Epochs created before purposes were bound (wrap format 1) may still
 *   hold legacy wraps, accepted under them until a rotation re-wraps every key.
 */
import { eq } from 'drizzle-orm';
import type { Database, Executor, Transaction } from '../db/client.js';
import { epochs } from '../db/schema.js';
import { isLetheError, LetheError } from '../errors.js';
import type { KeyProvider, KeyPurpose } from '../keyprovider/provider.js';

export interface WrappedKeyRow {
  readonly keyId: string;
  readonly epoch: number;
  readonly wrappedDek: Uint8Array;
}

/** The wrap format of epochs created before purposes were bound: their keys may carry the legacy context. */
export const LEGACY_WRAP_FORMAT = 1;
/** The wrap format of every epoch created since: only purpose-bound wraps. */
export const PURPOSE_BOUND_WRAP_FORMAT = 2;

/** `key` wrapped for `purpose` under the active epoch (held FOR SHARE until `tx` ends). Always purpose-bound, whatever the epoch. */
export async function wrapUnderActive(
  tx: Transaction,
  provider: KeyProvider,
  keyId: string,
  key: Uint8Array,
  purpose: KeyPurpose,
): Promise<{ epoch: number; wrappedDek: Uint8Array }> {
  const [active] = await tx.select().from(epochs).where(eq(epochs.state, 'active')).for('share');
  if (!active) throw new LetheError('unavailable', 'no active KEK epoch: run `lethe migrate` or start the service once');
  return { epoch: active.epoch, wrappedDek: await provider.wrap(active.epoch, key, keyId, purpose) };
}

/** The active epoch's number as `exec` sees it now (unlocked: a caller that wraps under it checks it again where it commits). */
export async function activeEpoch(exec: Executor): Promise<number> {
  const [active] = await exec.select({ epoch: epochs.epoch }).from(epochs).where(eq(epochs.state, 'active'));
  if (!active) throw new LetheError('unavailable', 'no active KEK epoch: run `lethe migrate` or start the service once');
  return active.epoch;
}

/** Whether keys under `epoch` may still carry the legacy, purpose-less wrap (its wrap format is 1). */
export async function acceptsLegacyWraps(db: Executor, epoch: number): Promise<boolean> {
  const [row] = await db.select({ wrapFormat: epochs.wrapFormat }).from(epochs).where(eq(epochs.epoch, epoch));
  return row?.wrapFormat === LEGACY_WRAP_FORMAT;
}

const PURPOSE_NAMES: Record<KeyPurpose, string> = {
  subject: 'a subject key',
  'artifact-version': 'an artifact-version key',
  erasure: 'an erasure key',
  record: 'a record key',
};

/**
 * The plaintext key of `row`, unwrapped as a key of `purpose` (the caller zeroes it).
 * A wrap for another purpose or another key id is refused (decrypt_failed) — except
 * that under an epoch of wrap format 1 a legacy wrap, which binds no purpose, is
 * accepted until a rotation re-wraps it.
 */
export async function unwrapAs(db: Executor, provider: KeyProvider, row: WrappedKeyRow, purpose: KeyPurpose): Promise<Uint8Array> {
  const refused = (cause: unknown) =>
    new LetheError(
      'decrypt_failed',
      `key ${row.keyId} does not unwrap as ${PURPOSE_NAMES[purpose]} under epoch ${row.epoch}: its wrapped copy was made for another key or purpose, or altered`,
      { cause },
    );
  try {
    return await provider.unwrap(row.epoch, row.wrappedDek, row.keyId, purpose);
  } catch (e) {
    if (!isLetheError(e, 'decrypt_failed')) throw e;
    if (!(await acceptsLegacyWraps(db, row.epoch))) throw refused(e);
    try {
      return await provider.unwrap(row.epoch, row.wrappedDek, row.keyId, purpose, { acceptLegacy: true });
    } catch (again) {
      if (isLetheError(again, 'decrypt_failed')) throw refused(again);
      throw again;
    }
  }
}

/**
 * The plaintext key of `row`, unwrapped as `purpose` (the caller zeroes it). When a
 * rotation re-wrapped the row and retired its epoch since it was read, `reread`
 * fetches it again (undefined: destroyed meanwhile, answered by `gone`).
 */
export async function unwrapCurrent(
  db: Database,
  provider: KeyProvider,
  row: WrappedKeyRow,
  purpose: KeyPurpose,
  reread: () => Promise<WrappedKeyRow | undefined>,
  gone: () => LetheError,
): Promise<Uint8Array> {
  try {
    return await unwrapAs(db, provider, row, purpose);
  } catch (e) {
    if (!isLetheError(e, 'epoch_unavailable')) throw e;
    const fresh = await reread();
    if (!fresh) throw gone();
    if (fresh.epoch === row.epoch) throw e;
    return unwrapAs(db, provider, fresh, purpose);
  }
}
