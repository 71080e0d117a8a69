/**
 * The ledger chain anchored against someone who can delete from the backup bucket (the
 * service's own credential, or a folder's owner): cutting the chain's tail — and putting
 * an older head back — leaves an intact prefix that verifies on its own. A restore
 * compares the chain with every witness of a later point (the restored backup's own
 * manifest, every other manifest, the mirrored head, certificates and head files handed
 * to it) and refuses, naming the witness; the running service notices the cut, says so,
 * and writes nothing over the gap until it is repaired. On PostgreSQL with the local
 * folder and with a real MinIO (governance Object Lock bypassed, as lethe's own
 * credential may).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../src/app/open.js';
import { chainRecordKey, LEDGER_HEAD_KEY } from '../../src/backups/ledger-chain.js';
import { manifestKey } from '../../src/backups/manifest.js';
import { callVault, tag } from '../erasure/fixtures.js';
import { ok } from '../support/http.js';
import { createTestDatabase, type TestDatabase } from '../support/pg.js';
import { openTestApp, openTestVault, type TestApp, type TestVault } from '../support/vault.js';
import { allVersions, getVersion, minioClient, minioEnv, readJson, until } from './support.js';

type Head = { seq: number; record: string };

/** A fresh database and live bucket with the source's keyring, root key and backup bucket. */
async function targetOf(source: TestVault, targets: TestDatabase[], extraEnv: Record<string, string> = {}): Promise<App> {
  const db = await createTestDatabase();
  targets.push(db);
  return source.reopen({ listen: false }, { DATABASE_URL: db.url, S3_BUCKET: `lethe-anchor-r-${tag(4)}`, ...extraEnv });
}

async function refusal(restoring: Promise<unknown>): Promise<string> {
  const e = await restoring.then(
    () => undefined,
    (err: unknown) => err as Error & { code?: string },
  );
  expect(e, 'the restore was not refused').toBeDefined();
  expect(e!.code, e!.message).toBe('conflict');
  return e!.message;
}

describe('a cut ledger chain on the local folder', () => {
  let tv: TestApp;
  const targets: TestDatabase[] = [];
  let backupId = '';
  const alice = { entryId: '', keyId: '' };
  const bob = { entryId: '', keyId: '' };

  beforeAll(async () => {
    // the periodic check every second: "the running service alarms within a minute"
    tv = await openTestApp({ extraEnv: { LETHE_BACKUP_PROPAGATE_SECONDS: '86400', LETHE_LEDGER_CHECK_SECONDS: '1' } });
    Object.assign(alice, await tv.app.log.append(`user:anchor-a-${tag()}`, { text: `alice lives at ${tag()} Rose Street` }, 'writer'));
    Object.assign(bob, await tv.app.log.append(`user:anchor-b-${tag()}`, { text: `bob keeps bees ${tag()}` }, 'writer'));
    backupId = (await tv.app.backups.run()).backupId;
    await tv.app.keys.destroyKey(alice.keyId, { reason: 'erasure', actor: 'eraser' });
    expect((await tv.app.backups.awaitDurable([alice.keyId], 30_000)).pending).toEqual([]);
  }, 120_000);
  afterAll(async () => {
    await tv?.close();
    for (const db of targets) await db.drop().catch(() => {});
  });

  it('is anchored and restores as before while nothing is cut', async () => {
    expect(await tv.app.backups.checkAnchor()).toBeUndefined();
    const restored = await targetOf(tv, targets);
    expect(await restored.backups.restore(backupId, { actor: 'test' })).toMatchObject({ ledger: 'replayed', warnings: [] });
    await expect(restored.log.get(alice.entryId)).rejects.toMatchObject({ code: 'key_destroyed' });
  });

  it("refuses a restore once the head and every record after the genesis are deleted (the chain no longer records the backup's own manifest); forced, it names the keys it brings back", async () => {
    const store = tv.app.backups.store;
    for await (const o of store.list('ledger/chain/')) if (o.key !== chainRecordKey(0)) await store.delete(o.key);
    await store.delete(LEDGER_HEAD_KEY);

    const message = await refusal((await targetOf(tv, targets)).backups.restore(backupId, { actor: 'test' }));
    expect(message).toMatch(new RegExp(`does not record backup ${backupId}'s own manifest`));
    expect(message).toContain('--force-without-ledger');

    const forced = await (await targetOf(tv, targets)).backups.restore(backupId, { actor: 'test', force: true });
    expect(forced.ledger).toBe('forced');
    const warning = forced.warnings.join(' ');
    expect(warning).toContain('RESTORED AS LIVE');
    // the warning names the keys it brings back: alice's, destroyed after the backup, among them
    expect(warning).toContain(alice.keyId);
  });

  it('the running service alarms within its check interval (/readyz degraded, the metric, refuses to write over the gap) until the records are put back', async () => {
    const ready = await until(
      'readyz to report the cut chain',
      async () =>
        (await tv.call('GET', '/readyz', { role: 'none' })).json() as Promise<{ status: string; checks: Record<string, string>; warnings?: string[] }>,
      (r) => r.checks.ledgerChain === 'failed',
    );
    expect(ready.status).toBe('degraded');
    expect(ready.warnings?.join(' ')).toMatch(/ledger chain in the backup bucket was cut: .*gone/);
    const metrics = await (await tv.call('GET', '/metrics', { role: 'none' })).text();
    expect(metrics).toMatch(/^lethe_ledger_chain_cut 1$/m);

    // a destruction now is not written over the gap: it stays pending (the key is unusable all the same)
    await tv.app.keys.destroyKey(bob.keyId, { reason: 'erasure', actor: 'eraser' });
    const waited = await tv.app.backups.awaitDurable([bob.keyId], 1500);
    expect(waited.pending).toEqual([bob.keyId]);
    expect(waited.error).toMatch(/not writing the ledger chain over the gap/);
    expect(await tv.app.backups.store.head(LEDGER_HEAD_KEY)).toBeUndefined();

    // repaired from the database's own copy, byte for byte: the chain is whole again and the destruction goes through
    const putBack = await tv.app.backups.repairLedger();
    expect(putBack.length).toBeGreaterThan(0);
    expect(await tv.app.backups.checkAnchor()).toBeUndefined();
    expect((await tv.app.backups.awaitDurable([bob.keyId], 30_000)).pending).toEqual([]);
    expect(await tv.app.backups.ledgerChain()).toMatchObject({ present: true });
    const restored = await targetOf(tv, targets);
    expect(await restored.backups.restore(backupId, { actor: 'test' })).toMatchObject({ ledger: 'replayed', warnings: [] });
    await expect(restored.log.get(alice.entryId)).rejects.toMatchObject({ code: 'key_destroyed' });
    await expect(restored.log.get(bob.entryId)).rejects.toMatchObject({ code: 'key_destroyed' });
  });

  it('the periodic check also finds a record removed from the middle (the last one and the head kept), until it is put back', async () => {
    const head = await readJson<Head>(tv.app.backups.store, LEDGER_HEAD_KEY);
    expect(head.seq).toBeGreaterThan(1);
    await tv.app.backups.store.delete(chainRecordKey(1));
    const ready = await until(
      'readyz to report the middle record gone',
      async () => (await tv.call('GET', '/readyz', { role: 'none' })).json() as Promise<{ checks: Record<string, string>; warnings?: string[] }>,
      (r) => r.checks.ledgerChain === 'failed',
    );
    expect(ready.warnings?.join(' ')).toMatch(
      /record 1 \(ledger\/chain\/0000000000000001\.json\).* gone in the backup bucket: a record in the middle of the chain/,
    );
    expect(await tv.app.backups.repairLedger()).toEqual([1]);
    await until(
      'readyz to report the chain whole',
      async () => (await tv.call('GET', '/readyz', { role: 'none' })).json() as Promise<{ checks: Record<string, string> }>,
      (r) => r.checks.ledgerChain === 'ok',
    );
  });
});

describe('a cut ledger chain on MinIO (the tail purged with the governance bypass, an older head taking over)', () => {
  let tv: TestVault;
  const targets: TestDatabase[] = [];
  const { env, backupBucket } = minioEnv();
  const client = minioClient();
  const witnessDir = mkdtempSync(path.join(tmpdir(), 'lethe-witness-'));
  const emptyWitnessDir = mkdtempSync(path.join(tmpdir(), 'lethe-witness-empty-'));
  let first = '';
  let second = '';
  let erasureId = '';
  let certificate: unknown;
  let savedHead: Uint8Array = new Uint8Array();
  let aliceEntry = '';
  let aliceKey = '';
  /** The record that holds the first backup's manifest: the cut keeps it and removes everything after. */
  let keep = 0;

  async function purge(key: string): Promise<void> {
    for (const v of await allVersions(client, backupBucket, key))
      await client.removeObject(backupBucket, key, { versionId: v.versionId, governanceBypass: true });
  }

  beforeAll(async () => {
    // governance, so that the cut can be made with the bypass (lethe's own credential may hold it: ledger-lock.test.ts)
    tv = await openTestVault({
      extraEnv: { ...env, LETHE_BACKUP_PROPAGATE_SECONDS: '86400', LETHE_LEDGER_LOCK: 'governance', LETHE_LEDGER_WITNESS_DIR: witnessDir },
      app: { erasureWorker: false },
    });
    const call = callVault(tv.app);
    const subject = `user:anchor-m-${tag()}`;
    const a = await tv.app.log.append(subject, { text: `alice moved to ${tag()} Rose Street` }, 'writer');
    aliceEntry = a.entryId;
    aliceKey = a.keyId;
    await tv.app.log.append(`user:anchor-n-${tag()}`, { text: `nina plays the cello ${tag()}` }, 'writer');
    first = (await tv.app.backups.run()).backupId;
    keep = (await readJson<Head>(tv.app.backups.store, LEDGER_HEAD_KEY)).seq;
    erasureId = (await ok<{ erasureId: string }>(call('POST', '/v1/erasures', { role: 'eraser', body: { subject, legalBasis: 'gdpr-art17' } }), 202)).erasureId;
    const view = await tv.app.erasures.settle(erasureId);
    expect(view.status, JSON.stringify(view.steps)).toBe('completed');
    certificate = await ok(call('GET', `/v1/erasures/${erasureId}/certificate`, { role: 'eraser' }), 200);
    second = (await tv.app.backups.run()).backupId;
    savedHead = await tv.app.backups.store.get(LEDGER_HEAD_KEY);
    const head = JSON.parse(Buffer.from(savedHead).toString('utf8')) as Head;
    expect(head.seq).toBeGreaterThan(keep);
    // the cut: every record after `keep` and every head version naming one, removed for good
    for (let seq = keep + 1; seq <= head.seq; seq++) await purge(chainRecordKey(seq));
    for (const v of await allVersions(client, backupBucket, LEDGER_HEAD_KEY)) {
      const h = JSON.parse(Buffer.from(await getVersion(client, backupBucket, v.name, v.versionId)).toString('utf8')) as Head;
      if (h.seq > keep) await client.removeObject(backupBucket, LEDGER_HEAD_KEY, { versionId: v.versionId, governanceBypass: true });
    }
    // an intact prefix: it verifies on its own and records the first backup's manifest
    const chain = await tv.app.backups.ledgerChain();
    expect(chain.last?.seq).toBe(keep);
    expect(chain.manifests.has(first)).toBe(true);
  }, 180_000);
  afterAll(async () => {
    await tv?.close();
    for (const db of targets) await db.drop().catch(() => {});
    rmSync(witnessDir, { recursive: true, force: true });
    rmSync(emptyWitnessDir, { recursive: true, force: true });
  });

  it("signs the chain record its destruction was durable in into the erasure's certificate", () => {
    const payload = (certificate as { payload: { ledger?: { bucket: string; seq: number; mac: string } } }).payload;
    expect(payload.ledger).toMatchObject({ bucket: backupBucket, seq: expect.any(Number), mac: expect.stringMatching(/^[0-9a-f]{64}$/) });
    expect(payload.ledger!.seq).toBeGreaterThan(keep);
  });

  it("refuses a restore of the first backup, naming the later backup's manifest that reaches further", async () => {
    const target = await targetOf(tv, targets, { LETHE_LEDGER_WITNESS_DIR: emptyWitnessDir });
    const message = await refusal(target.backups.restore(first, { actor: 'test' }));
    expect(message).toMatch(new RegExp(`the manifest of backup ${second} saw record \\d+, and the chain ends at record ${keep}`));
  });

  it('with that manifest removed too: refuses naming the mirrored head, the certificate, or the saved head file handed to it', async () => {
    await purge(manifestKey(second));
    const mirrored = await refusal((await targetOf(tv, targets)).backups.restore(first, { actor: 'test' }));
    expect(mirrored).toMatch(/the ledger head mirrored to the witness folder .* saw record \d+, and the chain ends at record/);

    const unwitnessed = await targetOf(tv, targets, { LETHE_LEDGER_WITNESS_DIR: emptyWitnessDir });
    const byCertificate = await refusal(
      unwitnessed.backups.restore(first, { actor: 'test', witnesses: unwitnessed.backups.parseWitness('cert.json', Buffer.from(JSON.stringify(certificate))) }),
    );
    expect(byCertificate).toContain(`the certificate of erasure ${erasureId} (cert.json) saw record`);

    const byHead = await refusal(unwitnessed.backups.restore(first, { actor: 'test', witnesses: unwitnessed.backups.parseWitness('head.json', savedHead) }));
    expect(byHead).toContain('the ledger head in head.json saw record');

    // a head file edited to reach less is refused as a witness, never skipped
    const edited = { ...(JSON.parse(Buffer.from(savedHead).toString('utf8')) as Head & { mac: string }), seq: keep };
    expect(() => unwitnessed.backups.parseWitness('edited.json', Buffer.from(JSON.stringify(edited)))).toThrow(
      /edited.json is a ledger head that fails its MAC/,
    );
    expect(() => unwitnessed.backups.parseWitness('junk.json', Buffer.from('{"hello":1}'))).toThrow(/neither a ledger head nor an erasure certificate/);

    // forced, the warning names the erased subject's key among those it brings back, and it does
    const forced = await unwitnessed.backups.restore(first, {
      actor: 'test',
      force: true,
      witnesses: unwitnessed.backups.parseWitness('head.json', savedHead),
    });
    expect(forced.ledger).toBe('forced');
    expect(forced.warnings.join(' ')).toContain(aliceKey);
    expect((await unwitnessed.log.get(aliceEntry)).keyId).toBe(aliceKey);
  });

  it('the running service finds the cut: the last record it stored is gone', async () => {
    expect(await tv.app.backups.checkAnchor()).toMatch(/record \d+ \(ledger\/chain\/\d+\.json\), which this database stored, is gone from the backup bucket/);
    expect((await tv.app.backups.ledgerStatus()).anchor).toMatchObject({ state: 'cut' });
  });
});
