/**
 * Two databases appending to one backup bucket's ledger chain, on PostgreSQL and a
 * real MinIO: a restored copy running beside its source. Taking turns, each follows
 * the other's head and every destruction of both is acknowledged and honoured by a
 * later restore. When their chains diverge (each assigned the same next record), the
 * record stored first wins; the other database, which acknowledged nothing of its
 * own, withdraws its record and appends after the winner's.
 */
import { randomBytes } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../src/app/open.js';
import { chainMac, chainRecordKey, LEDGER_HEAD_KEY } from '../../src/backups/ledger-chain.js';
import { deriveSubkey, KeyedHasher } from '../../src/crypto/index.js';
import { queryRows } from '../../src/db/client.js';
import { createTestDatabase, type TestDatabase } from '../support/pg.js';
import { openTestVault, type TestVault } from '../support/vault.js';
import { minioEnv, readJson } from './support.js';

const tag = () => randomBytes(4).toString('hex');

describe("two databases on one bucket's ledger chain", () => {
  let source: TestVault;
  const dbs: TestDatabase[] = [];
  const { env } = minioEnv();
  let copy: App;
  let backupId = '';
  const entries: Array<{ entryId: string; keyId: string }> = [];

  async function fresh(): Promise<App> {
    const db = await createTestDatabase();
    dbs.push(db);
    return source.reopen({ listen: false }, { DATABASE_URL: db.url, S3_BUCKET: `lethe-shared-r-${tag()}` });
  }

  beforeAll(async () => {
    source = await openTestVault({ extraEnv: { ...env, LETHE_BACKUP_PROPAGATE_SECONDS: '86400' } });
    for (let i = 0; i < 5; i++) entries.push(await source.app.log.append(`user:shared-${i}`, { text: `shared ${i} ${tag()}` }, 'writer'));
    backupId = (await source.app.backups.run()).backupId;
    copy = await fresh();
    await copy.backups.restore(backupId, { actor: 'test' });
  }, 120_000);
  afterAll(async () => {
    await source?.close();
    for (const db of dbs) await db.drop().catch(() => {});
  });

  it('taking turns, each follows the other: every destruction of both is acknowledged, and a restore honours all of them', async () => {
    for (const [i, vault] of [source.app, copy, source.app, copy].entries()) {
      const { keyId } = entries[i]!;
      await vault.keys.destroyKey(keyId, { reason: 'shared', actor: 'eraser' });
      // each acknowledged, whatever the other's background writes (manifest versions) do meanwhile
      expect(await vault.backups.awaitDurable([keyId], 30_000), `turn ${i}`).toEqual({ pending: [] });
    }
    const chain = await source.app.backups.ledgerChain();
    expect(chain.notes).toEqual([]);
    for (const e of entries.slice(0, 4)) expect(chain.entries.has(e.keyId)).toBe(true);
    const restored = await fresh();
    expect(await restored.backups.restore(backupId, { actor: 'test' })).toMatchObject({ ledger: 'replayed', warnings: [] });
    for (const e of entries.slice(0, 4)) await expect(restored.log.get(e.entryId)).rejects.toMatchObject({ code: 'key_destroyed' });
    expect((await restored.log.get(entries[4]!.entryId)).text).toMatch(/^shared 4/);
  }, 120_000);

  it('diverged (each assigned the same next record): the one whose record was stored first wins; the other withdraws its unstored record and appends after it', async () => {
    await source.app.backups.idle();
    await copy.backups.idle();
    const head = await readJson<{ seq: number; record: string }>(source.app.backups.store, LEDGER_HEAD_KEY);
    // the source stores the next record...
    const { keyId } = entries[4]!;
    await source.app.keys.destroyKey(keyId, { reason: 'source first', actor: 'eraser' });
    expect((await source.app.backups.awaitDurable([keyId], 30_000)).pending).toEqual([]);
    // ...where the copy had assigned its own (valid, MAC'd, after the same head) without storing it yet
    const mac = new KeyedHasher(deriveSubkey(Buffer.from(source.env.LETHE_ROOT_KEY!, 'base64'), 'ledger-chain'));
    const unsealed = {
      format: 'lethe-ledger-chain/1',
      seq: head.seq + 1,
      prev: head.record,
      at: new Date().toISOString(),
      auditHead: null,
      destructions: [],
      manifests: [],
    };
    const mine = { ...unsealed, mac: chainMac(mac, unsealed) };
    mac.destroy();
    await copy.db.db.execute(sql`insert into ledger_chain (bucket, seq, body, mac, created_at)
                                 values (${copy.backups.store.bucket}, ${mine.seq}, ${JSON.stringify(mine)}, ${Buffer.from(mine.mac, 'hex')}, now())`);

    // the copy's destruction: its unstored record withdrawn, then appended after the source's
    const { keyId: copysKey } = await copy.keys.lease(`user:shared-late-${tag()}`, 'writer');
    await copy.keys.destroyKey(copysKey, { reason: 'copy second', actor: 'eraser' });
    expect(await copy.backups.awaitDurable([copysKey], 30_000)).toEqual({ pending: [] });
    expect(await queryRows(copy.db.db, sql`select seq from ledger_chain where bucket = ${copy.backups.store.bucket} and stored_at is null`)).toEqual([]);
    const stored = JSON.parse(Buffer.from(await source.app.backups.store.get(chainRecordKey(mine.seq))).toString('utf8')) as { mac: string };
    expect(stored.mac).not.toBe(mine.mac);
    const chain = await source.app.backups.ledgerChain();
    expect(chain.notes).toEqual([]);
    expect(chain.entries.has(keyId)).toBe(true);
    expect(chain.entries.has(copysKey)).toBe(true);
  }, 120_000);
});
