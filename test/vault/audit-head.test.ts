/**
 * The audit chain's head is MAC'd (issue 13): rows removed from the end with the head
 * moved back by hand are noticed, so is a head rolled back to a pair that was once
 * valid, and — given an anchor recorded outside the database — a rollback of the
 * audit tables as a whole. Real PostgreSQL throughout.
 */
import { hmac } from '@noble/hashes/hmac.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { sql } from 'drizzle-orm';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { deriveSubkey } from '../../src/crypto/index.js';
import { queryRows } from '../../src/db/client.js';
import type { AuditTip } from '../../src/vault/audit.js';
import { createTestDatabase } from '../support/pg.js';
import { minioEnv, openTestVault, type TestVault, withAuditHistory } from '../support/vault.js';

let tv: TestVault | undefined;
afterEach(async () => {
  await tv?.close();
  tv = undefined;
});

async function vaultWithHistory(): Promise<TestVault> {
  tv = await openTestVault();
  return withAuditHistory(tv, 'audit head test');
}

interface HeadRow {
  seq: number;
  mac: Uint8Array;
  headMac: Uint8Array | null;
}

async function headRow(t: TestVault): Promise<HeadRow> {
  const [row] = await queryRows<{ seq: string | number; mac: Uint8Array; head_mac: Uint8Array | null }>(
    t.app.db.db,
    sql`select seq, mac, head_mac from audit_head where id = 1`,
  );
  return { seq: Number(row!.seq), mac: new Uint8Array(row!.mac), headMac: row!.head_mac === null ? null : new Uint8Array(row!.head_mac) };
}

/** What someone with write access to the database (not the root key) can do to the head. */
async function setHead(t: TestVault, head: HeadRow): Promise<void> {
  await t.app.db.db.execute(
    sql`update audit_head set seq = ${head.seq}, mac = ${Buffer.from(head.mac)}, head_mac = ${head.headMac === null ? null : Buffer.from(head.headMac)} where id = 1`,
  );
}

async function rowMac(t: TestVault, seq: number): Promise<Uint8Array> {
  const [row] = await queryRows<{ mac: Uint8Array }>(t.app.db.db, sql`select mac from audit_log where seq = ${seq}`);
  return new Uint8Array(row!.mac);
}

async function lastSeq(t: TestVault): Promise<number> {
  const [row] = await queryRows<{ n: string | number }>(t.app.db.db, sql`select max(seq) as n from audit_log`);
  return Number(row!.n);
}

async function actions(t: TestVault): Promise<string[]> {
  const rows = await queryRows<{ action: string }>(t.app.db.db, sql`select action from audit_log order by seq`);
  return rows.map((r) => r.action);
}

/** The head MAC computed here, from the root key, by the documented encoding (a known-answer check). */
function expectedHeadMac(t: TestVault, tip: AuditTip): Uint8Array {
  const key = deriveSubkey(Buffer.from(t.env.LETHE_ROOT_KEY!, 'base64'), 'audit-head');
  const seq = Buffer.alloc(8);
  seq.writeBigUInt64BE(BigInt(tip.seq));
  const mac = hmac(sha256, key, Buffer.concat([Buffer.from('lethe/v1/audit-head'), Buffer.from([0]), seq, tip.mac]));
  key.fill(0);
  return mac;
}

describe('rows removed from the end of the audit chain', () => {
  it("the auditor's report: tail rows deleted and the head pointed at the new last row by SQL — verify fails naming the head's MAC", async () => {
    const t = await vaultWithHistory();
    const cut = (await lastSeq(t)) - 3;
    await t.app.db.db.execute(sql`delete from audit_log where seq > ${cut}`);
    await t.app.db.db.execute(sql`update audit_head set seq = ${cut}, mac = (select mac from audit_log where seq = ${cut}) where id = 1`);
    const result = await t.app.audit.verify(t.app.db.db);
    expect(result.ok).toBe(false);
    expect(result.rows).toBe(cut);
    expect(result.head).toBe('invalid');
    expect(result.brokenAt).toBe(cut + 1);
    expect(result.problem).toMatch(new RegExp(`the head \\(row ${cut}\\) carries a MAC that does not verify`));
    expect(result.problem).toMatch(new RegExp(`rows after row ${cut} may have been removed`));
  });

  it('the next audited change refuses to extend that head, so the truncation is not blessed by a fresh head MAC', async () => {
    const t = await vaultWithHistory();
    const cut = (await lastSeq(t)) - 2;
    await t.app.db.db.execute(sql`delete from audit_log where seq > ${cut}`);
    await t.app.db.db.execute(sql`update audit_head set seq = ${cut}, mac = (select mac from audit_log where seq = ${cut}) where id = 1`);
    // a lease (the group-commit path) and a key creation (the locked path) are both refused
    await expect(t.app.keys.lease('user:b', 'writer')).rejects.toThrow(/head does not verify/);
    await expect(t.app.keys.lease('user:new', 'writer')).rejects.toThrow(/head does not verify/);
    expect(await lastSeq(t)).toBe(cut);
    expect(await t.app.audit.verify(t.app.db.db)).toMatchObject({ ok: false, head: 'invalid', brokenAt: cut + 1 });
  });

  it('tail rows deleted with the head left alone: the head names rows that are gone', async () => {
    const t = await vaultWithHistory();
    const last = await lastSeq(t);
    await t.app.db.db.execute(sql`delete from audit_log where seq > ${last - 2}`);
    const result = await t.app.audit.verify(t.app.db.db);
    expect(result).toMatchObject({ ok: false, head: 'anchored', brokenAt: last - 1, rows: last - 2, headSeq: last });
    expect(result.problem).toBe(`the chain ends at row ${last - 2} but its head says ${last}: rows were removed from the end`);
  });
});

describe('a head rolled back to an older pair', () => {
  it('the older (seq, mac) with the current head MAC (stale for it) does not verify', async () => {
    const t = await vaultWithHistory();
    const now = await headRow(t);
    const older = now.seq - 4;
    await setHead(t, { seq: older, mac: await rowMac(t, older), headMac: now.headMac });
    const result = await t.app.audit.verify(t.app.db.db);
    expect(result.ok).toBe(false);
    expect(result.head).toBe('invalid');
    expect(result.problems).toContain(`the chain continues to row ${now.seq} past its head at row ${older}: the head was moved back`);
    expect(result.problem).toMatch(/carries a MAC that does not verify: it was moved or forged/);
  });

  it('the older (seq, mac) with a forged head MAC does not verify', async () => {
    const t = await vaultWithHistory();
    const now = await headRow(t);
    const older = now.seq - 4;
    await t.app.db.db.execute(sql`delete from audit_log where seq > ${older}`);
    await setHead(t, { seq: older, mac: await rowMac(t, older), headMac: new Uint8Array(32).fill(0xa5) });
    const result = await t.app.audit.verify(t.app.db.db);
    expect(result).toMatchObject({ ok: false, head: 'invalid', brokenAt: older + 1, rows: older });
  });

  it('the whole head as it once was (its MAC valid then) over rows that go on: the head was moved back', async () => {
    const t = await vaultWithHistory();
    const saved = await headRow(t);
    await t.app.keys.lease('user:c', 'writer');
    await t.app.keys.lease('user:c', 'writer');
    const now = await headRow(t);
    expect(now.seq).toBeGreaterThan(saved.seq);
    await setHead(t, saved);
    const result = await t.app.audit.verify(t.app.db.db);
    expect(result).toMatchObject({ ok: false, head: 'anchored', brokenAt: saved.seq + 1 });
    expect(result.problem).toBe(`the chain continues to row ${now.seq} past its head at row ${saved.seq}: the head was moved back`);
    // and nothing extends it (the rows after it would be renumbered over)
    await expect(t.app.keys.lease('user:c', 'writer')).rejects.toThrow(/continues past its head/);
    await expect(t.app.keys.lease('user:d', 'writer')).rejects.toThrow(/continues past its head/);
    expect(await lastSeq(t)).toBe(now.seq);
  });
});

describe('a rollback of the audit tables as a whole, caught only through an anchor held outside the database', () => {
  it('rows and head restored to an older state verify on their own, and fail against a later anchor', async () => {
    const t = await vaultWithHistory();
    const earlier = await headRow(t);
    const earlierTip = await t.app.audit.tip(t.app.db.db);
    await t.app.keys.lease('user:c', 'writer');
    await t.app.keys.lease('user:d', 'writer');
    const anchor = await t.app.audit.tip(t.app.db.db); // recorded outside the database
    expect(anchor.seq).toBeGreaterThan(earlier.seq);

    // the rollback: the rows after the earlier state gone, the head as it was then
    await t.app.db.db.execute(sql`delete from audit_log where seq > ${earlier.seq}`);
    await setHead(t, earlier);

    // the database alone cannot tell (the bound SECURITY.md states)
    expect(await t.app.audit.verify(t.app.db.db)).toMatchObject({ ok: true, head: 'anchored', rows: earlier.seq });
    // the earlier anchor still matches
    expect(await t.app.audit.verify(t.app.db.db, { anchor: earlierTip })).toMatchObject({
      ok: true,
      anchor: { seq: earlier.seq, state: 'matches' },
    });
    const result = await t.app.audit.verify(t.app.db.db, { anchor });
    expect(result).toMatchObject({ ok: false, head: 'anchored', rows: earlier.seq, anchor: { seq: anchor.seq, state: 'missing' } });
    expect(result.problem).toBe(
      `the anchor names row ${anchor.seq} but the chain ends at row ${earlier.seq}: rows were removed or the database was rolled back to an older state`,
    );

    // after new appends the chain reaches the anchor's row again, with another history
    for (let i = 0; i < anchor.seq - earlier.seq; i++) await t.app.keys.lease('user:b', 'writer');
    expect(await lastSeq(t)).toBeGreaterThanOrEqual(anchor.seq);
    const again = await t.app.audit.verify(t.app.db.db, { anchor });
    expect(again).toMatchObject({ ok: false, head: 'anchored', brokenAt: anchor.seq, anchor: { seq: anchor.seq, state: 'differs' } });
    expect(again.problem).toBe(`row ${anchor.seq} does not carry the anchor's MAC: the chain was replaced by another history`);
  });

  it('an anchor that is not a row number and a 32-byte MAC is refused', async () => {
    tv = await openTestVault();
    const { app } = tv;
    await expect(app.audit.verify(app.db.db, { anchor: { seq: -1, mac: new Uint8Array(32) } })).rejects.toMatchObject({ code: 'validation_failed' });
    await expect(app.audit.verify(app.db.db, { anchor: { seq: 1, mac: new Uint8Array(31) } })).rejects.toMatchObject({ code: 'validation_failed' });
  });
});

describe('tip', () => {
  it('answers the last row outside a transaction, and inside one sees its own append', async () => {
    const t = await vaultWithHistory();
    const last = await lastSeq(t);
    const tip = await t.app.audit.tip(t.app.db.db);
    expect(tip.seq).toBe(last);
    expect(Buffer.from(tip.mac).equals(Buffer.from(await rowMac(t, last)))).toBe(true);
    const inside = await t.app.db.db.transaction(async (tx) => {
      await t.app.audit.append(tx, [{ actor: 'test', action: 'training.exposure', detail: { n: 1 } }]);
      return t.app.audit.tip(tx);
    });
    expect(inside.seq).toBe(last + 1);
    expect(Buffer.from(inside.mac).equals(Buffer.from(await rowMac(t, last + 1)))).toBe(true);
    expect(await t.app.audit.verify(t.app.db.db, { anchor: inside })).toMatchObject({ ok: true, anchor: { state: 'matches' } });
  });

  it('refuses a head whose MAC does not verify', async () => {
    const t = await vaultWithHistory();
    const now = await headRow(t);
    await setHead(t, { ...now, headMac: new Uint8Array(32) });
    await expect(t.app.audit.tip(t.app.db.db)).rejects.toMatchObject({ code: 'unavailable', message: expect.stringMatching(/head does not verify/) });
  });
});

describe('a head without a MAC', () => {
  it('a legacy chain (from before head MACs) is reported unanchored, and is anchored by the next append — here a lease', async () => {
    const t = (tv = await openTestVault());
    const lease = await t.app.keys.lease('user:legacy', 'writer');
    // replace the chain with one written the way lethe wrote it before head MACs:
    // no anchor row, and a head with no MAC
    const legacy = t.app.audit.chain(
      [
        { actor: 'admin', action: 'kek.epoch.create', epoch: 1, detail: { provider: 'local' } },
        { actor: 'admin', action: 'kek.rotate', epoch: 1, detail: {} },
        { actor: 'writer', action: 'key.create', keyId: lease.keyId },
      ],
      { seq: 0, mac: new Uint8Array(32) },
    );
    await t.app.db.db.transaction(async (tx) => {
      await tx.execute(sql`delete from audit_log`);
      await tx.execute(sql`insert into audit_log (seq, at, actor, action, key_id, subject_hash, epoch, detail, prev_mac, mac)
        select v.seq, v.at, v.actor, v.action, v.key_id, decode(v.subject_hash, 'hex'), v.epoch, v.detail, decode(v.prev_mac, 'hex'), decode(v.mac, 'hex')
          from json_to_recordset(${legacy.json}::json) as v(seq bigint, at timestamptz, actor text, action text, key_id text,
               subject_hash text, epoch integer, detail text, prev_mac text, mac text)`);
    });
    await setHead(t, { seq: legacy.tip.seq, mac: legacy.tip.mac, headMac: null });

    const before = await t.app.audit.verify(t.app.db.db);
    expect(before).toMatchObject({ ok: true, rows: 3, headSeq: 3, head: 'unanchored', problems: [] });
    expect(before.warnings).toEqual([
      'the head (row 3) carries no MAC yet (a chain from before head MACs): rows removed from the end together with a moved head would not be noticed; the next audited change anchors it',
    ]);

    await t.app.keys.lease('user:legacy', 'writer');
    const after = await t.app.audit.verify(t.app.db.db);
    expect(after).toMatchObject({ ok: true, rows: 5, headSeq: 5, head: 'anchored', problems: [], warnings: [] });
    expect(await actions(t)).toEqual(['kek.epoch.create', 'kek.rotate', 'key.create', 'audit.head.anchor', 'key.lease']);
    const head = await headRow(t);
    expect(Buffer.from(head.headMac!).equals(Buffer.from(expectedHeadMac(t, head)))).toBe(true);
  });

  it('a MAC removed from an anchored chain (to pass a truncation off as legacy) fails verify, and nothing extends that head', async () => {
    const t = await vaultWithHistory();
    expect((await actions(t))[0]).toBe('audit.head.anchor'); // a fresh database's first append anchored the seeded head
    const cut = (await lastSeq(t)) - 3;
    await t.app.db.db.execute(sql`delete from audit_log where seq > ${cut}`);
    await setHead(t, { seq: cut, mac: await rowMac(t, cut), headMac: null });
    const result = await t.app.audit.verify(t.app.db.db);
    expect(result).toMatchObject({ ok: false, head: 'unanchored', brokenAt: cut + 1 });
    expect(result.problem).toBe(
      `the head (row ${cut}) carries no MAC, but the chain was anchored at row 1: its MAC was removed — rows after row ${cut} may have been removed`,
    );
    await expect(t.app.keys.lease('user:b', 'writer')).rejects.toThrow(/has no MAC but the chain was anchored at row 1/);
    await expect(t.app.audit.tip(t.app.db.db)).rejects.toThrow(/anchored at row 1/);
    expect(await lastSeq(t)).toBe(cut);
  });
});

describe('lease group commit', () => {
  it('many concurrent leases on two replicas keep the head MAC right: verify ok, and the head MAC is the documented HMAC', async () => {
    const t = (tv = await openTestVault());
    const other = await t.reopen({ listen: false });
    const subjects = Array.from({ length: 30 }, (_, i) => `user:group${i}`);
    // keys first, so the rounds below are pure lease batches
    await Promise.all(subjects.map((s) => t.app.keys.lease(s, 'writer')));
    const before = await headRow(t);
    const cas = vi.spyOn(t.app.audit, 'appendIfHead');
    const rounds = await Promise.all(
      Array.from({ length: 5 }, (_, r) =>
        Promise.all(subjects.flatMap((s, i) => [t.app.keys.lease(s, 'writer'), other.keys.lease(subjects[(i + r + 1) % subjects.length]!, 'writer')])),
      ),
    );
    const leases = rounds.flat();
    expect(leases).toHaveLength(300);
    // this replica's batches went through the one-statement compare-and-set
    const outcomes = await Promise.all(cas.mock.results.map((r) => r.value as Promise<{ appended: boolean }>));
    expect(outcomes.filter((o) => o.appended).length).toBeGreaterThan(0);
    const [count] = await queryRows<{ n: string | number }>(
      t.app.db.db,
      sql`select count(*) as n from audit_log where action = 'key.lease' and seq > ${before.seq}`,
    );
    expect(Number(count!.n)).toBe(300);
    const head = await headRow(t);
    expect(head.seq).toBe(await lastSeq(t));
    expect(Buffer.from(head.headMac!).equals(Buffer.from(expectedHeadMac(t, head)))).toBe(true);
    expect(await t.app.audit.verify(t.app.db.db)).toMatchObject({ ok: true, head: 'anchored', rows: head.seq, warnings: [] });
  });

  it('a single lease on an anchored head (the one-statement path) sets the head MAC for its new tip', async () => {
    const t = (tv = await openTestVault());
    await t.app.keys.lease('user:one', 'writer');
    const before = await headRow(t);
    const cas = vi.spyOn(t.app.audit, 'appendIfHead');
    const locked = vi.spyOn(t.app.audit, 'append');
    await t.app.keys.lease('user:one', 'writer');
    expect(locked).not.toHaveBeenCalled();
    expect(await Promise.all(cas.mock.results.map((r) => r.value as Promise<{ appended: boolean }>))).toMatchObject([{ appended: true }]);
    const head = await headRow(t);
    expect(head.seq).toBe(before.seq + 1);
    expect(Buffer.from(head.headMac!).equals(Buffer.from(before.headMac!))).toBe(false);
    expect(Buffer.from(head.headMac!).equals(Buffer.from(expectedHeadMac(t, head)))).toBe(true);
  });
});

describe('other writers of audit_head', () => {
  it('on the embedded PGlite database the head is anchored from the first append and kept by leases', async () => {
    const t = (tv = await openTestVault({ embedded: true }));
    await t.app.keys.lease('user:pglite', 'writer');
    await t.app.keys.lease('user:pglite', 'writer');
    const head = await headRow(t);
    expect(Buffer.from(head.headMac!).equals(Buffer.from(expectedHeadMac(t, head)))).toBe(true);
    expect(await t.app.audit.verify(t.app.db.db)).toMatchObject({ ok: true, head: 'anchored', rows: head.seq, warnings: [] });
    const cut = head.seq - 1;
    await t.app.db.db.execute(sql`delete from audit_log where seq > ${cut}`);
    await t.app.db.db.execute(sql`update audit_head set seq = ${cut}, mac = (select mac from audit_log where seq = ${cut}) where id = 1`);
    expect(await t.app.audit.verify(t.app.db.db)).toMatchObject({ ok: false, head: 'invalid', brokenAt: cut + 1 });
  });

  it("a restore loads the backup's head with its MAC and extends it with the restore row: verify ok, and leases go on", async () => {
    const t = (tv = await openTestVault({ extraEnv: minioEnv('lethe-ahead') }));
    await t.app.log.append('user:restored', { text: 'kept across the restore' }, 'writer');
    const { backupId } = await t.app.backups.run();
    const target = await createTestDatabase();
    try {
      const restored = await t.reopen({}, { DATABASE_URL: target.url, S3_BUCKET: `lethe-ahead-live-${Date.now()}` });
      await restored.backups.restore(backupId, { actor: 'test' });
      const rows = await queryRows<{ action: string }>(restored.db.db, sql`select action from audit_log order by seq desc limit 1`);
      expect(rows[0]!.action).toBe('backup.restore');
      // the backup's head came with its MAC: the restore extended it without anchoring it again
      const anchors = await queryRows<{ seq: string | number }>(restored.db.db, sql`select seq from audit_log where action = 'audit.head.anchor'`);
      expect(anchors.map((r) => Number(r.seq))).toEqual([1]);
      expect(await restored.audit.verify(restored.db.db)).toMatchObject({ ok: true, head: 'anchored', warnings: [] });
      await restored.keys.lease('user:restored', 'writer');
      expect(await restored.audit.verify(restored.db.db)).toMatchObject({ ok: true, head: 'anchored' });
    } finally {
      await target.drop().catch(() => {});
    }
  });
});
