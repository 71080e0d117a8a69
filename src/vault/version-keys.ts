/**
 * Version keys: one random 32-byte key per version of a derived artifact (and one
 * per erasure, sealing its request and probe fingerprints), wrapped under the
 * active epoch KEK exactly like a subject DEK, re-wrapped by KEK rotation, and
 * destroyed when the version is superseded or the artifact erased. Rows live in
 * `artifact_keys`; destruction removes the row and records it (ledger, audit,
 * notification) in the caller's transaction.
 *
 * Each row records its purpose — `artifact-version` or `erasure` — and the key is
 * wrapped for it (wrapping.ts): `unwrap` takes the purpose its caller expects and
 * refuses a row that says otherwise (conflict) or whose wrap was made for another
 * purpose (decrypt_failed). An erasure key is opened only through the erasure path,
 * an artifact's only through the artifact path, and neither as a subject DEK.
 */
import { eq, sql } from 'drizzle-orm';
import { randomBytes, zeroize } from '../crypto/index.js';
import { type Database, queryRows, type Transaction } from '../db/client.js';
import { artifactKeys } from '../db/schema.js';
import { isLetheError, LetheError } from '../errors.js';
import { newId } from '../ids.js';
import type { KeyPurpose, KeyProvider } from '../keyprovider/provider.js';
import type { KeyDestructions } from './destructions.js';
import { activeEpoch, unwrapCurrent, wrapUnderActive } from './wrapping.js';

/** What a version key is for: one version of an artifact, or an erasure's own key. */
export type VersionKeyPurpose = Extract<KeyPurpose, 'artifact-version' | 'erasure'>;

/** A version key to store: its plaintext (the caller zeroes it), its id, its artifact and version, its purpose. */
export interface VersionKeyInput {
  readonly keyId: string;
  readonly key: Uint8Array;
  readonly artifactId: string;
  readonly version: number;
  readonly purpose: VersionKeyPurpose;
}

/** What unwrapping a version key needs of its row (a caller that joined `artifact_keys` into its own query has it). */
export type VersionKeyRow = Pick<typeof artifactKeys.$inferSelect, 'keyId' | 'epoch' | 'wrappedDek' | 'purpose'>;

/** A version key wrapped under `epoch`, not stored yet. */
export interface WrappedVersionKey extends VersionKeyInput {
  readonly epoch: number;
  readonly wrappedDek: Uint8Array;
}

export class VersionKeys {
  readonly #db: Database;
  readonly #provider: KeyProvider;
  readonly #destructions: KeyDestructions;

  constructor(deps: { db: Database; provider: KeyProvider; destructions: KeyDestructions }) {
    this.#db = deps.db;
    this.#provider = deps.provider;
    this.#destructions = deps.destructions;
  }

  /** A fresh key (plaintext for the caller to seal with and zero) and its id. */
  fresh(): { keyId: string; key: Uint8Array } {
    return { keyId: newId('key'), key: randomBytes(32) };
  }

  /**
   * `key` wrapped for `purpose` under the epoch active now, outside any transaction:
   * `storeWrapped` commits it (a request's transaction then holds no wrap round trip).
   */
  async wrap(input: VersionKeyInput): Promise<WrappedVersionKey> {
    const epoch = await activeEpoch(this.#db);
    return { ...input, epoch, wrappedDek: await this.#provider.wrap(epoch, input.key, input.keyId, input.purpose) };
  }

  /**
   * Stores a key `wrap` wrapped, inside `tx`, only while its epoch is still the active
   * one (the share lock a rotation waits on, taken in the insert): wrapped again under
   * the active epoch otherwise.
   */
  async storeWrapped(tx: Transaction, w: WrappedVersionKey): Promise<void> {
    const rows = await queryRows<{ key_id: string }>(
      tx,
      sql`insert into artifact_keys (key_id, artifact_id, version, epoch, wrapped_dek, created_at, purpose)
          select ${w.keyId}, ${w.artifactId}, ${w.version}, ${w.epoch}, decode(${Buffer.from(w.wrappedDek).toString('hex')}, 'hex'), now(), ${w.purpose}
           where exists (select 1 from epochs where epoch = ${w.epoch} and state = 'active' for share)
          returning key_id`,
    );
    if (rows.length === 0) await this.store(tx, w);
  }

  /** Stores `key` wrapped for `purpose` under the active epoch, inside `tx`. */
  async store(tx: Transaction, input: VersionKeyInput): Promise<void> {
    const { epoch, wrappedDek } = await wrapUnderActive(tx, this.#provider, input.keyId, input.key, input.purpose);
    await tx
      .insert(artifactKeys)
      .values({ keyId: input.keyId, artifactId: input.artifactId, version: input.version, epoch, wrappedDek, createdAt: new Date(), purpose: input.purpose });
  }

  /**
   * The plaintext key of a live version key the caller expects to be `purpose`; the
   * caller zeroes it. A row of another purpose is refused (conflict), and so is a key
   * whose wrap was made for another purpose (decrypt_failed).
   */
  async unwrap(keyId: string, purpose: VersionKeyPurpose): Promise<Uint8Array> {
    const gone = () => new LetheError('key_destroyed', purpose === 'erasure' ? 'the erasure key was destroyed' : 'the artifact version key was destroyed');
    const checked = async () => {
      const row = await this.#row(keyId);
      if (row && row.purpose !== purpose) {
        throw new LetheError(
          'conflict',
          `key ${keyId} is ${row.purpose === 'erasure' ? 'an erasure key' : 'an artifact-version key'}, not ${purpose === 'erasure' ? 'an erasure key' : 'an artifact-version key'}`,
        );
      }
      return row;
    };
    const row = await checked();
    if (!row) throw gone();
    return unwrapCurrent(this.#db, this.#provider, row, purpose, checked, gone);
  }

  /**
   * The plaintext keys of artifact-version keys whose rows the caller read (joined into
   * its own query; live when read): a key destroyed since is absent, and a row of another
   * purpose is refused as by `unwrap`. The caller zeroes every key.
   */
  async unwrapVersionRows(rows: readonly VersionKeyRow[]): Promise<Map<string, Uint8Array>> {
    const out = new Map<string, Uint8Array>();
    try {
      for (const row of rows) {
        if (out.has(row.keyId)) continue;
        if (row.purpose !== 'artifact-version') throw new LetheError('conflict', `key ${row.keyId} is an erasure key, not an artifact-version key`);
        const gone = () => new LetheError('key_destroyed', 'the artifact version key was destroyed');
        try {
          out.set(row.keyId, await unwrapCurrent(this.#db, this.#provider, row, 'artifact-version', () => this.#row(row.keyId), gone));
        } catch (e) {
          // destroyed since the row was read: absent, as if the query had not found it
          if (!isLetheError(e, 'key_destroyed')) throw e;
        }
      }
    } catch (e) {
      zeroize(...out.values());
      throw e;
    }
    return out;
  }

  /** What a live version key is for (undefined once destroyed). */
  async purposeOf(keyId: string): Promise<VersionKeyPurpose | undefined> {
    return (await this.#row(keyId))?.purpose;
  }

  /** The epoch a live version key is wrapped under (undefined once destroyed). */
  async epochOf(keyId: string): Promise<number | undefined> {
    return (await this.#row(keyId))?.epoch;
  }

  /**
   * Destroys a version key inside `tx`, which KeyDestructions.transaction opened (row
   * gone, ledger row, audit row, notification). Idempotent: false when it was gone.
   */
  async destroy(tx: Transaction, keyId: string, options: { reason: string; actor: string; artifactId: string }): Promise<boolean> {
    const [row] = await tx.delete(artifactKeys).where(eq(artifactKeys.keyId, keyId)).returning();
    if (!row) return false;
    await this.#destructions.record(
      tx,
      { keyId, keyKind: 'artifact-version', subjectHash: null, destroyedAt: new Date(), reason: options.reason, wrappedEpoch: row.epoch, leasedUntil: null },
      {
        actor: options.actor,
        action: 'artifact.key.destroy',
        keyId,
        epoch: row.epoch,
        detail: { artifactId: options.artifactId, version: row.version, reason: options.reason },
      },
    );
    return true;
  }

  async #row(keyId: string) {
    const [row] = await this.#db.select().from(artifactKeys).where(eq(artifactKeys.keyId, keyId));
    return row;
  }
}
