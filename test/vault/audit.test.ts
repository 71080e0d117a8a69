import { asc, eq, sql } from 'drizzle-orm';
import { afterEach, describe, expect, it } from 'vitest';
import { auditLog } from '../../src/db/schema.js';
import { openTestVault, type TestVault, withAuditHistory } from '../support/vault.js';

let tv: TestVault | undefined;
afterEach(async () => {
  await tv?.close();
  tv = undefined;
});

async function vaultWithHistory(): Promise<TestVault> {
  tv = await openTestVault();
  return withAuditHistory(tv, 'audit test');
}

describe('the MAC-chained audit log', () => {
  it('records every key create, lease, destroy, rotation and retirement, in order, and verifies', async () => {
    const { app } = await vaultWithHistory();
    const rows = await app.db.db.select().from(auditLog).orderBy(asc(auditLog.seq));
    const actions = rows.map((r) => r.action);
    expect(actions).toEqual([
      'audit.head.anchor', // the first append anchors the seeded head (it has no MAC)
      'kek.epoch.create', // epoch 1 at first start
      'kek.rotate', // activated
      'key.create',
      'key.lease',
      'key.create',
      'key.lease',
      'key.destroy',
      'kek.epoch.create',
      'kek.rotate',
      'kek.epoch.retire',
      'kek.rotate',
    ]);
    expect(rows.map((r) => r.seq)).toEqual(rows.map((_, i) => i + 1));
    const result = await app.audit.verify(app.db.db);
    expect(result).toEqual({ ok: true, rows: rows.length, headSeq: rows.length, problems: [], head: 'anchored', warnings: [] });
  });

  it('detects an edited row', async () => {
    const { app } = await vaultWithHistory();
    await app.db.db.update(auditLog).set({ actor: 'mallory' }).where(eq(auditLog.seq, 4));
    expect(await app.audit.verify(app.db.db)).toMatchObject({ ok: false, brokenAt: 4 });
  });

  it('detects a deleted row in the middle', async () => {
    const { app } = await vaultWithHistory();
    await app.db.db.delete(auditLog).where(eq(auditLog.seq, 6));
    expect(await app.audit.verify(app.db.db)).toMatchObject({ ok: false, brokenAt: 6 });
  });

  it('detects rows removed from the end', async () => {
    const { app } = await vaultWithHistory();
    await app.db.db.delete(auditLog).where(sql`${auditLog.seq} > 8`);
    const result = await app.audit.verify(app.db.db);
    expect(result.ok).toBe(false);
    expect(result.problem).toMatch(/removed from the end/);
  });

  it('detects a row renumbered to hide a deletion, even with its chain link copied', async () => {
    const { app } = await vaultWithHistory();
    const [five] = await app.db.db.select().from(auditLog).where(eq(auditLog.seq, 5));
    await app.db.db.delete(auditLog).where(eq(auditLog.seq, 5));
    await app.db.db.update(auditLog).set({ seq: 5, prevMac: five!.prevMac }).where(eq(auditLog.seq, 6));
    expect(await app.audit.verify(app.db.db)).toMatchObject({ ok: false, brokenAt: 5 });
  });

  it('a chain verified under another root key does not verify (the MAC key is secret)', async () => {
    const { app } = await vaultWithHistory();
    const { AuditLog } = await import('../../src/vault/audit.js');
    const forged = new AuditLog(new Uint8Array(32).fill(9), new Uint8Array(32).fill(9));
    const result = await forged.verify(app.db.db);
    expect(result.ok).toBe(false);
    expect(result).toMatchObject({ brokenAt: 1, head: 'invalid' });
  });
});
