/**
 * Artifact-version keys: one random 32-byte key per version of a derived artifact,
 * wrapped under the active epoch KEK exactly like a subject DEK (AAD = key id,
 * purpose "artifact-key"), re-wrapped by KEK rotation, destroyed when the version is
 * superseded or the artifact erased. Destruction removes the row and writes the
 * destruction ledger and an audit row in the caller's transaction.
 */
import { eq, sql } from 'drizzle-orm';
import { randomBytes } from '../crypto/index.js';
import type { Db, Transaction } from '../db/client.js';
import { artifactKeys, destructionLedger, epochs } from '../db/schema.js';
import { LetheError } from '../errors.js';
import type { KeyProvider } from '../keyprovider/provider.js';
import type { AuditLog } from '../vault/audit.js';
import { notify } from '../vault/events.js';
import { newId } from '../vault/ids.js';

export class ArtifactKeys {
  readonly #db: Db;
  readonly #provider: KeyProvider;
  readonly #audit: AuditLog;

  constructor(deps: { db: Db; provider: KeyProvider; audit: AuditLog }) {
    this.#db = deps.db;
    this.#provider = deps.provider;
    this.#audit = deps.audit;
  }

  /** A fresh key (plaintext for the caller to seal with and zero) and its id. */
  fresh(): { keyId: string; key: Uint8Array } {
    return { keyId: newId('key'), key: randomBytes(32) };
  }

  /** Stores `key` wrapped under the active epoch, inside `tx`. */
  async store(tx: Transaction, input: { keyId: string; key: Uint8Array; artifactId: string; version: number }): Promise<void> {
    // FOR SHARE: a rotation cannot switch epochs under a key being wrapped
    const [active] = await tx.select().from(epochs).where(eq(epochs.state, 'active')).for('share');
    if (!active) throw new LetheError('unavailable', 'no active KEK epoch');
    const wrappedDek = await this.#provider.wrap(active.epoch, input.key, input.keyId);
    await tx.insert(artifactKeys).values({
      keyId: input.keyId,
      artifactId: input.artifactId,
      version: input.version,
      epoch: active.epoch,
      wrappedDek,
      createdAt: new Date(),
    });
  }

  /** The plaintext key of a live version; the caller zeroes it. */
  async unwrap(keyId: string): Promise<Uint8Array> {
    for (let attempt = 0; attempt < 2; attempt++) {
      const [row] = await this.#db.db.select().from(artifactKeys).where(eq(artifactKeys.keyId, keyId));
      if (!row) throw new LetheError('key_destroyed', 'the artifact version key was destroyed');
      try {
        return await this.#provider.unwrap(row.epoch, row.wrappedDek, row.keyId);
      } catch (e) {
        // a rotation moved the row to a new epoch and retired the old one meanwhile
        if (attempt === 0 && e instanceof LetheError && e.code === 'epoch_unavailable') continue;
        throw e;
      }
    }
    throw new LetheError('unavailable', 'the artifact key moved during the read; try again');
  }

  /** Destroys a version key inside `tx` (row gone, ledger row, audit row, NOTIFY). Idempotent. */
  async destroy(tx: Transaction, keyId: string, options: { reason: string; actor: string; artifactId: string }): Promise<boolean> {
    const [row] = await tx.delete(artifactKeys).where(eq(artifactKeys.keyId, keyId)).returning();
    if (!row) return false;
    await tx.execute(sql`delete from embeddings where key_id = ${keyId}`);
    await tx
      .insert(destructionLedger)
      .values({ keyId, keyKind: 'artifact-version', subjectHash: null, destroyedAt: new Date(), reason: options.reason, wrappedEpoch: row.epoch, leasedUntil: null })
      .onConflictDoNothing();
    await this.#audit.append(tx, [
      { actor: options.actor, action: 'artifact.key.destroy', keyId, epoch: row.epoch, detail: { artifactId: options.artifactId, version: row.version, reason: options.reason } },
    ]);
    await notify(tx, { t: 'key', keyId });
    return true;
  }
}
