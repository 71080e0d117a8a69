/**
 * Backups on PostgreSQL and a real, versioned MinIO (fresh live and backup buckets):
 * what a backup holds, that it never holds a plaintext key, incremental copying, and
 * destructions reaching exactly the backups holding the key through the ledger chain —
 * folded into their manifests, which are written once and never rewritten.
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

  const v = () => tv.app;
  const backupStore = () => tv.app.backups.store;
  const manifestVersions = async () => new Map((await v().backups.list()).map((b) => [b.backupId, b.manifestVersion]));
  /** Every version MinIO keeps of a backup's manifest, parsed. */
  const storedVersionsOf = async (backupId: string): Promise<Manifest[]> => {
    const versions = await allVersions(client, backupBucket, manifestKey(backupId));
    const out: Manifest[] = [];
    for (const ver of versions) out.push(JSON.parse(Buffer.from(await getVersion(client, backupBucket, ver.name, ver.versionId)).toString('utf8')) as Manifest);
    return out.sort((a, b) => a.version - b.version);
  };
  /**
   * Waits until each backup's folded manifest (GET .../manifest) marks `keyId` destroyed —
   * through the ledger chain, the stored manifest untouched (version 1, its only version).
   */
  const untilFolded = (keyId: string, backupIds: readonly string[]) =>
    until(
      `${keyId} destroyed in the folded manifests of ${backupIds.join(', ')}`,
      async () => Promise.all(backupIds.map(async (id) => keyState(await v().backups.manifest(id), keyId)?.state)),
      (states) => states.every((st) => st === 'destroyed'),
    );
  const untilLedgerObject = (keyId: string) =>
    until(
      `the ledger chain record of ${keyId}`,
      () => ledgerRecordOf(backupStore(), keyId),
      (h) => h !== undefined,
    ) as Promise<string>;
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
    // nothing destroyed yet: the folded view is the stored manifest, its MAC carried as the base's
    const { mac, ...rest } = m;
    expect(await v().backups.manifest(first.backupId)).toEqual({ ...rest, base: { version: 1, mac }, overlay: { destroyed: 0, through: null } });
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

  it("marks A's key destroyed in every earlier backup's folded manifest through the ledger chain, the stored manifests untouched", async () => {
    destructionA = await v().keys.destroyKey(keyA, { reason: 'erasure', actor: 'eraser' });
    expect(destructionA.destroyedNow).toBe(true);
    await untilFolded(keyA, [first.backupId, second.backupId]);
    const record = await untilLedgerObject(keyA);
    const seq = Number(/(\d{16})\.json$/.exec(record)![1]);

    for (const b of [first, second]) {
      const folded = await v().backups.manifest(b.backupId);
      expect(keyState(folded, keyA)).toMatchObject({ state: 'destroyed', destroyedAt: destructionA.destroyedAt.toISOString() });
      expect(keyState(folded, keyB)?.state).toBe('active');
      expect(keyState(folded, keyB)?.destroyedAt).toBeUndefined();
      expect(keyState(folded, artifactKeyV1)?.state).toBe('active');
      expect(folded.overlay).toEqual({ destroyed: 1, through: seq });

      // the stored manifest is the base, as written with the backup: one version, A active, its MAC the folded view's base
      const versions = await storedVersionsOf(b.backupId);
      expect(versions.map((x) => x.version)).toEqual([1]);
      const base = versions[0]!;
      expect(keyState(base, keyA)?.state).toBe('active');
      expect(folded.base).toEqual({ version: 1, mac: base.mac });
      expect(folded.objects).toEqual(base.objects);
      expect(folded.version).toBe(1);
    }
  });

  it("records A's destruction in the backup bucket's ledger chain (ledger/chain/), MAC'd, with no subject id", async () => {
    const { entry, record, raw } = await ledgerEntryOf(keyA);
    expect(entry).toMatchObject({ keyId: keyA, destroyedAt: destructionA.destroyedAt.toISOString(), wrappedEpoch: destructionA.wrappedEpoch });
    expect(raw).not.toContain(SUBJECT_A);
    expect(Object.keys(entry)).not.toContain('subject');
    expect(JSON.parse(raw)).toMatchObject({
      format: 'lethe-ledger-chain/1',
      mac: expect.stringMatching(/^[0-9a-f]{64}$/),
      prev: expect.stringMatching(/^[0-9a-f]{64}$/),
    });
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

    expect(await v().backups.propagate()).toEqual({ records: 0, backups: 0, keys: 0 });
    expect((await manifestVersions()).get(afterDestruction.backupId)).toBe(1);
    // the base marks it; the chain adds nothing for this backup
    expect((await v().backups.manifest(afterDestruction.backupId)).overlay).toEqual({ destroyed: 0, through: null });
    expect(await allVersions(client, backupBucket, manifestKey(afterDestruction.backupId))).toHaveLength(1);
  });

  it("marks the artifact's version-1 key destroyed in the folded manifests that hold it once regeneration destroys it", async () => {
    const result = await v().artifacts.regenerate([artifactId], { actor: 't' });
    expect(result.regenerated).toEqual([{ artifactId, version: 2 }]);
    // destroyed at once; acknowledged `destroyed` once the ledger chain holds it (the background write)
    expect((await v().keys.validity([artifactKeyV1]))[artifactKeyV1]).toMatch(/^(destruction_pending|destroyed)$/);
    await until(
      'the version key durable',
      () => v().keys.validity([artifactKeyV1]),
      (s) => s[artifactKeyV1] === 'destroyed',
    );
    const [row] = await queryRows<{ key_id: string }>(v().db.db, sql`select key_id from artifacts where artifact_id = ${artifactId}`);
    const artifactKeyV2 = row!.key_id;
    expect(artifactKeyV2).not.toBe(artifactKeyV1);

    await untilFolded(artifactKeyV1, [first.backupId, second.backupId, afterDestruction.backupId]);
    await untilLedgerObject(artifactKeyV1);
    const [ledgerRow] = await queryRows<{ destroyed_at: Date | string }>(
      v().db.db,
      sql`select destroyed_at from destruction_ledger where key_id = ${artifactKeyV1}`,
    );
    const destroyedAt = new Date(ledgerRow!.destroyed_at).toISOString();
    for (const b of [first, second, afterDestruction]) {
      const m = await v().backups.manifest(b.backupId);
      expect(await storedVersionsOf(b.backupId)).toHaveLength(1);
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

  it('writes nothing when propagation runs again with nothing new', async () => {
    await v().backups.idle();
    const versionsBefore = await versionCounts(client, backupBucket, '');
    const listedBefore = await manifestVersions();
    expect(await v().backups.propagate()).toEqual({ records: 0, backups: 0, keys: 0 });
    expect(await v().backups.propagate({ keyIds: [keyA, artifactKeyV1] })).toEqual({ records: 0, backups: 0, keys: 0 });
    expect(await versionCounts(client, backupBucket, '')).toEqual(versionsBefore);
    expect(await manifestVersions()).toEqual(listedBefore);
  });

  it('names keys by key id only: no subject id in any manifest version, key table, database export or ledger object', async () => {
    const versions = [...(await allVersions(client, backupBucket, 'backups/')), ...(await allVersions(client, backupBucket, 'ledger/'))];
    const count = (test: (name: string) => boolean) => versions.filter((ver) => test(ver.name)).length;
    // one manifest version per backup (never rewritten); a key table and a database export per backup; the ledger chain's records and its head
    expect(count((n) => n.endsWith('/manifest.json'))).toBe(3);
    expect(count((n) => n.endsWith('/keys.json'))).toBe(3);
    expect(count((n) => n.endsWith('/database.json'))).toBe(3);
    const ledgerNames = versions.filter((ver) => ver.name.startsWith('ledger/')).map((ver) => ver.name);
    expect(
      ledgerNames.every((n) => n === LEDGER_HEAD_KEY || /^ledger\/chain\/\d{16}\.json$/.test(n)),
      ledgerNames.join(' '),
    ).toBe(true);
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
    expect(read).toBe(3 + 3 + 3 + ledgerNames.length);
  });

  it('reaches exactly the backups holding a key when it is destroyed, writing only the ledger chain (no manifest)', async () => {
    const early = [await v().backups.run(), await v().backups.run(), await v().backups.run()];
    const keyC = (await v().log.append(SUBJECT_C, { text: 'C adopted a cat.' }, 'writer')).keyId;
    const late = [await v().backups.run(), await v().backups.run()];
    for (const b of early) expect(keyState(await storedManifest(backupStore(), b.backupId), keyC)).toBeUndefined();
    for (const b of late) expect(keyState(await storedManifest(backupStore(), b.backupId), keyC)?.state).toBe('active');

    const listedBefore = await manifestVersions();
    expect(listedBefore.size).toBe(3 + 5);
    await v().backups.idle();
    const before = await versionCounts(client, backupBucket, '');

    await v().keys.destroyKey(keyC, { reason: 'erasure', actor: 'eraser' });
    await untilFolded(
      keyC,
      late.map((b) => b.backupId),
    );
    const record = await untilLedgerObject(keyC);
    await v().backups.idle();
    expect({ holding: await v().backups.holding(keyC), marked: await v().backups.marked(keyC) }).toEqual({ holding: 2, marked: 2 });

    // what was written: one chain record and a new version of the head; no manifest, nothing else
    expect(await manifestVersions()).toEqual(listedBefore);
    const after = await versionCounts(client, backupBucket, '');
    const grew = [...after].filter(([name, n]) => (before.get(name) ?? 0) !== n).map(([name, n]) => [name, n - (before.get(name) ?? 0)]);
    expect(grew.sort()).toEqual(
      [
        [LEDGER_HEAD_KEY, 1],
        [record, 1],
      ].sort(),
    );
    for (const b of early) expect(keyState(await v().backups.manifest(b.backupId), keyC)).toBeUndefined();
  });
});
