/**
 * Taking a backup: the key table (wrapped keys only), an export of lethe's tables in
 * one consistent snapshot, the ledger copy brought up to date, a copy of every
 * ciphertext object (log segments, artifact versions), the manifest, and the
 * backup_keys rows through which a later destruction finds this backup.
 *
 * - The job never needs a plaintext key: object key ids come from the envelope
 *   headers, key states from the validity check.
 * - Incremental: objects are stored content-addressed (objects/<sha256>); an object
 *   already in the backup bucket is referenced, not copied again.
 * - Keys already destroyed are marked in the manifest, written once (its base: never
 *   rewritten); anything destroyed after the key states were read reaches it through
 *   the ledger chain, flushed before the job returns.
 */
import { inArray, sql } from 'drizzle-orm';
import { backups, destructionLedger } from '../db/schema.js';
import { isLetheError } from '../errors.js';
import { newId } from '../ids.js';
import type { BackupContext } from './context.js';
import { exportDatabase } from './database.js';
import { writeKeyTable } from './key-table.js';
import { chainPosition, flushLedger, retention } from './ledger-chain.js';
import {
  databaseKey,
  keyTableKey,
  type Manifest,
  MANIFEST_FORMAT,
  type ManifestKey,
  type ManifestObject,
  manifestKey,
  sealManifest,
  storedObjectKey,
} from './manifest.js';
import { BACKED_UP_PREFIXES, keyIdsOf, recordOwnersOf, sha256Hex } from './objects.js';

const VALIDITY_BATCH = 10_000;

export interface BackupSummary {
  readonly backupId: string;
  readonly createdAt: Date;
  readonly objects: number;
  readonly keys: number;
  readonly manifestVersion: number;
}

export interface BackupProgress {
  readonly phase: 'objects' | 'keys' | 'manifest';
  readonly done: number;
  readonly copied: number;
  readonly reused: number;
}

/** Takes a backup. */
export async function takeBackup(ctx: BackupContext, options: { onProgress?: (p: BackupProgress) => void } = {}): Promise<BackupSummary> {
  const backupId = newId('bak');
  const createdAt = new Date();
  // the key table as it stands: wrapped keys and their epochs, never a plaintext key
  const table = await writeKeyTable(ctx.db, ctx.backup, backupId, createdAt);
  // what a restore loads: the tables as they stand, in one consistent snapshot
  const dump = await ctx.db.transaction(async (tx) => {
    await tx.execute(sql`set transaction isolation level repeatable read, read only`);
    return exportDatabase(tx);
  });
  const databaseBytes = Buffer.from(JSON.stringify(dump));
  await ctx.backup.put(databaseKey(backupId), databaseBytes);
  // the ledger chain holds every destruction the backup knows of before the manifest names them
  await flushLedger(ctx);
  const ledgerHead = await chainPosition(ctx.db, ctx.backup.bucket);
  options.onProgress?.({ phase: 'keys', done: table.rows.length, copied: 0, reused: 0 });

  // Objects after the snapshot of the tables: every segment an exported index row
  // names was stored before the row was committed, so it is in the listing below.
  const objects: ManifestObject[] = [];
  const owners = recordOwnersOf(dump);
  let copied = 0;
  let reused = 0;
  for (const prefix of BACKED_UP_PREFIXES) {
    for await (const o of ctx.live.list(prefix)) {
      let bytes: Uint8Array;
      try {
        bytes = await ctx.live.get(o.key);
      } catch (e) {
        if (isLetheError(e, 'not_found')) continue; // deleted since the listing (a superseded artifact version)
        throw e;
      }
      const sha256 = sha256Hex(bytes);
      const stored = storedObjectKey(sha256);
      if (await ctx.backup.head(stored)) reused++;
      else {
        await ctx.backup.put(stored, bytes);
        copied++;
      }
      objects.push({ key: o.key, sha256, size: bytes.length, stored, keyIds: keyIdsOf(o.key, bytes, owners) });
      options.onProgress?.({ phase: 'objects', done: objects.length, copied, reused });
    }
  }

  // every key the backup holds data of or wrapped, with its state now
  const kinds = new Map<string, ManifestKey['kind']>(table.rows.map((k) => [k.keyId, k.kind]));
  for (const o of objects) for (const k of o.keyIds) if (!kinds.has(k)) kinds.set(k, o.key.startsWith('artifacts/') ? 'artifact-version' : 'subject');
  const ids = [...kinds.keys()].sort();
  const states = new Map<string, ManifestKey['state']>();
  for (let i = 0; i < ids.length; i += VALIDITY_BATCH) {
    const v = await ctx.keys.validity(ids.slice(i, i + VALIDITY_BATCH));
    for (const [id, state] of Object.entries(v)) states.set(id, state === 'active' ? 'active' : 'destroyed');
  }
  const destroyedAt = await destroyedAtOf(
    ctx,
    ids.filter((id) => states.get(id) === 'destroyed'),
  );
  const keys: ManifestKey[] = ids.map((keyId) => {
    const at = destroyedAt.get(keyId);
    return { keyId, kind: kinds.get(keyId)!, state: states.get(keyId)!, ...(at ? { destroyedAt: at.toISOString() } : {}) };
  });

  const manifest: Manifest = sealManifest(ctx.ledgerMac, {
    format: MANIFEST_FORMAT,
    backupId,
    version: 1,
    createdAt: createdAt.toISOString(),
    updatedAt: createdAt.toISOString(),
    keyTable: { key: keyTableKey(backupId), sha256: table.sha256, keys: table.rows.length },
    database: { key: databaseKey(backupId), sha256: sha256Hex(databaseBytes) },
    ledgerEntries: dump.tables.destruction_ledger.length,
    objects,
    keys,
    ...(ledgerHead ? { ledgerHead } : {}),
  });
  // written once, never rewritten: under Object Lock its one version keeps the bucket's default retention, like the backup's other objects
  // retained like the ledger: a manifest is a witness of the chain's reach (anchor.ts), written once
  const retain = retention(ctx, await ctx.backup.lockable());
  await ctx.backup.put(manifestKey(backupId), Buffer.from(JSON.stringify(manifest)), retain ? { retain } : {});
  options.onProgress?.({ phase: 'manifest', done: 1, copied, reused });

  await ctx.db.transaction(async (tx) => {
    await tx.insert(backups).values({ backupId, createdAt, manifestVersion: 1, objects: objects.length, keys: keys.length });
    await tx.execute(sql`insert into backup_keys (key_id, backup_id)
                         select k, ${backupId} from json_array_elements_text(${JSON.stringify(ids)}::json) as v(k)`);
  });
  // anything destroyed after the key states were read reaches the backup through the chain
  // (and so does the manifest version just written: the chain records it)
  await flushLedger(ctx);
  return { backupId, createdAt, objects: objects.length, keys: keys.length, manifestVersion: 1 };
}

/** When each of the (destroyed) keys was destroyed, from the ledger. */
async function destroyedAtOf(ctx: BackupContext, keyIds: readonly string[]): Promise<Map<string, Date>> {
  const out = new Map<string, Date>();
  for (let i = 0; i < keyIds.length; i += VALIDITY_BATCH) {
    const rows = await ctx.db
      .select({ keyId: destructionLedger.keyId, destroyedAt: destructionLedger.destroyedAt })
      .from(destructionLedger)
      .where(inArray(destructionLedger.keyId, keyIds.slice(i, i + VALIDITY_BATCH)));
    for (const r of rows) out.set(r.keyId, r.destroyedAt);
  }
  return out;
}
