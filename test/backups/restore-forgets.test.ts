/**
 * A backup taken before forgets, restored after them, on PostgreSQL and MinIO: each
 * forget re-keyed the subject, and its destruction carries the replacement (new key
 * wrapped under its epoch, the survivors' record keys wrapped under it, ciphertext
 * only) in the ledger chain. The restore follows the chain: every survivor reads back,
 * each forgotten entry stays gone (its bytes nowhere at rest), and a subject erased
 * after the backup comes back with nothing.
 */
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { queryRows } from '../../src/db/client.js';
import { awaitErasure, callVault, tag } from '../erasure/fixtures.js';
import { filesContaining } from '../support/files.js';
import { expectProblem, ok } from '../support/http.js';
import type { TestDatabase } from '../support/pg.js';
import { openTestVault, type TestVault } from '../support/vault.js';
import { minioEnv, restoreIntoFresh, vaultCalls } from './support.js';

describe('a backup taken before forgets', () => {
  let source: TestVault;
  const targets: TestDatabase[] = [];

  beforeAll(async () => {
    source = await openTestVault({ extraEnv: { ...minioEnv().env, LETHE_ERASURE_POLL_MS: '100' } });
  });
  afterAll(async () => {
    await source?.close();
    for (const db of targets) await db.drop().catch(() => {});
  });

  const { call, append, forget } = vaultCalls(() => source);

  /** Restores `backupId` into a fresh database and bucket; the vault serving it. */
  const restore = (backupId: string) => restoreIntoFresh(source, backupId, targets);

  it('100 entries, one forgotten after the backup: 99 read back after a restore, the forgotten one stays gone; and across 50 forgets', {
    timeout: 600_000,
  }, async () => {
    const A = `user:restore-forget-${tag()}`;
    const B = `user:restore-erased-${tag()}`;
    const canary = `FORGOTTEN${tag(8)}`;
    const ids: string[] = [];
    const marks: string[] = [];
    for (let i = 0; i < 100; i++) {
      marks.push(`MARK${tag(8)}`);
      ids.push(await append(A, i === 7 ? `Alice's old door code was ${canary}.` : `Alice memory ${i}: ${marks[i]}.`));
    }
    const bEntry = await append(B, `Bob likes plums ${tag(4)}.`);
    const backupId = (await ok<{ backupId: string }>(call()('POST', '/v1/backups', { role: 'backup' }), 201)).backupId;

    await forget(ids[7]!);
    const erased = await ok<{ erasureId: string }>(call()('POST', '/v1/erasures', { role: 'eraser', body: { subject: B } }), 202);
    expect((await awaitErasure(call(), erased.erasureId, 120_000)).status).toBe('completed');
    await source.app.backups.flushLedger();

    const first = await restore(backupId);
    expect(first.result.carried).toMatchObject({ keys: 1, entries: 99, lost: [] });
    const rcall = callVault(first.restored);
    const listed = (await ok<{ entries: Array<{ entryId: string }> }>(rcall('GET', `/v1/subjects/${A}/entries?limit=1000`), 200)).entries;
    expect(listed.map((e) => e.entryId).sort()).toEqual(ids.filter((_, i) => i !== 7).sort());
    await expectProblem(rcall('GET', `/v1/entries/${ids[7]}`), 410, 'key_destroyed');
    // the subject erased after the backup comes back with nothing
    await expectProblem(rcall('GET', `/v1/entries/${bEntry}`), 410, 'key_destroyed');
    // the survivors are searchable again once re-indexed from their frames
    await first.restored.log.drained({ timeoutMs: 60_000 });
    // searchable once published in this replica's index, a moment after the queue drains (on a loaded machine, more)
    const searched = async () =>
      (
        await ok<{ hits: Array<{ id: string }> }>(rcall('POST', '/v1/search', { body: { query: `Alice memory 42: ${marks[42]}.`, subject: A, k: 5 } }), 200)
      ).hits.map((h) => h.id);
    let hits = await searched();
    for (const until = Date.now() + 30_000; !hits.includes(ids[42]!) && Date.now() < until; hits = await searched())
      await new Promise((r) => setTimeout(r, 200));
    expect(hits).toContain(ids[42]);
    // the forgotten text is in no plain byte at rest, in the restored database or anywhere the harness writes
    const [dump] = await queryRows<{ n: string }>(
      first.restored.db.db,
      sql`select count(*) as n from log_entries where entry_id = ${ids[7]} and key_id in (select key_id from subject_keys)`,
    );
    expect(Number(dump!.n)).toBe(0);
    for (const dir of [inject('minio').dataDir, source.dataDir]) expect(filesContaining(dir, canary).hits, dir).toEqual([]);
    await first.restored.close();

    // 50 more forgets after the same backup: the chain of re-keys is followed to its end
    const forgotten = new Set([ids[7]!]);
    for (let i = 10; i < 60; i++) {
      await forget(ids[i]!);
      forgotten.add(ids[i]!);
    }
    await source.app.backups.flushLedger();
    const second = await restore(backupId);
    expect(second.result.carried).toMatchObject({ keys: 1, entries: 49, lost: [] });
    const rcall2 = callVault(second.restored);
    const listed2 = (await ok<{ entries: Array<{ entryId: string }> }>(rcall2('GET', `/v1/subjects/${A}/entries?limit=1000`), 200)).entries;
    expect(listed2.map((e) => e.entryId).sort()).toEqual(ids.filter((id) => !forgotten.has(id)).sort());
    for (const id of [ids[7]!, ids[10]!, ids[59]!]) await expectProblem(rcall2('GET', `/v1/entries/${id}`), 410, 'key_destroyed');
    // the restored subject keeps writing and forgetting
    const after = await ok<{ entryId: string }>(rcall2('POST', `/v1/subjects/${A}/entries`, { body: { text: 'Alice after the restore.' } }), 201);
    expect((await ok<{ text: string }>(rcall2('GET', `/v1/entries/${after.entryId}`), 200)).text).toBe('Alice after the restore.');
    await second.restored.close();
  });
});
