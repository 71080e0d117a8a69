/**
 * A backup taken before forgets of a subject whose keys are in shards, restored after
 * them, on PostgreSQL and MinIO (shards of 8): a subject from before shards (one key of
 * 30 entries) is split at its first forget into a replacement and shard keys, and a
 * later forget re-keys one of those shards. The restore follows every branch of the
 * split: each survivor of the backup reads back under the key its branch ends at, the
 * forgotten entries stay gone, and the subject has one head again.
 */
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callVault, tag } from '../erasure/fixtures.js';
import { expectProblem, ok } from '../support/http.js';
import type { TestDatabase } from '../support/pg.js';
import { openTestVault, type TestVault } from '../support/vault.js';
import { minioEnv, restoreIntoFresh, vaultCalls } from './support.js';

const SHARD = 8;

describe('a backup taken before forgets split a subject into key shards', () => {
  let source: TestVault;
  const targets: TestDatabase[] = [];

  beforeAll(async () => {
    source = await openTestVault({ extraEnv: { ...minioEnv().env, LETHE_ERASURE_POLL_MS: '100', LETHE_KEY_SHARD_ENTRIES: String(SHARD) } });
  });
  afterAll(async () => {
    await source?.close();
    for (const db of targets) await db.drop().catch(() => {});
  });

  const { call, append, forget } = vaultCalls(() => source);

  it('every survivor of the backup comes back under the key its branch of the split ends at; the forgotten ones stay gone', { timeout: 300_000 }, async () => {
    const A = `user:restore-shards-${tag()}`;
    const ids = [await append(A, `Alice note 0 ${tag(8)}`)];
    // as before shards: the head never rolls, one key holds everything
    await source.app.db.db.execute(sql`update subject_keys set base_seq = 1000000000 where subject_hash = ${source.app.keys.subjectHash(A)}`);
    for (let i = 1; i < 30; i++) ids.push(await append(A, `Alice note ${i} ${tag(8)} ${tag(8)}`));
    const backupId = (await ok<{ backupId: string }>(call()('POST', '/v1/backups', { role: 'backup' }), 201)).backupId;

    // the first forget splits 29 survivors into four keys; the second re-keys one shard of them
    await forget(ids[3]!);
    const keys = await source.app.keys.keysOf(source.app.keys.subjectHash(A));
    expect(keys).toHaveLength(4);
    await forget(ids[12]!);
    const later = await append(A, `Alice after the backup ${tag(8)}`);
    await source.app.backups.flushLedger();

    const { result, restored } = await restoreIntoFresh(source, backupId, targets);
    try {
      expect(result.carried).toMatchObject({ keys: 4, entries: 28, lost: [] });
      const rcall = callVault(restored);
      const listed = (await ok<{ entries: Array<{ entryId: string }> }>(rcall('GET', `/v1/subjects/${A}/entries?limit=1000`), 200)).entries;
      expect(listed.map((e) => e.entryId)).toEqual(ids.filter((_, i) => i !== 3 && i !== 12));
      for (const id of [ids[3]!, ids[12]!]) await expectProblem(rcall('GET', `/v1/entries/${id}`), 410, 'key_destroyed');
      // written after the backup: not in it
      expect((await rcall('GET', `/v1/entries/${later}`)).status).toBe(404);
      // one head, and the subject writes again
      const restoredKeys = await restored.keys.keysOf(restored.keys.subjectHash(A));
      expect(restoredKeys.filter((k) => k.head)).toHaveLength(1);
      const next = await ok<{ entryId: string }>(rcall('POST', `/v1/subjects/${A}/entries`, { body: { text: 'Alice after the restore.' } }), 201);
      expect((await ok<{ text: string }>(rcall('GET', `/v1/entries/${next.entryId}`), 200)).text).toBe('Alice after the restore.');
    } finally {
      await restored.close();
    }
  });
});
