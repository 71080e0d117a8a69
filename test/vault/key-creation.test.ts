/**
 * Group-committed key creation (src/vault/creation.ts) on real PostgreSQL: one live key
 * per subject however creations race (one process, two replicas), a refused subject
 * refused alone in a shared batch, a key another writer commits under the batch's
 * statement (unique index) answered as the subject's key, an epoch switched by a
 * rotation, and the transactional path a guard without a SQL form takes.
 */
import { sql } from 'drizzle-orm';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { queryRows } from '../../src/db/client.js';
import { isLetheError, LetheError } from '../../src/errors.js';
import { newId } from '../../src/ids.js';
import type { AuditLog } from '../../src/vault/audit.js';
import { openTestVault, type TestVault } from '../support/vault.js';

let tv: TestVault;
beforeAll(async () => {
  tv = await openTestVault({ app: { erasureWorker: false } });
});
afterAll(async () => {
  await tv?.close();
});

const hashOf = (t: TestVault, subject: string) => Buffer.from(t.app.keys.subjectHash(subject));

async function liveKeyIds(t: TestVault, subject: string): Promise<string[]> {
  return (await queryRows<{ key_id: string }>(t.app.db.db, sql`select key_id from subject_keys where subject_hash = ${hashOf(t, subject)}`)).map(
    (r) => r.key_id,
  );
}

async function createRowsOf(t: TestVault, subject: string): Promise<number> {
  const [row] = await queryRows<{ n: string | number }>(
    t.app.db.db,
    sql`select count(*) as n from audit_log where action = 'key.create' and subject_hash = ${hashOf(t, subject)}`,
  );
  return Number(row!.n);
}

/**
 * Holds the next group-commit statement of `audit` until `ready()`, so the creations
 * behind it queue into one batch; runs `meanwhile` before letting it go.
 */
function holdNextStatement(audit: AuditLog, ready: () => boolean, meanwhile: () => Promise<unknown> = async () => {}): void {
  const original = audit.appendIfHead.bind(audit);
  vi.spyOn(audit, 'appendIfHead').mockImplementationOnce(async (...args) => {
    while (!ready()) await new Promise((r) => setTimeout(r, 10));
    await new Promise((r) => setTimeout(r, 20)); // the last wrapped creation joins the queue
    await meanwhile();
    return original(...args);
  });
}

describe('group-committed key creation', () => {
  it('concurrent creations for one subject, on this replica and another, make one key: one creation, one audit row', async () => {
    const other = await tv.reopen({ listen: false, erasureWorker: false });
    const subject = 'create:one-subject';
    const answers = await Promise.all([
      ...Array.from({ length: 10 }, () => tv.app.keys.ensureKey(subject, 'writer')),
      ...Array.from({ length: 10 }, () => other.keys.ensureKey(subject, 'writer')),
      ...Array.from({ length: 5 }, () => tv.app.keys.lease(subject, 'writer').then((l) => ({ keyId: l.keyId, created: undefined }))),
      ...Array.from({ length: 5 }, () => other.keys.lease(subject, 'writer').then((l) => ({ keyId: l.keyId, created: undefined }))),
    ]);
    const live = await liveKeyIds(tv, subject);
    expect(live).toHaveLength(1);
    expect(new Set(answers.map((a) => a.keyId))).toEqual(new Set(live));
    expect(answers.filter((a) => a.created === true).length).toBeLessThanOrEqual(1);
    expect(await createRowsOf(tv, subject)).toBe(1);
    // the leases on both replicas hand out the same DEK
    const [a, b] = [await tv.app.keys.lease(subject, 'writer'), await other.keys.lease(subject, 'writer')];
    expect(Buffer.from(a.dek).equals(Buffer.from(b.dek))).toBe(true);
  });

  it('in one batch, a subject refused when the statement runs is refused alone: the others are created, each once', async () => {
    // erased before anyone asks: the look-up answers the refusal, nothing is wrapped for it
    const erased = 'create:erased-before';
    const made = await tv.app.keys.ensureKey(erased, 'writer');
    await tv.app.erasures.request({ subject: erased }, 'eraser');
    await tv.app.keys.destroyKey(made.keyId, { reason: 'key creation test', actor: 'admin' });
    await expect(tv.app.keys.ensureKey(erased, 'writer')).rejects.toMatchObject({ code: 'subject_erased' });
    await expect(tv.app.keys.lease(erased, 'writer')).rejects.toMatchObject({ code: 'subject_erased' });

    // tombstoned after its look-up, before its batch's statement (another replica's erasure request, as SQL):
    // the statement refuses it, and the batch commits without it
    const late = 'create:tombstoned-meanwhile';
    const fresh = Array.from({ length: 30 }, (_, i) => `create:beside-${i}`);
    const cas = vi.spyOn(tv.app.audit, 'appendIfHead');
    const wraps = vi.spyOn(tv.app.provider, 'wrap');
    // a first creation holds its statement until every other one is wrapped (the step before it queues)
    holdNextStatement(
      tv.app.audit,
      () => wraps.mock.calls.length >= 1 + fresh.length + 1,
      () =>
        tv.app.db.db.execute(sql`insert into subject_tombstones (subject_hash, erasure_id, erased_at) values (${hashOf(tv, late)}, 'ers_elsewhere', now())`),
    );
    const first = tv.app.keys.ensureKey('create:first', 'writer');
    await vi.waitFor(() => expect(cas).toHaveBeenCalled());
    const results = await Promise.allSettled([late, ...fresh].map((s) => tv.app.keys.ensureKey(s, 'writer')));
    await first;
    const [refused, ...others] = results;
    expect(refused!.status).toBe('rejected');
    expect(isLetheError((refused as PromiseRejectedResult).reason, 'subject_erased')).toBe(true);
    expect(others.every((r) => r.status === 'fulfilled' && r.value.created)).toBe(true);
    // the batch that held the refused subject was one statement for all of them, refused, then committed without it
    const batches = cas.mock.calls.map(([, events]) => events.filter((e) => e.action === 'key.create').length);
    expect(Math.max(...batches)).toBe(31);
    cas.mockRestore();
    wraps.mockRestore();
    for (const s of fresh) {
      expect(await liveKeyIds(tv, s)).toHaveLength(1);
      expect(await createRowsOf(tv, s)).toBe(1);
    }
    expect(await liveKeyIds(tv, late)).toEqual([]);
    expect(await createRowsOf(tv, late)).toBe(0);
    expect(await tv.app.audit.verify(tv.app.db.db)).toMatchObject({ ok: true, head: 'anchored' });
  });

  it('a key another writer commits while the batch statement waits on the unique index answers that subject; the rest of the batch is created', async () => {
    const raced = 'create:raced';
    const rest = ['create:raced-beside-1', 'create:raced-beside-2'];
    const sqlc = postgres(tv.db!.url, { max: 1, onnotice: () => {} });
    const foreignKeyId = newId('key');
    try {
      const [epoch] = await sqlc<{ epoch: number }[]>`select epoch from epochs where state = 'active'`;
      // a real key, as another replica would make it (a rotation later re-wraps it)
      const wrapped = await tv.app.provider.wrap(epoch!.epoch, new Uint8Array(32).fill(7), foreignKeyId, 'subject');
      // another writer's key row for `raced`, inserted and not yet committed
      let commit!: () => void;
      let inserted!: () => void;
      const committed = new Promise<void>((r) => (commit = r));
      const insertedYet = new Promise<void>((r) => (inserted = r));
      const writer = sqlc.begin(async (tx) => {
        await tx`insert into subject_keys (key_id, subject_hash, state, epoch, wrapped_dek) values (${foreignKeyId}, ${hashOf(tv, raced)}, 'active', ${epoch!.epoch}, ${Buffer.from(wrapped)})`;
        inserted();
        await committed;
      });
      await insertedYet;
      const created = tv.app.keys.ensureKeys([raced, ...rest], 'writer');
      // the batch's statement waits on the uncommitted row's unique index entry
      await vi.waitFor(
        async () => {
          const [w] = await queryRows<{ n: string | number }>(
            tv.app.db.db,
            sql`select count(*) as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`,
          );
          expect(Number(w!.n)).toBeGreaterThan(0);
        },
        { timeout: 10_000, interval: 20 },
      );
      commit();
      await writer;
      const results = await created;
      expect(results[0]).toMatchObject({ subject: raced, status: 'existing', keyId: foreignKeyId });
      expect(results.slice(1).map((r) => r.status)).toEqual(['created', 'created']);
      expect(await liveKeyIds(tv, raced)).toEqual([foreignKeyId]);
      for (const s of rest) expect(await createRowsOf(tv, s)).toBe(1);
      expect(await createRowsOf(tv, raced)).toBe(0); // nothing audited for a key this batch did not make
    } finally {
      await sqlc.end({ timeout: 5 });
    }
  });

  it('creations racing a KEK rotation wrap under the epoch active when they commit: every key leases, the chain verifies', async () => {
    await tv.app.keys.ensureKey('create:before-rotation', 'writer'); // the creator knows the active epoch
    const subjects = Array.from({ length: 40 }, (_, i) => `create:rotating-${i}`);
    const [made] = await Promise.all([Promise.all(subjects.map((s) => tv.app.keys.ensureKey(s, 'writer'))), tv.app.epochs.rotate('admin')]);
    const after = Array.from({ length: 10 }, (_, i) => `create:after-rotation-${i}`);
    const late = await Promise.all(after.map((s) => tv.app.keys.ensureKey(s, 'writer')));
    const [active] = await queryRows<{ epoch: number }>(tv.app.db.db, sql`select epoch from epochs where state = 'active'`);
    const epochs = await queryRows<{ key_id: string; epoch: number }>(
      tv.app.db.db,
      sql`select key_id, epoch from subject_keys where key_id in (select json_array_elements_text(${JSON.stringify(late.map((k) => k.keyId))}::json))`,
    );
    expect(epochs.every((r) => Number(r.epoch) === Number(active!.epoch))).toBe(true);
    for (const [i, s] of [...subjects, ...after].entries()) {
      const lease = await tv.app.keys.lease(s, 'writer');
      expect(lease.keyId).toBe([...made, ...late][i]!.keyId);
      expect(lease.dek).toHaveLength(32);
    }
    expect(await tv.app.audit.verify(tv.app.db.db)).toMatchObject({ ok: true });
  });

  it("a creation guard without a SQL form: creations take the head's lock in a transaction, and its refusals and one key per subject hold", async () => {
    const t = await openTestVault({ app: { erasureWorker: false } });
    try {
      t.app.keys.guardCreation(async (_tx, subjectHash) => {
        if (Buffer.from(subjectHash).equals(hashOf(t, 'create:guarded'))) throw new LetheError('subject_erased', 'refused by the test guard');
      });
      const locked = vi.spyOn(t.app.audit, 'append');
      const cas = vi.spyOn(t.app.audit, 'appendIfHead');
      const subjects = Array.from({ length: 20 }, (_, i) => `create:locked-${i % 10}`);
      const results = await Promise.allSettled([...subjects, 'create:guarded'].map((s) => t.app.keys.ensureKey(s, 'writer')));
      expect(results.slice(0, 20).every((r) => r.status === 'fulfilled')).toBe(true);
      expect(isLetheError((results[20] as PromiseRejectedResult).reason, 'subject_erased')).toBe(true);
      expect(cas.mock.calls.filter(([, events]) => events.some((e) => e.action === 'key.create'))).toHaveLength(0);
      expect(locked).toHaveBeenCalled();
      for (let i = 0; i < 10; i++) {
        expect(await liveKeyIds(t, `create:locked-${i}`)).toHaveLength(1);
        expect(await createRowsOf(t, `create:locked-${i}`)).toBe(1);
      }
      const bulk = await t.app.keys.ensureKeys(['create:locked-1', 'create:guarded', 'create:locked-bulk'], 'writer');
      expect(bulk.map((r) => r.status)).toEqual(['existing', 'refused', 'created']);
      expect(await t.app.audit.verify(t.app.db.db)).toMatchObject({ ok: true, head: 'anchored' });
    } finally {
      await t.close();
    }
  });

  it('a bulk creation answers its subjects in order, refuses a fenced key, and validates its input', async () => {
    const fenced = 'create:bulk-fenced';
    const key = await tv.app.keys.ensureKey(fenced, 'writer');
    await tv.app.keys.fenceKey(key.keyId, 'admin');
    const results = await tv.app.keys.ensureKeys(['create:bulk-a', fenced, 'create:bulk-b'], 'writer');
    expect(results.map((r) => [r.subject, r.status])).toEqual([
      ['create:bulk-a', 'created'],
      [fenced, 'refused'],
      ['create:bulk-b', 'created'],
    ]);
    expect((results[1] as { refusal: LetheError }).refusal.code).toBe('erasure_in_progress');
    await expect(tv.app.keys.ensureKeys([], 'writer')).rejects.toMatchObject({ code: 'validation_failed' });
    await expect(tv.app.keys.ensureKeys(['a:1', 'a:1'], 'writer')).rejects.toMatchObject({
      code: 'validation_failed',
      message: expect.stringMatching(/subjects\.1: duplicate/),
    });
    await expect(tv.app.keys.ensureKeys(['a b'], 'writer')).rejects.toMatchObject({ code: 'validation_failed' });
    await expect(
      tv.app.keys.ensureKeys(
        Array.from({ length: 10_001 }, (_, i) => `a:${i}`),
        'writer',
      ),
    ).rejects.toMatchObject({ code: 'payload_too_large' });
  });
});
