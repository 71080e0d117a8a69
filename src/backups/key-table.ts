/**
 * A backup's copy of the key table (backups/<id>/keys.json): every subject and
 * artifact-version key as it stood, wrapped under its epoch's KEK — never a plaintext
 * key. A backup writes it before anything names its keys; verify reads it back to
 * say whether a key's wrapped copy still unwraps, which it does until its epoch is
 * retired: the residual a backup carries for a key destroyed after it was taken.
 */
import { sql } from 'drizzle-orm';
import { fromBase64Url, KEY_PURPOSES, type KeyPurpose, toBase64Url } from '../crypto/index.js';
import { type Database, queryRows } from '../db/client.js';
import { isLetheError, LetheError } from '../errors.js';
import type { ObjectStore } from '../storage/store.js';
import { keyTableKey, type Manifest } from './manifest.js';
import { sha256Hex } from './objects.js';

export interface KeyTableRow {
  readonly keyId: string;
  readonly kind: 'subject' | 'artifact-version';
  /** What the key is for, bound in its wrap (an erasure key's kind is artifact-version). */
  readonly purpose: KeyPurpose;
  readonly epoch: number;
  readonly wrapped: Uint8Array;
}

/** A wrapped key as the backup's key table holds it. */
export interface WrappedCopy {
  readonly epoch: number;
  readonly wrapped: Uint8Array;
  /** Key tables written before purposes were recorded: the purpose of the key's kind. */
  readonly purpose: KeyPurpose;
}

/** Writes the key table as it stands into the backup bucket; its rows and the sha256 the manifest records. */
export async function writeKeyTable(
  db: Database,
  store: ObjectStore,
  backupId: string,
  createdAt: Date,
): Promise<{ readonly rows: KeyTableRow[]; readonly sha256: string }> {
  const rows = (
    await queryRows<{ key_id: string; kind: 'subject' | 'artifact-version'; purpose: KeyPurpose; epoch: number; wrapped: Uint8Array }>(
      db,
      sql`select key_id, 'subject' as kind, 'subject' as purpose, epoch, wrapped_dek as wrapped from subject_keys
          union all
          select key_id, 'artifact-version' as kind, purpose, epoch, wrapped_dek as wrapped from artifact_keys
          order by key_id`,
    )
  ).map((k) => ({ keyId: k.key_id, kind: k.kind, purpose: k.purpose, epoch: Number(k.epoch), wrapped: new Uint8Array(k.wrapped) }));
  const bytes = Buffer.from(
    JSON.stringify({
      format: 'lethe-key-table/1',
      backupId,
      createdAt: createdAt.toISOString(),
      keys: rows.map((k) => ({ keyId: k.keyId, kind: k.kind, purpose: k.purpose, epoch: k.epoch, wrappedKey: toBase64Url(k.wrapped) })),
    }),
  );
  await store.put(keyTableKey(backupId), bytes);
  return { rows, sha256: sha256Hex(bytes) };
}

/** The backup's wrapped keys by key id (none when its key table is gone); refuses one that does not match its sha256. */
export async function readKeyTable(store: ObjectStore, manifest: Manifest): Promise<Map<string, WrappedCopy>> {
  const out = new Map<string, WrappedCopy>();
  let bytes: Uint8Array;
  try {
    bytes = await store.get(manifest.keyTable.key);
  } catch (e) {
    if (isLetheError(e, 'not_found')) return out;
    throw e;
  }
  if (sha256Hex(bytes) !== manifest.keyTable.sha256) throw new LetheError('internal', "the backup's key table does not match its sha256");
  const parsed = JSON.parse(Buffer.from(bytes).toString('utf8')) as {
    keys: Array<{ keyId: string; kind?: string; purpose?: string; epoch: number; wrappedKey: string }>;
  };
  for (const k of parsed.keys) {
    const wrapped = fromBase64Url(k.wrappedKey);
    const recorded = KEY_PURPOSES.find((p) => p === k.purpose);
    const purpose: KeyPurpose = recorded ?? (k.kind === 'artifact-version' ? 'artifact-version' : 'subject');
    if (wrapped) out.set(k.keyId, { epoch: k.epoch, wrapped, purpose });
  }
  return out;
}
