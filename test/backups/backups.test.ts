/**
 * Backups on PostgreSQL and a real, versioned MinIO (fresh live and backup buckets):
 * what a backup holds, that it never holds a plaintext key, incremental copying, and
 * destructions propagating into new manifest versions of exactly the backups holding
 * the key, with the destruction ledger copied alongside.
 */
import { sql } from 'drizzle-orm';
import type { Client } from 'minio';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LEDGER_HEAD_KEY } from '../../src/backups/ledger-chain.js';
import { type Manifest, manifestKey, storedObjectKey } from '../../src/backups/manifest.js';
import type { BackupProgress, BackupSummary } from '../../src/backups/service.js';
import { queryRows } from '../../src/db/client.js';
import type { Destruction } from '../../src/vault/keys.js';
import { openTestVault, type TestVault } from '../support/vault.js';
import {
  allVersions,
  encodings,
  getVersion,
  hex,
  keyState,
  ledgerRecordOf,
  keysUnder,
  minioClient,
  minioEnv,
  readJson,
  sha256Hex,
  storedManifest,
  until,
  versionCounts,
} from './support.js';

interface KeyTable {
  format: string;
  backupId: string;
  keys: Array<{ keyId: string; kind: string; epoch: number; wrappedKey: string }>;
}
interface LedgerObject {
  format: string;
  keyId: string;
  keyKind: string;
  destroyedAt: string;
  wrappedEpoch: number;
  [field: string]: unknown;
}

describe('backups into a versioned MinIO bucket', () => {
  let tv: TestVault;
  let client: Client;
  const { env, backupBucket } = minioEnv();
  const SUBJECT_A = `user:a-${hex()}`;
  const SUBJECT_B = `user:b-${hex()}`;
  const SUBJECT_C = `user:c-${hex()}`;
  const TEXTS: ReadonlyArray<readonly [string, string]> = [
    [SUBJECT_A, `A lives at ${hex()} Quarry Lane.`],
    [SUBJECT_A, `A is allergic to ${hex()}.`],
    [SUBJECT_B, `B booked a trip, reference ${hex()}.`],
    [SUBJECT_B, `B prefers aisle seats, loyalty ${hex()}.`],
  ];
  const appended: Array<{ entryId: string; keyId: string }> = [];
  let keyA: string;
  let keyB: string;
  let artifactId: string;
  let artifactKeyV1: string;
  let first: BackupSummary;
  let second: BackupSummary;
  let afterDestruction: BackupSummary;
  let destructionA: Destruction;
  let ledgerA: { etag: string; bytes: Buffer; record: string };

  const v = () => tv.vault;
  const backupStore = () => tv.vault.backups.store;
  const manifestVersions = async () => new Map((await v().backups.list()).map((b) => [b.backupId, b.manifestVersion]));
  /** Every version MinIO keeps of a backup's manifest, parsed. */
  const storedVersionsOf = async (backupId: string): Promise<Manifest[]> => {
    const versions = await allVersions(client, backupBucket, manifestKey(backupId));
    const out: Manifest[] = [];
    for (const ver of versions) out.push(JSON.parse(Buffer.from(await getVersion(client, backupBucket, ver.name, ver.versionId)).toString('utf8')) as Manifest);
    return out.sort((a, b) => a.version - b.version);
  };
  /** Waits until the DB and the bucket both show `version` for each backup (the background propagation committed). */
  const untilVersions = (wanted: Record<string, number>) =>
    until(
      `manifest versions ${JSON.stringify(wanted)}`,
      async () => {
        const listed = await manifestVersions();
        const stored: Record<string, number> = {};
        for (const id of Object.keys(wanted)) stored[id] = (await storedManifest(backupStore(), id)).version;
        return { listed: Object.fromEntries(Object.keys(wanted).map((id) => [id, listed.get(id)])), stored };
      },
      (s) => Object.entries(wanted).every(([id, n]) => s.listed[id] === n && s.stored[id] === n),
    );
  const untilLedgerObject = (keyId: string) =>
    until(`the ledger chain record of ${keyId}`, () => ledgerRecordOf(backupStore(), keyId), (h) => h !== undefined) as Promise<string>;
  /** The destruction of `keyId` as the ledger chain record holding it says. */
  const ledgerEntryOf = async (keyId: string): Promise<{ entry: LedgerObject; record: string; raw: string }> => {
    const record = await untilLedgerObject(keyId);
    const raw = Buffer.from(await backupStore().get(record)).toString('utf8');
    const entry = (JSON.parse(raw) as { destructions: LedgerObject[] }).destructions.find((d) => d.keyId === keyId)!;
    return { entry, record, raw };
  };

  beforeAll(async () => {
    tv = await openTestVault({ extraEnv: env });
    client = minioClient();
    for (const [subject, text] of TEXTS) {
      appended.push(await v().log.append(subject, { text }, 'writer'));
    }
    keyA = appended[0]!.keyId;
    keyB = appended[2]!.keyId;
    const summary = await v().artifacts.write(
      { kind: 'summary', text: `${TEXTS[0]![1]} ${TEXTS[2]![1]}`, sources: [appended[0]!.entryId, appended[2]!.entryId] },
      'writer',
    );
    expect(summary.subjects).toBe(2);
    artifactId = summary.artifactId;
    const [row] = await queryRows<{ key_id: string }>(v().db.db, sql`select key_id from artifacts where artifact_id = ${artifactId}`);
    artifactKeyV1 = row!.key_id;
  });
  afterAll(async () => {
    await tv?.close();
  });

  it('writes manifest version 1 listing every log and artifact object with its sha256 and the key ids of its data, every key active', async () => {
    first = await v().backups.run();
    expect(first.manifestVersion).toBe(1);

    // the live bucket, recomputed independently of the backup job
    const live = new Map<string, string>();
    for (const prefix of ['log/', 'artifacts/']) {
      for (const key of await keysUnder(v().objects, prefix)) live.set(key, sha256Hex(await v().objects.get(key)));
    }
    expect(live.size).toBe(5); // four one-entry segments and one artifact version

    const m = await storedManifest(backupStore(), first.backupId);
    expect(await v().backups.manifest(first.backupId)).toEqual(m);
    expect(m).toMatchObject({ backupId: first.backupId, version: 1 });
    expect(new Map(m.objects.map((o) => [o.key, o.sha256]))).toEqual(live);
    expect(m.objects).toHaveLength(live.size);
    expect(first.objects).toBe(live.size);

    // key ids: a segment's are its entries' keys (from the append results); the artifact's is its version key
    const keyOfEntry = new Map(appended.map((a) => [a.entryId, a.keyId]));
    const placed = await queryRows<{ entry_id: string; segment: string }>(v().db.db, sql`select entry_id, segment from log_entries`);
    for (const o of m.objects) {
      if (o.key.startsWith('log/')) {
        const expected = [...new Set(placed.filter((p) => p.segment === o.key).map((p) => keyOfEntry.get(p.entry_id)!))].sort();
        expect(expected.length).toBeGreaterThan(0);
        expect(o.keyIds).toEqual(expected);
      } else {
        expect(o.key.startsWith(`artifacts/${artifactId}/`)).toBe(true);
        expect(o.keyIds).toEqual([artifactKeyV1]);
      }
      // and the stored copy is those very bytes, content-addressed
      expect(o.stored).toBe(storedObjectKey(o.sha256));
      expect(sha256Hex(await backupStore().get(o.stored))).toBe(o.sha256);
    }
    expect(m.objects.filter((o) => o.keyIds.includes(keyA))).toHaveLength(2);
    expect(m.objects.filter((o) => o.keyIds.includes(keyB))).toHaveLength(2);

    expect(m.keys.map((k) => k.keyId).sort()).toEqual([keyA, keyB, artifactKeyV1].sort());
    for (const k of m.keys) {
      expect(k.state).toBe('active');
      expect(k.destroyedAt).toBeUndefined();
    }
    expect(keyState(m, keyA)?.kind).toBe('subject');
    expect(keyState(m, artifactKeyV1)?.kind).toBe('artifact-version');
    expect(first.keys).toBe(3);
    expect(m.ledgerEntries).toBe(0);
  });

  it('exports the key table as wrapped keys only: no DEK (nor entry text) in it nor in any object of the backup bucket', async () => {
    const m = await storedManifest(backupStore(), first.backupId);
    expect(sha256Hex(await backupStore().get(m.database.key))).toBe(m.database.sha256);
    const tableBytes = Buffer.from(await backupStore().get(m.keyTable.key));
    expect(sha256Hex(tableBytes)).toBe(m.keyTable.sha256);
    const table = JSON.parse(tableBytes.toString('utf8')) as KeyTable;
    expect(table.keys.map((k) => k.keyId).sort()).toEqual([keyA, keyB, artifactKeyV1].sort());

    // what it holds is the key table's wrapped DEKs, byte for byte
    const wrapped = await queryRows<{ key_id: string; wrapped: Uint8Array }>(
      v().db.db,
      sql`select key_id, wrapped_dek as wrapped from subject_keys union all select key_id, wrapped_dek as wrapped from artifact_keys`,
    );
    expect(wrapped).toHaveLength(3);
    for (const w of wrapped) {
      expect(table.keys.find((k) => k.keyId === w.key_id)?.wrappedKey).toBe(Buffer.from(w.wrapped).toString('base64url'));
    }

    const deks: Array<[string, Uint8Array]> = [
      ['A', (await v().keys.dekFor(keyA)).dek],
      ['B', (await v().keys.dekFor(keyB)).dek],
      ['artifact v1', await v().versionKeys.unwrap(artifactKeyV1, 'artifact-version')],
    ];
    const everything = await keysUnder(backupStore(), '');
    expect(everything).toContain(m.keyTable.key);
    let searched = 0;
    for (const key of everything) {
      const bytes = Buffer.from(await backupStore().get(key));
      for (const [who, dek] of deks) {
        for (const [form, needle] of encodings(dek)) {
          expect(bytes.includes(needle), `${who}'s DEK (${form}) in ${key}`).toBe(false);
          searched++;
        }
      }
    }
    expect(searched).toBe(everything.length * deks.length * 4);
    for (const key of everything) {
      const text = Buffer.from(await backupStore().get(key)).toString('utf8');
      for (const [, plain] of TEXTS) expect(text, `entry text in ${key}`).not.toContain(plain);
    }
    for (const [, dek] of deks) dek.fill(0);
  });

  it('copies nothing on a second backup when nothing is new, and references the same stored objects', async () => {
    const before = await keysUnder(backupStore(), 'objects/');
    const progress: BackupProgress[] = [];
    second = await v().backups.run({ onProgress: (p) => progress.push(p) });
    const after = await keysUnder(backupStore(), 'objects/');
    expect(after).toEqual(before);
    expect(progress.at(-1)).toMatchObject({ phase: 'manifest', copied: 0, reused: before.length });

    const m1 = await storedManifest(backupStore(), first.backupId);
    const m2 = await storedManifest(backupStore(), second.backupId);
    expect(second.backupId).not.toBe(first.backupId);
    expect(m2.version).toBe(1);
    expect(m2.objects.map((o) => [o.key, o.stored])).toEqual(m1.objects.map((o) => [o.key, o.stored]));
    expect(m2.keyTable.key).not.toBe(m1.keyTable.key);
  });

  it("marks A's key destroyed in a new version of every earlier manifest and keeps the old version in the bucket", async () => {
    destructionA = await v().keys.destroyKey(keyA, { reason: 'erasure', actor: 'eraser' });
    expect(destructionA.destroyedNow).toBe(true);
    await untilVersions({ [first.backupId]: 2, [second.backupId]: 2 });

    for (const b of [first, second]) {
      const m = await storedManifest(backupStore(), b.backupId);
      expect(await v().backups.manifest(b.backupId)).toEqual(m);
      expect(m.version).toBe(2);
      expect(keyState(m, keyA)).toMatchObject({ state: 'destroyed', destroyedAt: destructionA.destroyedAt.toISOString() });
      expect(keyState(m, keyB)?.state).toBe('active');
      expect(keyState(m, keyB)?.destroyedAt).toBeUndefined();
      expect(keyState(m, artifactKeyV1)?.state).toBe('active');

      // MinIO keeps version 1 as it was
      const versions = await storedVersionsOf(b.backupId);
      expect(versions.map((x) => x.version)).toEqual([1, 2]);
      expect(keyState(versions[0]!, keyA)?.state).toBe('active');
      expect(versions[0]!.objects).toEqual(m.objects);
    }
  });

  it("records A's destruction in the backup bucket's ledger chain (ledger/chain/), MAC'd, with no subject id", async () => {
    const { entry, record, raw } = await ledgerEntryOf(keyA);
    expect(entry).toMatchObject({ keyId: keyA, destroyedAt: destructionA.destroyedAt.toISOString(), wrappedEpoch: destructionA.wrappedEpoch });
    expect(raw).not.toContain(SUBJECT_A);
    expect(Object.keys(entry)).not.toContain('subject');
    expect(JSON.parse(raw)).toMatchObject({ format: 'lethe-ledger-chain/1', mac: expect.stringMatching(/^[0-9a-f]{64}$/), prev: expect.stringMatching(/^[0-9a-f]{64}$/) });
    expect((await v().backups.ledgerChain()).entries.get(keyA)).toEqual(entry);
    const stat = await client.statObject(backupBucket, record);
    ledgerA = { etag: stat.etag, bytes: Buffer.from(raw), record };
    expect((await allVersions(client, backupBucket, record)).length).toBe(1);
  });

  it('marks a key already destroyed when the backup is taken in version 1, and writes no version 2 for it', async () => {
    afterDestruction = await v().backups.run();
    const m = await storedManifest(backupStore(), afterDestruction.backupId);
    expect(m.version).toBe(1);
    expect(m.ledgerEntries).toBe(1);
    // A's segments are still in the live bucket (shredded, not deleted), so A's key is held
    expect(m.objects.filter((o) => o.keyIds.includes(keyA))).toHaveLength(2);
    expect(keyState(m, keyA)).toMatchObject({ state: 'destroyed', destroyedAt: destructionA.destroyedAt.toISOString() });
    expect(keyState(m, keyB)?.state).toBe('active');
    // and it is not in the key table any more: there is no wrapped DEK of it to export
    const table = await readJson<KeyTable>(backupStore(), m.keyTable.key);
    expect(table.keys.map((k) => k.keyId)).not.toContain(keyA);

    expect(await v().backups.propagate()).toEqual({ backups: 0, keys: 0 });
    expect((await manifestVersions()).get(afterDestruction.backupId)).toBe(1);
    expect(await allVersions(client, backupBucket, manifestKey(afterDestruction.backupId))).toHaveLength(1);
  });

  it("marks the artifact's version-1 key destroyed in the manifests that hold it once regeneration destroys it", async () => {
    const result = await v().artifacts.regenerate([artifactId], { actor: 't' });
    expect(result.regenerated).toEqual([{ artifactId, version: 2 }]);
    // destroyed at once; acknowledged `destroyed` once the ledger chain holds it (the background write)
    expect((await v().keys.validity([artifactKeyV1]))[artifactKeyV1]).toMatch(/^(destruction_pending|destroyed)$/);
    await until('the version key durable', () => v().keys.validity([artifactKeyV1]), (s) => s[artifactKeyV1] === 'destroyed');
    const [row] = await queryRows<{ key_id: string }>(v().db.db, sql`select key_id from artifacts where artifact_id = ${artifactId}`);
    const artifactKeyV2 = row!.key_id;
    expect(artifactKeyV2).not.toBe(artifactKeyV1);

    await untilVersions({ [first.backupId]: 3, [second.backupId]: 3, [afterDestruction.backupId]: 2 });
    await untilLedgerObject(artifactKeyV1);
    const [ledgerRow] = await queryRows<{ destroyed_at: Date | string }>(
      v().db.db,
      sql`select destroyed_at from destruction_ledger where key_id = ${artifactKeyV1}`,
    );
    const destroyedAt = new Date(ledgerRow!.destroyed_at).toISOString();
    for (const b of [first, second, afterDestruction]) {
      const m = await storedManifest(backupStore(), b.backupId);
      expect(keyState(m, artifactKeyV1)).toMatchObject({ state: 'destroyed', destroyedAt });
      expect(keyState(m, keyA)?.state).toBe('destroyed');
      expect(keyState(m, keyB)?.state).toBe('active');
      // the new version's key was never in these backups
      expect(keyState(m, artifactKeyV2)).toBeUndefined();
    }
    const artifactLedger = (await ledgerEntryOf(artifactKeyV1)).entry;
    expect(artifactLedger).toMatchObject({ keyId: artifactKeyV1, keyKind: 'artifact-version', destroyedAt });

    // A's ledger record was not written again by these propagations
    expect((await client.statObject(backupBucket, ledgerA.record)).etag).toBe(ledgerA.etag);
    expect(Buffer.from(await backupStore().get(ledgerA.record))).toEqual(ledgerA.bytes);
    expect(await allVersions(client, backupBucket, ledgerA.record)).toHaveLength(1);
  });

  it('writes no new version when propagation runs again with nothing new', async () => {
    await v().backups.idle();
    const versionsBefore = await versionCounts(client, backupBucket, '');
    const listedBefore = await manifestVersions();
    expect(await v().backups.propagate()).toEqual({ backups: 0, keys: 0 });
    expect(await v().backups.propagate({ keyIds: [keyA, artifactKeyV1] })).toEqual({ backups: 0, keys: 0 });
    expect(await versionCounts(client, backupBucket, '')).toEqual(versionsBefore);
    expect(await manifestVersions()).toEqual(listedBefore);
  });

  it('names keys by key id only: no subject id in any manifest version, key table, database export or ledger object', async () => {
    const versions = [...(await allVersions(client, backupBucket, 'backups/')), ...(await allVersions(client, backupBucket, 'ledger/'))];
    const count = (test: (name: string) => boolean) => versions.filter((ver) => test(ver.name)).length;
    // 3 + 3 + 2 manifest versions; a key table and a database export per backup; the ledger chain's records and its head
    expect(count((n) => n.endsWith('/manifest.json'))).toBe(8);
    expect(count((n) => n.endsWith('/keys.json'))).toBe(3);
    expect(count((n) => n.endsWith('/database.json'))).toBe(3);
    const ledgerNames = versions.filter((ver) => ver.name.startsWith('ledger/')).map((ver) => ver.name);
    expect(ledgerNames.every((n) => n === LEDGER_HEAD_KEY || /^ledger\/chain\/\d{16}\.json$/.test(n)), ledgerNames.join(' ')).toBe(true);
    expect(ledgerNames).toContain(ledgerA.record);
    expect(ledgerNames).toContain(await ledgerRecordOf(backupStore(), artifactKeyV1));
    // each chain record is written once
    const records = ledgerNames.filter((n) => n !== LEDGER_HEAD_KEY);
    expect(new Set(records).size).toBe(records.length);
    let read = 0;
    for (const ver of versions) {
      const text = Buffer.from(await getVersion(client, backupBucket, ver.name, ver.versionId)).toString('utf8');
      for (const subject of [SUBJECT_A, SUBJECT_B]) expect(text, `${subject} in ${ver.name}@${ver.versionId}`).not.toContain(subject);
      read++;
    }
    expect(read).toBe(8 + 3 + 3 + ledgerNames.length);
  });

  it('writes new versions of exactly the backups holding a key when it is destroyed (cost follows the backups affected)', async () => {
    const early = [await v().backups.run(), await v().backups.run(), await v().backups.run()];
    const keyC = (await v().log.append(SUBJECT_C, { text: 'C adopted a cat.' }, 'writer')).keyId;
    const late = [await v().backups.run(), await v().backups.run()];
    for (const b of early) expect(keyState(await storedManifest(backupStore(), b.backupId), keyC)).toBeUndefined();
    for (const b of late) expect(keyState(await storedManifest(backupStore(), b.backupId), keyC)?.state).toBe('active');

    const listedBefore = await manifestVersions();
    expect(listedBefore.size).toBe(3 + 5);
    const manifestsBefore = await versionCounts(client, backupBucket, 'backups/');

    await v().keys.destroyKey(keyC, { reason: 'erasure', actor: 'eraser' });
    await untilVersions(Object.fromEntries(late.map((b) => [b.backupId, 2])));
    await untilLedgerObject(keyC);

    const listedAfter = await manifestVersions();
    const changed = [...listedAfter].filter(([id, n]) => listedBefore.get(id) !== n).map(([id]) => id);
    expect(changed.sort()).toEqual(late.map((b) => b.backupId).sort());
    const manifestsAfter = await versionCounts(client, backupBucket, 'backups/');
    for (const [name, n] of manifestsBefore) {
      const grew = late.some((b) => name === manifestKey(b.backupId));
      expect(manifestsAfter.get(name), name).toBe(grew ? n + 1 : n);
    }
    for (const b of late) expect(keyState(await storedManifest(backupStore(), b.backupId), keyC)?.state).toBe('destroyed');
  });
});
