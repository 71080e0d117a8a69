/**
 * Backups on the embedded default (PGlite and the local object store): the backup
 * lands in its own folder beside the live one, and destructions propagate into it.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Manifest } from '../../src/backups/manifest.js';
import { manifestKey, storedObjectKey } from '../../src/backups/manifest.js';
import { filesContaining } from '../support/files.js';
import { openTestVault, type TestVault } from '../support/vault.js';
import { hex, keyState, sha256Hex, until } from './support.js';

/** Every file under `dir`, as paths relative to it. */
function filesUnder(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.isFile()) out.push(path.relative(dir, p));
    }
  };
  walk(dir);
  return out.sort();
}

describe('backups on PGlite and the local object store', () => {
  let tv: TestVault;
  let backupDir: string;
  let liveDir: string;
  const SUBJECT_A = `user:ea-${hex()}`;
  const SUBJECT_B = `user:eb-${hex()}`;

  beforeAll(async () => {
    tv = await openTestVault({ embedded: true });
    liveDir = path.join(tv.dataDir, 'objects', tv.config.bucket);
    backupDir = path.join(tv.dataDir, 'objects', 'lethe-backups');
  }, 120_000);
  afterAll(async () => {
    await tv?.close();
  });

  it('takes a backup into <dataDir>/objects/lethe-backups, marks a destruction in version 2 and copies the ledger entry there', async () => {
    const v = tv.app;
    expect([v.db.kind, v.objects.kind, v.backups.store.kind]).toEqual(['pglite', 'fs', 'fs']);
    expect(tv.config.backupBucket).toBe('lethe-backups');
    expect(tv.config.bucket).not.toBe('lethe-backups');

    const a = await v.log.append(SUBJECT_A, { text: 'Anna keeps her spare key under the blue flowerpot.' }, 'writer');
    const b = await v.log.append(SUBJECT_B, { text: 'Ben is training for a half marathon.' }, 'writer');
    const dekA = (await v.keys.dekFor(a.keyId)).dek;

    const taken = await v.backups.run();
    const m1 = JSON.parse(readFileSync(path.join(backupDir, manifestKey(taken.backupId)), 'utf8')) as Manifest;
    expect(m1).toMatchObject({ backupId: taken.backupId, version: 1 });
    expect(m1.keys.map((k) => [k.keyId, k.state]).sort()).toEqual(
      [
        [a.keyId, 'active'],
        [b.keyId, 'active'],
      ].sort(),
    );
    expect(m1.objects).toHaveLength(2);
    for (const o of m1.objects) {
      // the live object, its copy in the backup folder, and the manifest agree on the bytes
      expect(sha256Hex(readFileSync(path.join(liveDir, o.key)))).toBe(o.sha256);
      expect(sha256Hex(readFileSync(path.join(backupDir, storedObjectKey(o.sha256))))).toBe(o.sha256);
    }
    expect(existsSync(path.join(backupDir, m1.keyTable.key))).toBe(true);

    // the backup is in its own folder, not in the live one
    const live = filesUnder(liveDir);
    expect(live.filter((f) => f.startsWith('log/'))).toHaveLength(2);
    expect(live.filter((f) => /^(backups|objects|ledger)\//.test(f))).toEqual([]);
    expect(filesUnder(backupDir).filter((f) => f.startsWith('log/'))).toEqual([]);

    // no DEK anywhere in the backup folder, in any encoding
    for (const needle of [dekA, Buffer.from(dekA).toString('base64url'), Buffer.from(dekA).toString('base64')]) {
      const { hits, filesRead } = filesContaining(backupDir, needle);
      expect(hits).toEqual([]);
      expect(filesRead).toBeGreaterThanOrEqual(4);
    }
    dekA.fill(0);

    const destruction = await v.keys.destroyKey(a.keyId, { reason: 'erasure', actor: 'eraser' });
    const m2 = await until(
      'the destruction folded into the manifest',
      async () => ({ service: await v.backups.manifest(taken.backupId), listed: (await v.backups.list())[0]?.manifestVersion }),
      (s) => s.service.overlay.destroyed === 1,
    );
    // the file is the base, as written with the backup: version 1, A active; the service folds the chain in
    const base = JSON.parse(readFileSync(path.join(backupDir, manifestKey(taken.backupId)), 'utf8')) as Manifest;
    expect(m2.listed).toBe(1);
    expect({ version: base.version, state: keyState(base, a.keyId)?.state }).toEqual({ version: 1, state: 'active' });
    expect(m2.service.base).toEqual({ version: 1, mac: base.mac });
    expect(m2.service.objects).toEqual(base.objects);
    expect(keyState(m2.service, a.keyId)).toMatchObject({ state: 'destroyed', destroyedAt: destruction.destroyedAt.toISOString() });
    expect(keyState(m2.service, b.keyId)?.state).toBe('active');

    await until(
      'the ledger chain record',
      () => v.keys.validity([a.keyId]),
      (s) => s[a.keyId] === 'destroyed',
    );
    const entry = (await v.backups.ledgerChain()).entries.get(a.keyId);
    expect(entry).toMatchObject({ keyId: a.keyId, destroyedAt: destruction.destroyedAt.toISOString(), wrappedEpoch: destruction.wrappedEpoch });
    // the chain is in the backup folder, as files, and never in the live one
    expect(filesUnder(backupDir).filter((f) => f.startsWith('ledger/chain/')).length).toBeGreaterThanOrEqual(2);
    expect(existsSync(path.join(backupDir, 'ledger', 'head.json'))).toBe(true);
    expect(existsSync(path.join(liveDir, 'ledger'))).toBe(false);
    for (const f of filesUnder(backupDir).filter((x) => !x.startsWith('objects/'))) {
      expect(readFileSync(path.join(backupDir, f), 'utf8'), f).not.toContain(SUBJECT_A);
    }
  });
});
