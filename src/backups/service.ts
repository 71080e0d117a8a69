/**
 * Backups: a copy of every ciphertext object (log segments, artifact versions) in the
 * backup bucket, an export of the key table as it stands (wrapped keys only), and a
 * manifest — and the propagation that writes a new manifest version whenever a key
 * a backup holds is destroyed. The job never needs a plaintext key: object key ids
 * come from the envelope headers, key states from the validity check.
 *
 * - Incremental: objects are stored content-addressed (objects/<sha256>); an object
 *   already in the backup bucket is referenced, not copied again.
 * - Propagation is durable: which (key, backup) pairs were written is recorded in
 *   PostgreSQL after the manifest version is stored, so a crash in between only
 *   writes the same marks again in one more version. A destruction finds its backups
 *   through backup_keys (key id → backups): the cost follows the backups affected.
 * - The destruction ledger is copied into the backup bucket, one object per destroyed
 *   key, never overwritten: a lost database does not lose it.
 */
import { createHash } from 'node:crypto';
import { eq, inArray, sql } from 'drizzle-orm';
import { envelopeKeyId, fromBase64Url, isCommittedTo, toBase64Url, zeroize } from '../crypto/index.js';
import type { ArtifactService } from '../artifacts/service.js';
import type { KeyProvider } from '../keyprovider/provider.js';
import { type Database, queryRows } from '../db/client.js';
import { backupPropagations, backups, destructionLedger } from '../db/schema.js';
import { isLetheError, LetheError } from '../errors.js';
import { idArrayLiteral, newId } from '../ids.js';
import { decodeSegment } from '../log/segment.js';
import type { Logger } from '../observability/logger.js';
import { describeError } from '../observability/logger.js';
import type { ObjectStore } from '../storage/store.js';
import type { AuditLog } from '../vault/audit.js';
import type { KeyService } from '../vault/keys.js';
import { clearForRestore, replayDestructions } from '../vault/restore.js';
import type { VersionKeys } from '../vault/version-keys.js';
import { exportDatabase, importDatabase, occupiedTables, parseDatabaseExport } from './database.js';
import {
  databaseKey,
  keyTableKey,
  LEDGER_GENESIS_KEY,
  ledgerObjectKey,
  type Manifest,
  MANIFEST_FORMAT,
  type ManifestKey,
  type ManifestObject,
  manifestKey,
  markDestroyed,
  storedObjectKey,
} from './manifest.js';

const VALIDITY_BATCH = 10_000;
/** What the backup copies from the live bucket. */
const BACKED_UP_PREFIXES = ['log/', 'artifacts/'] as const;

export interface BackupSummary {
  readonly backupId: string;
  readonly createdAt: Date;
  readonly objects: number;
  readonly keys: number;
  readonly manifestVersion: number;
}

export interface VerifiedKey {
  readonly keyId: string;
  /** The key's state in the manifest. */
  readonly state: 'active' | 'destroyed';
  /** decrypts: a live key lethe holds opens the key's data in this backup; unreadable: nothing lethe holds does. */
  readonly data: 'decrypts' | 'unreadable';
  /**
   * The backup's own key-table copy of the wrapped key: none (not in the export),
   * inert (its epoch is gone), or unwraps (its epoch still exists: the residual lasts
   * until that epoch is retired).
   */
  readonly wrappedCopy: 'none' | 'inert' | 'unwraps';
  readonly wrappedEpoch?: number;
}

export interface Verification {
  readonly backupId: string;
  readonly manifestVersion: number;
  readonly objectsChecked: number;
  /** Objects whose stored bytes are missing or do not match their sha256. */
  readonly corrupted: Array<{ key: string; stored: string; reason: 'missing' | 'sha256-mismatch' }>;
  readonly keys: VerifiedKey[];
  /** Every object intact, every active key's data decrypts, every destroyed key's data unreadable. */
  readonly ok: boolean;
}

export interface RestoreResult {
  readonly backupId: string;
  readonly manifestVersion: number;
  readonly objects: number;
  /** Keys restored live. */
  readonly keys: number;
  readonly entries: number;
  readonly artifacts: number;
  /** Artifacts whose current version's key was destroyed after the backup. */
  readonly staleArtifacts: number;
  /** Of those, regenerated from the restored sources / erased for want of any. */
  readonly regeneratedArtifacts: number;
  readonly removedArtifacts: number;
  /** Keys known destroyed (ledger copy, manifest, the backup's own ledger): left out. */
  readonly destroyedKeys: number;
  /** Destructions written into the restored ledger that the backup's own rows did not have. */
  readonly replayed: number;
  readonly ledger: 'replayed' | 'forced';
  /** What a forced restore could not guarantee. */
  readonly warnings: string[];
}

interface LedgerCopy {
  readonly keyId: string;
  readonly keyKind: string;
  readonly subjectHash: string | null;
  readonly destroyedAt: string;
  readonly reason: string;
  readonly wrappedEpoch: number;
  readonly leasedUntil: string | null;
}

export interface BackupProgress {
  readonly phase: 'objects' | 'keys' | 'manifest';
  readonly done: number;
  readonly copied: number;
  readonly reused: number;
}

const sha256Hex = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

export class BackupService {
  readonly #db: Database;
  readonly #keys: KeyService;
  readonly #live: ObjectStore;
  readonly #backup: ObjectStore;
  readonly #logger: Logger;

  readonly #versionKeys: VersionKeys;
  readonly #artifacts: ArtifactService;
  readonly #provider: KeyProvider;
  readonly #audit: AuditLog;

  constructor(deps: {
    db: Database;
    keys: KeyService;
    versionKeys: VersionKeys;
    artifacts: ArtifactService;
    provider: KeyProvider;
    audit: AuditLog;
    objects: ObjectStore;
    backupObjects: ObjectStore;
    logger: Logger;
  }) {
    this.#db = deps.db;
    this.#keys = deps.keys;
    this.#versionKeys = deps.versionKeys;
    this.#artifacts = deps.artifacts;
    this.#provider = deps.provider;
    this.#audit = deps.audit;
    this.#live = deps.objects;
    this.#backup = deps.backupObjects;
    this.#logger = deps.logger;
  }

  /** The backup bucket (or folder). */
  get store(): ObjectStore {
    return this.#backup;
  }

  /** Takes a backup. */
  async run(options: { onProgress?: (p: BackupProgress) => void } = {}): Promise<BackupSummary> {
    const backupId = newId('bak');
    const createdAt = new Date();
    // the key table as it stands: wrapped keys and their epochs, never a plaintext key
    const table = await queryRows<{ key_id: string; kind: 'subject' | 'artifact-version'; epoch: number; wrapped: Uint8Array }>(
      this.#db,
      sql`select key_id, 'subject' as kind, epoch, wrapped_dek as wrapped from subject_keys
          union all
          select key_id, 'artifact-version' as kind, epoch, wrapped_dek as wrapped from artifact_keys
          order by key_id`,
    );
    const tableBytes = Buffer.from(
      JSON.stringify({
        format: 'lethe-key-table/1',
        backupId,
        createdAt: createdAt.toISOString(),
        keys: table.map((k) => ({ keyId: k.key_id, kind: k.kind, epoch: Number(k.epoch), wrappedKey: toBase64Url(new Uint8Array(k.wrapped)) })),
      }),
    );
    await this.#backup.put(keyTableKey(backupId), tableBytes);
    // what a restore loads: the tables as they stand, in one consistent snapshot
    const dump = await this.#db.transaction(async (tx) => {
      await tx.execute(sql`set transaction isolation level repeatable read, read only`);
      return exportDatabase(tx);
    });
    const databaseBytes = Buffer.from(JSON.stringify(dump));
    await this.#backup.put(databaseKey(backupId), databaseBytes);
    // the ledger copy holds every destruction the backup knows of before the manifest names
    // them; only a backup job starts the copy, so a copy that was removed stays missing
    if (!(await this.#backup.head(LEDGER_GENESIS_KEY))) {
      await this.#backup.put(LEDGER_GENESIS_KEY, Buffer.from(JSON.stringify({ format: 'lethe-ledger-copy/1', startedAt: new Date().toISOString() })));
    }
    await this.exportLedger();
    options.onProgress?.({ phase: 'keys', done: table.length, copied: 0, reused: 0 });

    // Objects after the snapshot of the tables: every segment an exported index row
    // names was stored before the row was committed, so it is in the listing below.
    const objects: ManifestObject[] = [];
    let copied = 0;
    let reused = 0;
    for (const prefix of BACKED_UP_PREFIXES) {
      for await (const o of this.#live.list(prefix)) {
        let bytes: Uint8Array;
        try {
          bytes = await this.#live.get(o.key);
        } catch (e) {
          if (isLetheError(e, 'not_found')) continue; // deleted since the listing (a superseded artifact version)
          throw e;
        }
        const sha256 = sha256Hex(bytes);
        const stored = storedObjectKey(sha256);
        if (await this.#backup.head(stored)) reused++;
        else {
          await this.#backup.put(stored, bytes);
          copied++;
        }
        objects.push({ key: o.key, sha256, size: bytes.length, stored, keyIds: keyIdsOf(o.key, bytes) });
        options.onProgress?.({ phase: 'objects', done: objects.length, copied, reused });
      }
    }

    // every key the backup holds data of or wrapped, with its state now
    const kinds = new Map<string, ManifestKey['kind']>(table.map((k) => [k.key_id, k.kind]));
    for (const o of objects) for (const k of o.keyIds) if (!kinds.has(k)) kinds.set(k, o.key.startsWith('artifacts/') ? 'artifact-version' : 'subject');
    const ids = [...kinds.keys()].sort();
    const states = new Map<string, ManifestKey['state']>();
    for (let i = 0; i < ids.length; i += VALIDITY_BATCH) {
      const v = await this.#keys.validity(ids.slice(i, i + VALIDITY_BATCH));
      for (const [id, state] of Object.entries(v)) states.set(id, state === 'active' ? 'active' : 'destroyed');
    }
    const destroyedAt = await this.#destroyedAt(ids.filter((id) => states.get(id) === 'destroyed'));
    const keys: ManifestKey[] = ids.map((keyId) => {
      const at = destroyedAt.get(keyId);
      return { keyId, kind: kinds.get(keyId)!, state: states.get(keyId)!, ...(at ? { destroyedAt: at.toISOString() } : {}) };
    });

    const manifest: Manifest = {
      format: MANIFEST_FORMAT,
      backupId,
      version: 1,
      createdAt: createdAt.toISOString(),
      updatedAt: createdAt.toISOString(),
      keyTable: { key: keyTableKey(backupId), sha256: sha256Hex(tableBytes), keys: table.length },
      database: { key: databaseKey(backupId), sha256: sha256Hex(databaseBytes) },
      ledgerEntries: dump.tables.destruction_ledger.length,
      objects,
      keys,
    };
    await this.#backup.put(manifestKey(backupId), Buffer.from(JSON.stringify(manifest)));
    options.onProgress?.({ phase: 'manifest', done: 1, copied, reused });

    await this.#db.transaction(async (tx) => {
      await tx.insert(backups).values({ backupId, createdAt, manifestVersion: 1, objects: objects.length, keys: keys.length });
      await tx.execute(sql`insert into backup_keys (key_id, backup_id)
                           select k, ${backupId} from json_array_elements_text(${JSON.stringify(ids)}::json) as v(k)`);
      // keys already destroyed when the backup was taken are marked in version 1
      const already = keys.filter((k) => k.state === 'destroyed').map((k) => k.keyId);
      if (already.length > 0) {
        await tx.execute(sql`insert into backup_propagations (key_id, backup_id, manifest_version, propagated_at)
                             select k, ${backupId}, 1, now() from json_array_elements_text(${JSON.stringify(already)}::json) as v(k)`);
      }
    });
    // anything destroyed while we copied is marked now
    await this.propagate({ backupIds: [backupId] });
    return { backupId, createdAt, objects: objects.length, keys: keys.length, manifestVersion: 1 };
  }

  async list(): Promise<BackupSummary[]> {
    const rows = await this.#db.select().from(backups).orderBy(backups.createdAt, backups.backupId);
    return rows.map((r) => ({ backupId: r.backupId, createdAt: r.createdAt, objects: r.objects, keys: r.keys, manifestVersion: r.manifestVersion }));
  }

  /** The current manifest version. */
  async manifest(backupId: string): Promise<Manifest> {
    const [row] = await this.#db.select().from(backups).where(eq(backups.backupId, backupId));
    if (!row) throw new LetheError('not_found', 'no such backup');
    return this.#readManifest(backupId);
  }

  /**
   * Writes a new manifest version for every backup holding a destroyed key not yet
   * marked there. With `keyIds`, only those keys' backups are looked at (through the
   * key id → backups index); with `backupIds`, only those backups; with neither,
   * everything pending (start-up and the periodic catch-up). Also copies new ledger
   * rows into the backup bucket.
   */
  async propagate(options: { keyIds?: readonly string[]; backupIds?: readonly string[] } = {}): Promise<{ backups: number; keys: number }> {
    const filter = options.keyIds
      ? sql`and bk.key_id in (select json_array_elements_text(${JSON.stringify(options.keyIds)}::json))`
      : options.backupIds
        ? sql`and bk.backup_id in (select json_array_elements_text(${JSON.stringify(options.backupIds)}::json))`
        : sql``;
    const pending = await queryRows<{ backup_id: string; key_id: string; destroyed_at: Date | string }>(
      this.#db,
      sql`select bk.backup_id, bk.key_id, dl.destroyed_at
            from backup_keys bk
            join destruction_ledger dl on dl.key_id = bk.key_id
           where not exists (select 1 from backup_propagations bp where bp.key_id = bk.key_id and bp.backup_id = bk.backup_id)
           ${filter}
           order by bk.backup_id`,
    );
    const byBackup = new Map<string, Map<string, Date>>();
    for (const p of pending) {
      const m = byBackup.get(p.backup_id) ?? new Map<string, Date>();
      m.set(p.key_id, new Date(p.destroyed_at));
      byBackup.set(p.backup_id, m);
    }
    let keys = 0;
    for (const [backupId, destroyed] of byBackup) {
      await this.#db.transaction(async (tx) => {
        // one writer of a backup's manifest at a time
        const [row] = await tx.select().from(backups).where(eq(backups.backupId, backupId)).for('update');
        if (!row) return;
        // another propagation may have marked them while we waited for the lock
        const done = await tx
          .select({ keyId: backupPropagations.keyId })
          .from(backupPropagations)
          .where(sql`${backupPropagations.backupId} = ${backupId} and ${backupPropagations.keyId} in (select json_array_elements_text(${JSON.stringify([...destroyed.keys()])}::json))`);
        for (const d of done) destroyed.delete(d.keyId);
        if (destroyed.size === 0) return;
        const current = await this.#readManifest(backupId);
        const next = markDestroyed(current, destroyed, new Date());
        await this.#backup.put(manifestKey(backupId), Buffer.from(JSON.stringify(next)));
        await tx.update(backups).set({ manifestVersion: next.version }).where(eq(backups.backupId, backupId));
        const rows = [...destroyed.keys()].map((keyId) => ({ keyId, backupId, manifestVersion: next.version, propagatedAt: new Date() }));
        await tx.insert(backupPropagations).values(rows).onConflictDoNothing();
      });
      keys += destroyed.size;
    }
    // a targeted propagation copies only its own keys' ledger rows (the full scan is the catch-up's)
    await this.exportLedger(options.keyIds);
    return { backups: byBackup.size, keys };
  }

  /**
   * Copies destruction-ledger rows not yet in this backup bucket there, one object
   * each. Rows are claimed in the same transaction that writes their objects, so two
   * replicas never both write one (the second waits on the first's claim, then skips
   * it), and a failed write releases the claim.
   */
  async exportLedger(keyIds?: readonly string[]): Promise<number> {
    const bucket = this.#backup.bucket;
    const only = keyIds ? sql`and dl.key_id = any(${idArrayLiteral(keyIds)}::text[])` : sql``;
    let total = 0;
    for (;;) {
      const n = await this.#db.transaction(async (tx) => {
        const rows = await queryRows<{
          key_id: string;
          key_kind: string;
          subject_hash: Uint8Array | null;
          destroyed_at: Date | string;
          reason: string;
          wrapped_epoch: number;
          leased_until: Date | string | null;
        }>(
          tx,
          sql`with candidates as (
                select dl.* from destruction_ledger dl
                 where not exists (select 1 from ledger_exports le where le.bucket = ${bucket} and le.key_id = dl.key_id)
                 ${only}
                 order by dl.destroyed_at, dl.key_id limit 1000),
              claimed as (
                insert into ledger_exports (bucket, key_id, exported_at)
                select ${bucket}, key_id, now() from candidates
                on conflict do nothing
                returning key_id)
              select c.* from candidates c join claimed using (key_id)`,
        );
        for (const r of rows) {
          const key = ledgerObjectKey(r.key_id);
          // append-only: an existing copy is never overwritten
          if (await this.#backup.head(key)) continue;
          const body = {
            format: 'lethe-ledger-entry/1',
            keyId: r.key_id,
            keyKind: r.key_kind,
            subjectHash: r.subject_hash ? Buffer.from(r.subject_hash).toString('hex') : null,
            destroyedAt: new Date(r.destroyed_at).toISOString(),
            reason: r.reason,
            wrappedEpoch: Number(r.wrapped_epoch),
            leasedUntil: r.leased_until ? new Date(r.leased_until).toISOString() : null,
          };
          await this.#backup.put(key, Buffer.from(JSON.stringify(body)));
        }
        return rows.length;
      });
      // nothing claimed: done, or another replica holds the rest and will write them
      if (n === 0) return total;
      total += n;
    }
  }

  /**
   * Checks a backup: every stored object against its sha256, and for every key in
   * the manifest whether its data in the backup still decrypts with what lethe holds
   * (checked by the envelopes' key-commitment tags: nothing is decrypted) and whether
   * the backup's own wrapped copy of the key still unwraps.
   */
  async verify(backupId: string): Promise<Verification> {
    const manifest = await this.manifest(backupId);
    const corrupted: Verification['corrupted'] = [];
    // one envelope per key, to check against the live key
    const sample = new Map<string, Uint8Array>();
    for (const o of manifest.objects) {
      let bytes: Uint8Array;
      try {
        bytes = await this.#backup.get(o.stored);
      } catch (e) {
        if (!isLetheError(e, 'not_found')) throw e;
        corrupted.push({ key: o.key, stored: o.stored, reason: 'missing' });
        continue;
      }
      if (sha256Hex(bytes) !== o.sha256) {
        corrupted.push({ key: o.key, stored: o.stored, reason: 'sha256-mismatch' });
        continue;
      }
      for (const envelope of envelopesOf(o.key, bytes)) {
        const keyId = envelopeKeyId(envelope);
        if (!sample.has(keyId)) sample.set(keyId, envelope);
      }
    }
    const table = await this.#readKeyTable(manifest);
    const deks = await this.#keys.deksFor(manifest.keys.filter((k) => k.kind !== 'artifact-version').map((k) => k.keyId));
    const keys: VerifiedKey[] = [];
    try {
      for (const k of manifest.keys) {
        let live = deks.get(k.keyId);
        if (!live && k.kind === 'artifact-version') {
          live = await this.#versionKeys.unwrap(k.keyId).catch((e: unknown) => {
            if (isLetheError(e, 'key_destroyed')) return undefined;
            throw e;
          });
        }
        const envelope = sample.get(k.keyId);
        const decrypts = live !== undefined && envelope !== undefined && isCommittedTo(live, envelope);
        if (live && k.kind === 'artifact-version') zeroize(live);
        const copy = table.get(k.keyId);
        let wrappedCopy: VerifiedKey['wrappedCopy'] = 'none';
        if (copy) {
          try {
            zeroize(await this.#provider.unwrap(copy.epoch, copy.wrapped, k.keyId));
            wrappedCopy = 'unwraps';
          } catch (e) {
            if (!isLetheError(e, 'epoch_unavailable')) throw e;
            wrappedCopy = 'inert';
          }
        }
        keys.push({ keyId: k.keyId, state: k.state, data: decrypts ? 'decrypts' : 'unreadable', wrappedCopy, ...(copy ? { wrappedEpoch: copy.epoch } : {}) });
      }
    } finally {
      for (const dek of deks.values()) zeroize(dek);
    }
    const ok =
      corrupted.length === 0 &&
      keys.every((k) => (k.state === 'active' ? k.data === 'decrypts' : k.data === 'unreadable'));
    return { backupId, manifestVersion: manifest.version, objectsChecked: manifest.objects.length, corrupted, keys, ok };
  }

  async #readKeyTable(manifest: Manifest): Promise<Map<string, { epoch: number; wrapped: Uint8Array }>> {
    const out = new Map<string, { epoch: number; wrapped: Uint8Array }>();
    let bytes: Uint8Array;
    try {
      bytes = await this.#backup.get(manifest.keyTable.key);
    } catch (e) {
      if (isLetheError(e, 'not_found')) return out;
      throw e;
    }
    if (sha256Hex(bytes) !== manifest.keyTable.sha256) throw new LetheError('internal', 'the backup\'s key table does not match its sha256');
    const parsed = JSON.parse(Buffer.from(bytes).toString('utf8')) as { keys: Array<{ keyId: string; epoch: number; wrappedKey: string }> };
    for (const k of parsed.keys) {
      const wrapped = fromBase64Url(k.wrappedKey);
      if (wrapped) out.set(k.keyId, { epoch: k.epoch, wrapped });
    }
    return out;
  }

  /**
   * Restores a backup into this vault's database and live bucket, which must both be
   * empty of lethe data. The destruction ledger is replayed first: every key the
   * backup bucket's ledger copy, the manifest or the backup's own ledger rows say was
   * destroyed is left out of the restored key tables (its data, restored byte for
   * byte, stays unreadable) and recorded in the restored ledger. Without a readable
   * ledger copy the restore refuses, unless `force` — and then says what it could not
   * guarantee.
   */
  async restore(backupId: string, options: { force?: boolean; actor: string }): Promise<RestoreResult> {
    const manifest = await this.#readManifest(backupId).catch((e: unknown) => {
      if (isLetheError(e, 'not_found')) throw new LetheError('not_found', `no manifest for backup ${backupId} in the backup bucket`);
      throw e;
    });
    const occupied = await occupiedTables(this.#db);
    if (occupied.length > 0) throw new LetheError('conflict', `the target database is not empty (${occupied.join(', ')}): restore into a fresh one`);
    for (const prefix of BACKED_UP_PREFIXES) {
      for await (const _ of this.#live.list(prefix)) throw new LetheError('conflict', `the target bucket already holds ${prefix} objects: restore into an empty one`);
    }

    const databaseBytes = await this.#backup.get(manifest.database.key);
    if (sha256Hex(databaseBytes) !== manifest.database.sha256) throw new LetheError('validation_failed', 'the backup\'s database export does not match its sha256');
    const dump = parseDatabaseExport(databaseBytes);

    // the ledger: the append-only copy in the backup bucket, checked against what the backup knew
    const warnings: string[] = [];
    const destroyed = new Map<string, LedgerCopy>();
    const genesis = await this.#backup.head(LEDGER_GENESIS_KEY);
    for await (const o of this.#backup.list('ledger/')) {
      if (o.key === LEDGER_GENESIS_KEY) continue;
      const entry = JSON.parse(Buffer.from(await this.#backup.get(o.key)).toString('utf8')) as LedgerCopy;
      if (typeof entry.keyId === 'string') destroyed.set(entry.keyId, entry);
    }
    const knownAtBackup = dump.tables.destruction_ledger.map((r) => String(r.keyId));
    const missing = knownAtBackup.filter((k) => !destroyed.has(k));
    if (!genesis || missing.length > 0) {
      const problem = !genesis
        ? 'the ledger copy in the backup bucket is gone (ledger/genesis.json is missing)'
        : `the ledger copy in the backup bucket lacks ${missing.length} destruction(s) the backup itself records`;
      if (!options.force) {
        throw new LetheError('conflict', `${problem}: refusing to restore, since a key destroyed after this backup could come back. Restore with --force-without-ledger to proceed anyway.`);
      }
      warnings.push(
        `${problem}. Proceeding because forced: keys destroyed after this backup and recorded only in the lost ledger ARE RESTORED AS LIVE unless the manifest marks them; erase them again.`,
      );
    }
    // the manifest's marks and the backup's own ledger rows count as destructions too
    for (const k of manifest.keys) {
      if (k.state === 'destroyed' && !destroyed.has(k.keyId)) {
        destroyed.set(k.keyId, { keyId: k.keyId, keyKind: k.kind, subjectHash: null, destroyedAt: k.destroyedAt ?? manifest.updatedAt, reason: 'manifest', wrappedEpoch: -1, leasedUntil: null });
      }
    }

    // epochs: the keyring must still hold the export's active epoch, or every restored key is inert
    const activeEpoch = dump.tables.epochs.find((e) => e.state === 'active')?.epoch as number | undefined;
    const present = await this.#provider.listEpochs();
    if (activeEpoch === undefined || !present.includes(activeEpoch)) {
      throw new LetheError('conflict', `the key provider no longer holds epoch ${activeEpoch ?? '?'}, under which this backup's keys are wrapped: they are inert and nothing would decrypt`);
    }

    const restoredKeyIds = new Set<string>();
    const counts = await this.#db.transaction(async (tx) => {
      // a fresh database has its own first epoch and audit rows: the backup's replace them
      await clearForRestore(tx);
      const imported = await importDatabase(tx, dump, (table, row) => {
        if (table === 'subject_keys' || table === 'artifact_keys') {
          const keep = !destroyed.has(String(row.keyId));
          if (keep) restoredKeyIds.add(String(row.keyId));
          return keep;
        }
        if (table === 'embeddings') return !destroyed.has(String(row.keyId));
        return true;
      });
      const inLedger = new Set(knownAtBackup);
      const replay = [...destroyed.values()].filter((d) => !inLedger.has(d.keyId));
      await replayDestructions(
        tx,
        replay.map((d) => ({
          keyId: d.keyId,
          keyKind: d.keyKind === 'artifact-version' ? 'artifact-version' : 'subject',
          subjectHash: d.subjectHash ? Buffer.from(d.subjectHash, 'hex') : null,
          destroyedAt: new Date(d.destroyedAt),
          reason: `replayed at restore: ${d.reason}`,
          wrappedEpoch: d.wrappedEpoch,
          leasedUntil: d.leasedUntil ? new Date(d.leasedUntil) : null,
        })),
      );
      await this.#audit.append(tx, [
        {
          actor: options.actor,
          action: 'backup.restore',
          detail: { backupId, manifestVersion: manifest.version, replayed: replay.length, forced: options.force === true && warnings.length > 0 },
        },
      ]);
      return { imported, replayed: replay.length };
    });

    // the objects, byte for byte (frames of destroyed keys included: nothing opens them)
    let objects = 0;
    for (const o of manifest.objects) {
      const bytes = await this.#backup.get(o.stored);
      if (sha256Hex(bytes) !== o.sha256) throw new LetheError('validation_failed', `backup object ${o.stored} (${o.key}) does not match its sha256`);
      await this.#live.put(o.key, bytes);
      objects++;
    }
    // An artifact whose current version's key was destroyed after the backup (an erasure's
    // cascade regenerated it) points at text nothing opens: regenerate it from the
    // restored sources that survive, as the erasure did, or erase it when none does.
    const stale = (
      await queryRows<{ artifact_id: string }>(
        this.#db,
        sql`select a.artifact_id from artifacts a
             where a.state = 'live' and a.key_id is not null
               and not exists (select 1 from artifact_keys k where k.key_id = a.key_id)`,
      )
    ).map((r) => r.artifact_id);
    let repaired = { regenerated: 0, removed: 0 };
    if (stale.length > 0) {
      const result = await this.#artifacts.regenerate(stale, { actor: 'restore', reason: 'restore: the version key was destroyed after the backup' });
      repaired = { regenerated: result.regenerated.length, removed: result.removed.length };
    }
    return {
      backupId,
      manifestVersion: manifest.version,
      objects,
      staleArtifacts: stale.length,
      regeneratedArtifacts: repaired.regenerated,
      removedArtifacts: repaired.removed,
      keys: restoredKeyIds.size,
      entries: counts.imported.log_entries,
      artifacts: counts.imported.artifacts,
      destroyedKeys: destroyed.size,
      replayed: counts.replayed,
      ledger: warnings.length > 0 ? 'forced' : 'replayed',
      warnings,
    };
  }

  #soonKeys = new Set<string>();
  #soonAll = false;
  #soonRunning: Promise<void> | undefined;

  /**
   * Propagation in the background: errors are logged, never thrown (the periodic
   * catch-up retries). Calls that arrive while one runs are coalesced into the next
   * run (a cascade destroys one version key per regenerated artifact).
   */
  propagateSoon(keyIds?: readonly string[]): void {
    if (keyIds) for (const k of keyIds) this.#soonKeys.add(k);
    else this.#soonAll = true;
    if (this.#soonRunning) return;
    this.#soonRunning = (async () => {
      while (this.#soonAll || this.#soonKeys.size > 0) {
        const all = this.#soonAll;
        const keys = [...this.#soonKeys];
        this.#soonAll = false;
        this.#soonKeys.clear();
        await this.propagate(all ? {} : { keyIds: keys }).catch((e: unknown) =>
          this.#logger.warn({ err: describeError(e) }, 'backup manifest propagation failed; the periodic catch-up will retry'),
        );
      }
    })().finally(() => {
      this.#soonRunning = undefined;
    });
  }

  async #readManifest(backupId: string): Promise<Manifest> {
    const bytes = await this.#backup.get(manifestKey(backupId));
    const parsed = JSON.parse(Buffer.from(bytes).toString('utf8')) as Manifest;
    if (parsed.format !== MANIFEST_FORMAT || parsed.backupId !== backupId) {
      throw new LetheError('internal', 'the stored manifest is not this backup\'s');
    }
    return parsed;
  }

  async #destroyedAt(keyIds: readonly string[]): Promise<Map<string, Date>> {
    const out = new Map<string, Date>();
    for (let i = 0; i < keyIds.length; i += VALIDITY_BATCH) {
      const rows = await this.#db
        .select({ keyId: destructionLedger.keyId, destroyedAt: destructionLedger.destroyedAt })
        .from(destructionLedger)
        .where(inArray(destructionLedger.keyId, keyIds.slice(i, i + VALIDITY_BATCH)));
      for (const r of rows) out.set(r.keyId, r.destroyedAt);
    }
    return out;
  }
}

/** The envelopes an object holds: a segment's frames, or the object itself. */
function envelopesOf(objectKey: string, bytes: Uint8Array): Uint8Array[] {
  return objectKey.startsWith('log/') ? decodeSegment(bytes).map((f) => f.envelope) : [bytes];
}

/** The key ids whose data an object holds, read from its envelopes' own headers. */
export function keyIdsOf(objectKey: string, bytes: Uint8Array): string[] {
  return [...new Set(envelopesOf(objectKey, bytes).map(envelopeKeyId))].sort();
}
