/**
 * Key purposes (issue 13, part 6): every wrapped key binds what it is for — a subject
 * DEK, an artifact-version key, an erasure key — in its wrap's associated data. With
 * database write access and a writer token, copying an erasure key's or a version
 * key's wrapped row into subject_keys (key id kept, since it is bound) must not turn
 * it into a leasable subject DEK; under an epoch created before purposes were bound
 * (wrap_format 1), keys wrapped under the older context still unwrap, and a rotation
 * re-wraps them purpose-bound.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeContext, open, randomBytes, seal, toBase64Url, unwrapKey } from '../../src/crypto/index.js';
import { queryRows } from '../../src/db/client.js';
import { expectProblem, ok } from '../support/http.js';
import { openTestApp, type TestApp } from '../support/vault.js';

const tag = () => randomBytes(4).reduce((s, b) => s + b.toString(16).padStart(2, '0'), '');

/** The epoch's KEK, unsealed by hand from the keyring file with the root key (as the local provider does). */
function kekOf(t: TestApp, epoch: number): Uint8Array {
  const file = path.join(t.config.keyringDir, `epoch-${String(epoch).padStart(8, '0')}.kek`);
  const root = new Uint8Array(Buffer.from(t.env.LETHE_ROOT_KEY!, 'base64'));
  return open({ key: root, envelope: new Uint8Array(readFileSync(file)), expectedKeyId: 'root', associatedData: encodeContext('epoch-kek', { epoch }) });
}

/** A key wrapped exactly as lethe wrapped every key before purposes were bound: context ("dek", { keyId }). */
function legacyWrap(kek: Uint8Array, epoch: number, keyId: string, key: Uint8Array): Uint8Array {
  return seal({ key: kek, keyId: `kek-${epoch}`, plaintext: key.slice(), associatedData: encodeContext('dek', { keyId }) });
}

function opensUnderLegacyContext(kek: Uint8Array, epoch: number, keyId: string, wrapped: Uint8Array): boolean {
  try {
    open({ key: kek, envelope: wrapped, expectedKeyId: `kek-${epoch}`, associatedData: encodeContext('dek', { keyId }) });
    return true;
  } catch {
    return false;
  }
}

interface Scene {
  readonly entryId: string;
  readonly artifactId: string;
  readonly artifactKeyId: string;
  readonly erasureId: string;
  readonly erasureKeyId: string;
}

/** A subject with an entry, a summary of it (an artifact-version key) and a pending erasure of another subject (an erasure key). */
async function scene(t: TestApp): Promise<Scene> {
  const n = tag();
  const subject = `user:kp-${n}`;
  const erased = `user:kp-erased-${n}`;
  const { entryId } = await ok<{ entryId: string }>(
    t.call('POST', `/v1/subjects/${subject}/entries`, { body: { text: `a note ${n} about herons`, kind: 'note' } }),
    201,
  );
  await ok(t.call('POST', `/v1/subjects/${erased}/entries`, { body: { text: `to be erased ${n}`, kind: 'note' } }), 201);
  const { artifactId } = await ok<{ artifactId: string }>(
    t.call('POST', '/v1/artifacts', { body: { kind: 'summary', text: `summary ${n}: herons`, sources: [entryId] } }),
    201,
  );
  const { erasureId } = await ok<{ erasureId: string }>(t.call('POST', '/v1/erasures', { role: 'eraser', body: { subject: erased } }), 202);
  const db = t.app.db.db;
  const [art] = await queryRows<{ key_id: string }>(db, sql`select key_id from artifact_keys where artifact_id = ${artifactId}`);
  const [ers] = await queryRows<{ key_id: string }>(db, sql`select key_id from artifact_keys where artifact_id = ${erasureId}`);
  expect(art, 'the summary has a version key').toBeDefined();
  expect(ers, 'the erasure has its own key (the worker is off: it stays pending)').toBeDefined();
  return { entryId, artifactId, artifactKeyId: art!.key_id, erasureId, erasureKeyId: ers!.key_id };
}

/** Copies an artifact_keys row's key id, epoch and wrapped key into subject_keys as the live key of a subject never seen. */
async function swapIntoSubjectKeys(t: TestApp, keyId: string): Promise<string> {
  const victim = `user:kp-victim-${tag()}`;
  const hash = t.app.keys.subjectHash(victim);
  await t.app.db.db.execute(sql`insert into subject_keys (key_id, subject_hash, state, epoch, wrapped_dek, created_at, updated_at)
                                  select key_id, ${Buffer.from(hash)}, 'active', epoch, wrapped_dek, now(), now() from artifact_keys where key_id = ${keyId}`);
  t.app.cache.clear();
  return victim;
}

/** A lease of `subject` through the HTTP API must be refused, and hand back nothing of `key`. */
async function expectLeaseRefused(t: TestApp, subject: string, key: Uint8Array): Promise<void> {
  const reply = await expectProblem(t.call('POST', `/v1/subjects/${subject}/key/lease`), 500, 'decrypt_failed', `lease of ${subject}`);
  expect(reply.text.includes(toBase64Url(key))).toBe(false);
  expect(reply.detail).toMatch(/subject key/);
}

describe('key purposes under a new-format epoch', () => {
  let t: TestApp;
  let s: Scene;

  beforeAll(async () => {
    t = await openTestApp({ app: { erasureWorker: false } });
    s = await scene(t);
  });
  afterAll(async () => {
    await t?.close();
  });

  it("a fresh vault's epoch binds purposes (wrap_format 2) and each version-key row records its purpose", async () => {
    const db = t.app.db.db;
    expect(await queryRows(db, sql`select epoch, wrap_format from epochs`)).toEqual([{ epoch: 1, wrap_format: 2 }]);
    const rows = await queryRows<{ key_id: string; purpose: string }>(db, sql`select key_id, purpose from artifact_keys order by purpose`);
    expect(rows).toEqual(
      expect.arrayContaining([
        { key_id: s.artifactKeyId, purpose: 'artifact-version' },
        { key_id: s.erasureKeyId, purpose: 'erasure' },
      ]),
    );
  });

  it('an erasure key copied into subject_keys is not leased as a subject DEK', async () => {
    const erasureKey = await t.app.versionKeys.unwrap(s.erasureKeyId, 'erasure');
    const victim = await swapIntoSubjectKeys(t, s.erasureKeyId);
    await expectLeaseRefused(t, victim, erasureKey);
    // nor through the service, nor through the key's id
    await expect(t.app.keys.lease(victim, 'writer')).rejects.toMatchObject({ code: 'decrypt_failed' });
    await expect(t.app.keys.dekFor(s.erasureKeyId)).rejects.toMatchObject({ code: 'decrypt_failed' });
    erasureKey.fill(0);
  });

  it('an artifact-version key copied into subject_keys is not leased as a subject DEK', async () => {
    const versionKey = await t.app.versionKeys.unwrap(s.artifactKeyId, 'artifact-version');
    const victim = await swapIntoSubjectKeys(t, s.artifactKeyId);
    await expectLeaseRefused(t, victim, versionKey);
    versionKey.fill(0);
  });

  it('a version key is unwrapped only as what its row says it is, and the row cannot be relabelled', async () => {
    await expect(t.app.versionKeys.unwrap(s.artifactKeyId, 'erasure')).rejects.toMatchObject({ code: 'conflict' });
    await expect(t.app.versionKeys.unwrap(s.erasureKeyId, 'artifact-version')).rejects.toMatchObject({ code: 'conflict' });
    // relabel the erasure key's row as an artifact-version key: its wrap still says erasure
    const db = t.app.db.db;
    await db.execute(sql`update artifact_keys set purpose = 'artifact-version' where key_id = ${s.erasureKeyId}`);
    try {
      await expect(t.app.versionKeys.unwrap(s.erasureKeyId, 'artifact-version')).rejects.toMatchObject({ code: 'decrypt_failed' });
    } finally {
      await db.execute(sql`update artifact_keys set purpose = 'erasure' where key_id = ${s.erasureKeyId}`);
    }
    // and a subject DEK copied into artifact_keys does not open as a version key
    const [subjectRow] = await queryRows<{ key_id: string }>(
      db,
      sql`select key_id from subject_keys where key_id not in (select key_id from artifact_keys) limit 1`,
    );
    await db.execute(sql`insert into artifact_keys (key_id, artifact_id, version, epoch, wrapped_dek, created_at, purpose)
                         select key_id, 'art_forged', 1, epoch, wrapped_dek, now(), 'artifact-version' from subject_keys where key_id = ${subjectRow!.key_id}`);
    await expect(t.app.versionKeys.unwrap(subjectRow!.key_id, 'artifact-version')).rejects.toMatchObject({ code: 'decrypt_failed' });
  });

  it('a rotation refuses to re-wrap a forged row, naming it; without the forged rows it resumes and completes', async () => {
    const db = t.app.db.db;
    const err = await t.app.epochs.rotate('admin').catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'decrypt_failed' });
    expect((err as Error).message).toMatch(/does not unwrap as a (subject|artifact-version) key under epoch 1/);
    expect((err as Error).message).toMatch(/key key_\S+ in (subject_keys|artifact_keys)/);
    // the forgeries go: the subject DEK copied into artifact_keys, then the version keys copied into subject_keys
    await db.execute(sql`delete from artifact_keys where artifact_id = 'art_forged'`);
    await db.execute(sql`delete from subject_keys where key_id in (select key_id from artifact_keys)`);
    const result = await t.app.epochs.rotate('admin');
    expect(result).toMatchObject({ epoch: 2, retired: [1], resumed: true });
  });

  it('the rightful holders still unwrap: the summary and the entry read back, the erasure key opens as an erasure key', async () => {
    t.app.cache.clear();
    expect((await ok<{ text: string }>(t.call('GET', `/v1/artifacts/${s.artifactId}`), 200)).text).toMatch(/herons/);
    expect((await ok<{ text: string }>(t.call('GET', `/v1/entries/${s.entryId}`), 200)).text).toMatch(/herons/);
    const key = await t.app.versionKeys.unwrap(s.erasureKeyId, 'erasure');
    expect(key).toHaveLength(32);
    key.fill(0);
  });
});

describe('key purposes across the migration: legacy wraps under a wrap_format 1 epoch', () => {
  let t: TestApp;
  let s: Scene;
  const subject = `user:kp-legacy-${tag()}`;
  const known = { dek: randomBytes(32), version: randomBytes(32) };
  let subjectKeyId: string;
  let erasureKey: Uint8Array;

  beforeAll(async () => {
    t = await openTestApp({ app: { erasureWorker: false } });
    s = await scene(t);
    subjectKeyId = (await t.app.keys.ensureKey(subject, 'writer')).keyId;
    erasureKey = await t.app.versionKeys.unwrap(s.erasureKeyId, 'erasure');
    // epoch 1 as the migration leaves an epoch created before this change, and its keys as wrapped back then
    const db = t.app.db.db;
    await db.execute(sql`update epochs set wrap_format = 1 where epoch = 1`);
    const kek = kekOf(t, 1);
    const legacy = [
      ['subject_keys', subjectKeyId, known.dek],
      ['artifact_keys', s.artifactKeyId, known.version],
      ['artifact_keys', s.erasureKeyId, erasureKey],
    ] as const;
    for (const [table, keyId, key] of legacy) {
      const wrapped = Buffer.from(legacyWrap(kek, 1, keyId, key));
      if (table === 'subject_keys') await db.execute(sql`update subject_keys set wrapped_dek = ${wrapped} where key_id = ${keyId}`);
      else await db.execute(sql`update artifact_keys set wrapped_dek = ${wrapped} where key_id = ${keyId}`);
    }
    kek.fill(0);
    t.app.cache.clear();
  });
  afterAll(async () => {
    erasureKey?.fill(0);
    await t?.close();
  });

  it('legacy-wrapped keys still unwrap, each through its own path, before the rotation', async () => {
    const lease = await ok<{ keyId: string; dek: string }>(t.call('POST', `/v1/subjects/${subject}/key/lease`), 200);
    expect(lease).toMatchObject({ keyId: subjectKeyId, dek: toBase64Url(known.dek) });
    expect(await t.app.versionKeys.unwrap(s.artifactKeyId, 'artifact-version')).toEqual(known.version);
    expect(await t.app.versionKeys.unwrap(s.erasureKeyId, 'erasure')).toEqual(erasureKey);
    // the stored purpose is still checked for a legacy row
    await expect(t.app.versionKeys.unwrap(s.erasureKeyId, 'artifact-version')).rejects.toMatchObject({ code: 'conflict' });
  });

  it('a key made under the legacy epoch is wrapped purpose-bound all the same, and cannot be swapped', async () => {
    const fresh = await scene(t);
    const [row] = await queryRows<{ epoch: number; wrapped_dek: Uint8Array }>(
      t.app.db.db,
      sql`select epoch, wrapped_dek from artifact_keys where key_id = ${fresh.erasureKeyId}`,
    );
    expect(row!.epoch).toBe(1);
    const kek = kekOf(t, 1);
    expect(opensUnderLegacyContext(kek, 1, fresh.erasureKeyId, new Uint8Array(row!.wrapped_dek))).toBe(false);
    kek.fill(0);
    const key = await t.app.versionKeys.unwrap(fresh.erasureKeyId, 'erasure');
    const victim = await swapIntoSubjectKeys(t, fresh.erasureKeyId);
    await expectLeaseRefused(t, victim, key);
    key.fill(0);
    // the forged row would stop the rotation below (it cannot be re-wrapped as a subject key): it goes
    await t.app.db.db.execute(sql`delete from subject_keys where key_id = ${fresh.erasureKeyId}`);
  });

  it('a rotation re-wraps every key purpose-bound under a wrap_format 2 epoch: no legacy wrap remains, every key still opens', async () => {
    const result = await t.app.epochs.rotate('admin');
    expect(result).toMatchObject({ epoch: 2, retired: [1] });
    const db = t.app.db.db;
    expect(await queryRows(db, sql`select epoch, wrap_format, state from epochs order by epoch`)).toEqual([
      { epoch: 1, wrap_format: 1, state: 'retired' },
      { epoch: 2, wrap_format: 2, state: 'active' },
    ]);
    const kek = kekOf(t, 2);
    const rows = await queryRows<{ key_id: string; epoch: number; wrapped_dek: Uint8Array; purpose: 'subject' | 'artifact-version' | 'erasure' }>(
      db,
      sql`select key_id, epoch, wrapped_dek, 'subject' as purpose from subject_keys
          union all select key_id, epoch, wrapped_dek, purpose from artifact_keys`,
    );
    expect(rows.length).toBeGreaterThanOrEqual(5);
    for (const r of rows) {
      expect(r.epoch).toBe(2);
      const wrapped = new Uint8Array(r.wrapped_dek);
      expect(opensUnderLegacyContext(kek, 2, r.key_id, wrapped), `${r.key_id} still opens under the legacy context`).toBe(false);
      unwrapKey({ kek, kekId: 'kek-2', wrapped, keyId: r.key_id, purpose: r.purpose }).fill(0);
    }
    kek.fill(0);
    t.app.cache.clear();
    const lease = await ok<{ keyId: string; dek: string }>(t.call('POST', `/v1/subjects/${subject}/key/lease`), 200);
    expect(lease).toMatchObject({ keyId: subjectKeyId, dek: toBase64Url(known.dek) });
    expect(await t.app.versionKeys.unwrap(s.artifactKeyId, 'artifact-version')).toEqual(known.version);
    expect(await t.app.versionKeys.unwrap(s.erasureKeyId, 'erasure')).toEqual(erasureKey);
  });

  it('after the rotation, the once-legacy erasure key copied into subject_keys is refused', async () => {
    const victim = await swapIntoSubjectKeys(t, s.erasureKeyId);
    await expectLeaseRefused(t, victim, erasureKey);
  });
});
