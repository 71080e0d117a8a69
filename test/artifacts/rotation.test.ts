/**
 * KEK rotation reaches artifact-version keys: they are re-wrapped under the new epoch
 * with the subject DEKs, the previous epoch retires once nothing references it, and
 * every artifact reads back byte for byte — from the same stored objects, which
 * rotation never rewrites.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { type SQL, sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RotationResult } from '../../src/vault/epochs.js';
import { queryRows } from '../../src/db/client.js';
import { openTestVault, type TestVault } from '../support/vault.js';

let tv: TestVault;
beforeAll(async () => {
  tv = await openTestVault();
});
afterAll(async () => {
  await tv?.close();
});

async function count(query: SQL): Promise<number> {
  const [row] = await queryRows<{ n: number }>(tv.app.db.db, query);
  return Number(row!.n);
}

async function activeEpoch(): Promise<number> {
  const active = (await tv.app.epochs.list()).find((e) => e.state === 'active');
  expect(active).toBeDefined();
  return active!.epoch;
}

function objectBytes(artifactId: string, version: number): Buffer {
  return readFileSync(path.join(tv.dataDir, 'objects', tv.config.bucket, 'artifacts', artifactId, `v${version}`));
}

describe('KEK rotation with artifacts in the vault', () => {
  const TEXTS = [
    'A plain summary.',
    'Unicode survives: 緑茶, ☕, naïve café, 🙂 and a zero-width\u200bjoiner.',
    `A long digest: ${'0123456789abcdef'.repeat(4000)}`,
    'Line one.\nLine two.\r\nTabs\tand "quotes" and \\ backslashes.',
  ];
  const live: Array<{ artifactId: string; text: string; version: number }> = [];
  let regenerated: string;
  let erased: string;
  let oldEpoch: number;
  let subjectKeysBefore: number;
  let artifactKeysBefore: number;
  let objectsBefore: Map<string, Buffer>;
  let oldWrapped: { keyId: string; wrapped: Uint8Array };
  let rotation: RotationResult;

  beforeAll(async () => {
    const a = await tv.app.log.append('user:rot-a', { text: 'Ann reads novels. Ann swims.' }, 'writer');
    const b = await tv.app.log.append('user:rot-b', { text: 'Ben plays chess.' }, 'writer');
    for (const text of TEXTS) {
      const w = await tv.app.artifacts.write({ kind: 'summary', text, sources: [a.entryId, b.entryId] }, 'writer');
      live.push({ artifactId: w.artifactId, text, version: 1 });
    }
    const digest = await tv.app.artifacts.write({ kind: 'digest', text: 'Over two summaries.', sources: [live[0]!.artifactId, live[1]!.artifactId] }, 'writer');
    live.push({ artifactId: digest.artifactId, text: 'Over two summaries.', version: 1 });

    // one artifact at version 2 (its version-1 key destroyed), one erased (no key at all)
    regenerated = (await tv.app.artifacts.write({ kind: 'fact', text: 'Ben plays chess.', sources: [b.entryId] }, 'writer')).artifactId;
    await tv.app.artifacts.regenerate([regenerated], { actor: 't' });
    live.push({ artifactId: regenerated, text: (await tv.app.artifacts.get(regenerated)).text, version: 2 });
    erased = (await tv.app.artifacts.write({ kind: 'fact', text: 'Gone soon.', sources: [a.entryId] }, 'writer')).artifactId;
    expect((await tv.app.artifacts.regenerate([erased], { excluding: [a.entryId], actor: 't' })).removed).toEqual([erased]);

    oldEpoch = await activeEpoch();
    subjectKeysBefore = await count(sql`select count(*)::int as n from subject_keys`);
    artifactKeysBefore = await count(sql`select count(*)::int as n from artifact_keys`);
    objectsBefore = new Map(live.map((l) => [l.artifactId, objectBytes(l.artifactId, l.version)]));
    const [row] = await queryRows<{ key_id: string; wrapped_dek: Uint8Array }>(
      tv.app.db.db,
      sql`select ak.key_id, ak.wrapped_dek from artifact_keys ak join artifacts a on a.key_id = ak.key_id where a.artifact_id = ${live[1]!.artifactId}`,
    );
    oldWrapped = { keyId: row!.key_id, wrapped: new Uint8Array(row!.wrapped_dek) };

    rotation = await tv.app.epochs.rotate('admin');
  });

  it('there is one artifact-version key per live artifact before the rotation', () => {
    expect(artifactKeysBefore).toBe(live.length);
    expect(subjectKeysBefore).toBe(2);
  });

  it('rewrapped counts the artifact-version keys along with the subject DEKs', () => {
    expect(rotation.epoch).toBe(oldEpoch + 1);
    expect(rotation.rewrapped).toBe(subjectKeysBefore + artifactKeysBefore);
    expect(rotation.resumed).toBe(false);
  });

  it('the previous epoch retires', async () => {
    expect(rotation.retired).toEqual([oldEpoch]);
    const epochs = await tv.app.epochs.list();
    expect(epochs.find((e) => e.epoch === oldEpoch)).toMatchObject({ state: 'retired', keys: 0 });
    expect(epochs.find((e) => e.epoch === rotation.epoch)).toMatchObject({ state: 'active', keys: subjectKeysBefore + artifactKeysBefore });
  });

  it('no artifact key is left under the old epoch, and every one is under the new', async () => {
    expect(await count(sql`select count(*)::int as n from artifact_keys where epoch = ${oldEpoch}`)).toBe(0);
    expect(await count(sql`select count(*)::int as n from artifact_keys where epoch = ${rotation.epoch}`)).toBe(artifactKeysBefore);
  });

  it('every artifact reads back byte for byte, at the same version', async () => {
    for (const l of live) {
      const a = await tv.app.artifacts.get(l.artifactId);
      expect(a.version, l.artifactId).toBe(l.version);
      expect(Buffer.from(a.text, 'utf8').equals(Buffer.from(l.text, 'utf8')), l.artifactId).toBe(true);
    }
  });

  it('the stored objects are untouched: rotation re-wraps keys, it does not rewrite data', () => {
    for (const l of live) expect(objectBytes(l.artifactId, l.version).equals(objectsBefore.get(l.artifactId)!), l.artifactId).toBe(true);
  });

  it('a copy of an artifact key wrapped under the old epoch can no longer be unwrapped', async () => {
    await expect(tv.app.provider.unwrap(oldEpoch, oldWrapped.wrapped, oldWrapped.keyId, 'artifact-version')).rejects.toMatchObject({
      code: 'epoch_unavailable',
    });
  });

  it('the erased artifact stays erased', async () => {
    await expect(tv.app.artifacts.get(erased)).rejects.toMatchObject({ code: 'artifact_erased' });
  });

  it('after the rotation, artifacts are written under the new epoch and regenerate from rotated sources', async () => {
    const w = await tv.app.artifacts.write({ kind: 'digest', text: 'After rotation.', sources: [live[0]!.artifactId, live[2]!.artifactId] }, 'writer');
    expect(
      await count(
        sql`select count(*)::int as n from artifact_keys ak join artifacts a on a.key_id = ak.key_id where a.artifact_id = ${w.artifactId} and ak.epoch = ${rotation.epoch}`,
      ),
    ).toBe(1);
    const r = await tv.app.artifacts.regenerate([live[0]!.artifactId], { actor: 't' });
    // live[0] and everything above it (the digest over it, and the new one) get a new version
    expect(r.removed).toEqual([]);
    expect(r.regenerated.map((x) => x.artifactId).sort()).toEqual([live[0]!.artifactId, live[4]!.artifactId, w.artifactId].sort());
    expect((await tv.app.artifacts.get(live[0]!.artifactId)).text).toContain('Ann reads novels.');
  });

  it("a second rotation re-wraps them again and retires the first rotation's epoch", async () => {
    const keys = (await count(sql`select count(*)::int as n from subject_keys`)) + (await count(sql`select count(*)::int as n from artifact_keys`));
    const second = await tv.app.epochs.rotate('admin');
    expect(second.rewrapped).toBe(keys);
    expect(second.retired).toEqual([rotation.epoch]);
    expect(await count(sql`select count(*)::int as n from artifact_keys where epoch <> ${second.epoch}`)).toBe(0);
    // the ones the previous test did not regenerate still read back byte for byte
    for (const l of [live[1]!, live[2]!, live[3]!, live[5]!]) expect((await tv.app.artifacts.get(l.artifactId)).text).toBe(l.text);
  });
});
