import { and, eq, sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { queryRows } from '../../src/db/client.js';
import { auditLog, destructionLedger, subjectKeys } from '../../src/db/schema.js';
import { LetheError } from '../../src/errors.js';
import { hashHex } from '../../src/vault/subjects.js';
import { openTestVault, type TestVault } from '../support/vault.js';

let tv: TestVault;
beforeAll(async () => {
  tv = await openTestVault({ extraEnv: { LETHE_LEASE_TTL_SECONDS: '120' } });
});
afterAll(async () => {
  await tv?.close();
});

describe('subject keys on PostgreSQL', () => {
  it('creates one key per subject and returns the same key afterwards', async () => {
    const first = await tv.app.keys.ensureKey('user:alice', 'writer');
    const again = await tv.app.keys.ensureKey('user:alice', 'writer');
    expect(first.created).toBe(true);
    expect(again.created).toBe(false);
    expect(again.keyId).toBe(first.keyId);
    expect(first.keyId).toMatch(/^key_[A-Za-z0-9_-]{22}$/);
  });

  it('concurrent first requests for one subject agree on a single key', async () => {
    const results = await Promise.all(Array.from({ length: 8 }, () => tv.app.keys.lease('user:race', 'writer')));
    expect(new Set(results.map((r) => r.keyId)).size).toBe(1);
    expect(new Set(results.map((r) => Buffer.from(r.dek).toString('hex'))).size).toBe(1);
    const rows = await tv.app.db.db.select().from(subjectKeys).where(eq(subjectKeys.keyId, results[0]!.keyId));
    expect(rows).toHaveLength(1);
  });

  it('a lease hands out the DEK, is audited with its id and expiry, and expires after the configured TTL', async () => {
    const before = Date.now();
    const lease = await tv.app.keys.lease('user:bob', 'writer');
    expect(lease.dek).toHaveLength(32);
    expect(lease.leaseId).toMatch(/^lease_/);
    const ttl = lease.expiresAt.getTime() - before;
    expect(ttl).toBeGreaterThanOrEqual(119_000);
    expect(ttl).toBeLessThanOrEqual(121_000);
    const [audit] = await tv.app.db.db
      .select()
      .from(auditLog)
      .where(and(eq(auditLog.keyId, lease.keyId), eq(auditLog.action, 'key.lease')));
    expect(JSON.parse(audit!.detail)).toEqual({ leaseId: lease.leaseId, expiresAt: lease.expiresAt.toISOString() });
  });

  it('the same DEK comes back from the cache, from the database and from another replica', async () => {
    const a = await tv.app.keys.lease('user:carol', 'writer');
    const b = await tv.app.keys.lease('user:carol', 'writer');
    const replica = await tv.reopen({ listen: false });
    const c = await replica.keys.lease('user:carol', 'writer');
    expect(Buffer.from(b.dek)).toEqual(Buffer.from(a.dek));
    expect(Buffer.from(c.dek)).toEqual(Buffer.from(a.dek));
    expect(c.keyId).toBe(a.keyId);
  });

  it('the database holds neither subject ids nor plaintext DEKs', async () => {
    const lease = await tv.app.keys.lease('user:dave@example.com', 'writer');
    const dump = await queryRows<{ t: string }>(
      tv.app.db.db,
      sql`select string_agg(t::text, '|') as t from (
            select row_to_json(s)::text as t from subject_keys s
            union all select row_to_json(l)::text from destruction_ledger l
            union all select row_to_json(a)::text from audit_log a) x`,
    );
    const all = dump[0]?.t ?? '';
    expect(all).not.toContain('dave');
    expect(all).not.toContain(Buffer.from(lease.dek).toString('hex'));
    const [row] = await tv.app.db.db.select().from(subjectKeys).where(eq(subjectKeys.keyId, lease.keyId));
    expect(Buffer.from(row!.wrappedDek).includes(Buffer.from(lease.dek))).toBe(false);
  });

  it('destroying a key removes its row, writes the ledger without key material, and the next lease gets a new key', async () => {
    const lease = await tv.app.keys.lease('user:erin', 'writer');
    const [before] = await tv.app.db.db.select().from(subjectKeys).where(eq(subjectKeys.keyId, lease.keyId));
    const d = await tv.app.keys.destroyKey(lease.keyId, { reason: 'test', actor: 'admin' });
    expect(d.destroyedNow).toBe(true);
    expect(d.leasedUntil?.getTime()).toBe(lease.expiresAt.getTime());
    const rows = await tv.app.db.db.select().from(subjectKeys).where(eq(subjectKeys.keyId, lease.keyId));
    expect(rows).toEqual([]);
    const [ledger] = await tv.app.db.db.select().from(destructionLedger).where(eq(destructionLedger.keyId, lease.keyId));
    expect(ledger).toBeDefined();
    expect(Object.keys(ledger!).sort()).toEqual([
      'destroyedAt',
      'durableAt',
      'keyId',
      'keyKind',
      'leasedUntil',
      'reason',
      'replacedBy',
      'seq',
      'subjectHash',
      'wrappedEpoch',
    ]);
    // only a re-key's destruction carries its replacement (ciphertext: restore-carry.ts); a destruction carries nothing
    expect(ledger!.replacedBy).toBeNull();
    expect(ledger!.keyKind).toBe('subject');
    expect(hashHex(ledger!.subjectHash!)).toBe(hashHex(before!.subjectHash));

    const again = await tv.app.keys.destroyKey(lease.keyId, { reason: 'twice', actor: 'admin' });
    expect(again.destroyedNow).toBe(false);
    expect(again.destroyedAt.getTime()).toBe(d.destroyedAt.getTime());

    await expect(tv.app.keys.dekFor(lease.keyId)).rejects.toMatchObject({ code: 'key_destroyed' });
    const next = await tv.app.keys.lease('user:erin', 'writer');
    expect(next.keyId).not.toBe(lease.keyId);
    expect(Buffer.from(next.dek)).not.toEqual(Buffer.from(lease.dek));
  });

  it('a replica holding the DEK in its cache never leases a key destroyed elsewhere', async () => {
    const replica = await tv.reopen({ listen: false });
    const cached = await replica.keys.lease('user:frank', 'writer');
    await tv.app.keys.destroyKey(cached.keyId, { reason: 'test', actor: 'admin' });
    // replica has no listener: its cache still holds the DEK, the commit check refuses it
    const after = await replica.keys.lease('user:frank', 'writer');
    expect(after.keyId).not.toBe(cached.keyId);
  });

  it('a fenced key refuses leases with erasure_in_progress and can be unfenced', async () => {
    const lease = await tv.app.keys.lease('user:gina', 'writer');
    await tv.app.keys.fenceKey(lease.keyId, 'eraser');
    await expect(tv.app.keys.lease('user:gina', 'writer')).rejects.toMatchObject({ code: 'erasure_in_progress', retryable: true });
    await tv.app.keys.unfenceKey(lease.keyId, 'eraser');
    expect((await tv.app.keys.lease('user:gina', 'writer')).keyId).toBe(lease.keyId);
  });

  it('illegal transitions are typed errors: a destroyed key cannot be fenced or unfenced', async () => {
    const lease = await tv.app.keys.lease('user:hank', 'writer');
    await tv.app.keys.destroyKey(lease.keyId, { reason: 'test', actor: 'admin' });
    const err = await tv.app.keys.fenceKey(lease.keyId, 'eraser').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(LetheError);
    expect((err as LetheError).code).toBe('illegal_transition');
    await expect(tv.app.keys.unfenceKey(lease.keyId, 'eraser')).rejects.toMatchObject({ code: 'illegal_transition' });
    await expect(tv.app.keys.destroyKey('key_doesnotexist0000000000', { reason: 'x', actor: 'admin' })).rejects.toMatchObject({
      code: 'not_found',
    });
  });

  it('validity answers active, destroyed and unknown for up to 10,000 ids', async () => {
    const live = await tv.app.keys.lease('user:ivy', 'writer');
    const dead = await tv.app.keys.lease('user:jack', 'writer');
    await tv.app.keys.destroyKey(dead.keyId, { reason: 'test', actor: 'admin' });
    // pending until the ledger chain in the backup store holds it, then destroyed
    expect((await tv.app.keys.validity([dead.keyId]))[dead.keyId]).toMatch(/^(destruction_pending|destroyed)$/);
    expect((await tv.app.backups.awaitDurable([dead.keyId], 30_000)).pending).toEqual([]);
    const unknown = Array.from({ length: 9_998 }, (_, i) => `key_unknown${i}`);
    const states = await tv.app.keys.validity([live.keyId, dead.keyId, ...unknown]);
    expect(states[live.keyId]).toBe('active');
    expect(states[dead.keyId]).toBe('destroyed');
    expect(states.key_unknown5).toBe('unknown');
    expect(Object.keys(states)).toHaveLength(10_000);
    await expect(tv.app.keys.validity([...unknown, 'a', 'b', 'c'])).rejects.toMatchObject({ code: 'validation_failed' });
  });

  it('bad subject ids are refused before touching the database', async () => {
    for (const bad of ['', 'has space', 'x'.repeat(201), 'semi;colon', 'ünï']) {
      await expect(tv.app.keys.lease(bad, 'writer')).rejects.toMatchObject({ code: 'validation_failed' });
    }
  });

  it('two replicas leasing and creating keys at once keep one valid audit chain with every lease in it', async () => {
    const other = await tv.reopen({ listen: false });
    const before = await tv.app.audit.head(tv.app.db.db);
    const subjects = Array.from({ length: 40 }, (_, i) => `user:contended${i}`);
    const results = await Promise.all(
      subjects.flatMap((s, i) => [tv.app.keys.lease(s, 'writer'), other.keys.lease(subjects[(i + 7) % subjects.length]!, 'writer')]),
    );
    expect(results).toHaveLength(80);
    const leaseRows = await tv.app.db.db
      .select()
      .from(auditLog)
      .where(and(eq(auditLog.action, 'key.lease'), sql`${auditLog.seq} > ${before.seq}`));
    expect(new Set(leaseRows.map((r) => (JSON.parse(r.detail) as { leaseId: string }).leaseId))).toEqual(new Set(results.map((r) => r.leaseId)));
    expect(await tv.app.audit.verify(tv.app.db.db)).toMatchObject({ ok: true });
  });
});
