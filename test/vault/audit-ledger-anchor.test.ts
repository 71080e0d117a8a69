/**
 * A rollback of the whole database is visible through the ledger chain: each chain
 * record carries the audit tip when it was written, and `lethe audit verify` anchors
 * on the newest one by default. The audit tables are put back as they stood earlier
 * (rows, head and head MAC all valid then); verify without the anchor still passes —
 * the bound SECURITY.md states — and with the ledger's anchor it fails. PostgreSQL and
 * the embedded backup folder.
 */
import { rmSync } from 'node:fs';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openApp } from '../../src/app/open.js';
import { loadConfig } from '../../src/config/index.js';
import { createLogger } from '../../src/observability/logger.js';
import { createTestDatabase, type TestDatabase } from '../support/pg.js';
import { runCli } from '../support/process.js';
import { tempDir, testEnv } from '../support/vault.js';

describe("the ledger chain's audit anchor", () => {
  let db: TestDatabase;
  let dataDir: string;
  let env: Record<string, string>;

  beforeAll(async () => {
    db = await createTestDatabase();
    dataDir = tempDir('lethe-audit-anchor-');
    env = testEnv({ databaseUrl: db.url, dataDir });
  });
  afterAll(async () => {
    await db?.drop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('catches the audit tables rolled back behind the tip the newest ledger record carries', async () => {
    const sql = postgres(db.url, { max: 1, onnotice: () => {} });
    try {
      const vault = await openApp(loadConfig(env), { logger: createLogger('silent'), listen: false });
      let saved: { rows: postgres.Row[]; head: postgres.Row };
      try {
        const { keyId } = await vault.keys.lease('user:anchor-a', 'writer');
        await vault.keys.lease('user:anchor-b', 'writer');
        // the audit tables as they stand now: a snapshot someone could restore later
        saved = {
          rows: await sql`select * from audit_log order by seq`,
          head: (await sql`select * from audit_head`)[0]!,
        };
        // more audited work, and a destruction whose ledger record carries the newer tip
        await vault.keys.destroyKey(keyId, { reason: 'erasure', actor: 'eraser' });
        expect((await vault.backups.awaitDurable([keyId], 30_000)).pending).toEqual([]);
        const chain = await vault.backups.ledgerChain();
        const tip = await vault.audit.tip(vault.db.db);
        expect(chain.auditHead?.seq).toBeGreaterThan(Number(saved.head.seq));
        expect(chain.auditHead!.seq).toBeLessThanOrEqual(tip.seq);
      } finally {
        await vault.close();
      }

      const intact = await runCli(['audit', 'verify'], env);
      expect(intact.code, intact.stderr).toBe(0);
      expect(JSON.parse(intact.stdout)).toMatchObject({ ok: true, anchorSource: 'ledger chain', anchor: { state: 'matches' } });

      // the rollback: the audit tables exactly as they were (every MAC valid then)
      await sql.begin(async (tx) => {
        await tx`delete from audit_log where seq > ${saved.head.seq}`;
        await tx`update audit_head set seq = ${saved.head.seq}, mac = ${saved.head.mac}, head_mac = ${saved.head.head_mac}`;
      });
      const unanchored = await runCli(['audit', 'verify', '--no-ledger-anchor'], env);
      expect(unanchored.code, 'without an anchor held outside the database the rollback is invisible (the stated bound)').toBe(0);
      const anchored = await runCli(['audit', 'verify'], env);
      expect(anchored.code).toBe(1);
      expect(JSON.parse(anchored.stdout)).toMatchObject({ ok: false, anchorSource: 'ledger chain', anchor: { state: 'missing' } });
    } finally {
      await sql.end({ timeout: 1 });
    }
  }, 120_000);
});
