/**
 * Appends and forgets of one subject at once, for 30 s, on PostgreSQL and MinIO through
 * the HTTP app: 64 appenders (each append with an Idempotency-Key of its own, retried
 * with the same key only if the service answered something else than 2xx) and 64
 * forgetters (each forgets an acknowledged entry and follows its erasure to the end).
 * Invariants: no append fails; every acknowledged append that was not forgotten reads
 * back, in the list and by id; every forgotten entry is gone; one stored entry per
 * idempotency key; every forget completes.
 */
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { queryRows } from '../../src/db/client.js';
import { minioEnv } from '../backups/support.js';
import { openTestApp, type TestApp } from '../support/vault.js';
import { awaitErasure, tag } from './fixtures.js';

const WRITERS = 64;
const FORGETTERS = 64;
const RUN_MS = 30_000;
const SYLLABLES = 'ka lo mi ne ru sa ti vo we xu ya zo be di fu ga hi jo'.split(' ');

/** Words of their own: the probe finds nothing of one entry in another. */
const text = () =>
  Array.from({ length: 8 }, () => Array.from({ length: 3 }, () => SYLLABLES[Math.floor(Math.random() * SYLLABLES.length)]).join('') + tag(2)).join(' ');

describe('64 appenders and 64 forgetters on one subject', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await openTestApp({ extraEnv: { ...minioEnv().env, LETHE_ERASURE_POLL_MS: '100' } });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('for 30 s: no append fails, every kept entry reads, every forgotten one is gone, one entry per idempotency key', { timeout: 600_000 }, async () => {
    const subject = `user:storm-${tag()}`;
    const acknowledged = new Map<string, string>(); // idempotency key → entry id
    const pool: string[] = [];
    const forgotten = new Set<string>();
    const failures: string[] = [];
    const erasures: Array<Promise<string>> = [];
    const until = Date.now() + RUN_MS;

    const appendOnce = async (key: string, body: string) => {
      for (let attempt = 1; ; attempt++) {
        const res = await t.call('POST', `/v1/subjects/${subject}/entries`, { body: { text: body }, headers: { 'idempotency-key': key } });
        if (res.status === 201 || res.status === 200) return ((await res.json()) as { entryId: string }).entryId;
        failures.push(`${key}: ${res.status} ${await res.text()}`);
        if (attempt >= 3) return undefined;
      }
    };
    const writer = async (w: number) => {
      for (let i = 0; Date.now() < until; i++) {
        const key = `storm-${w}-${i}`;
        const id = await appendOnce(key, text());
        if (id) {
          acknowledged.set(key, id);
          pool.push(id);
        }
      }
    };
    const forgetter = async () => {
      while (Date.now() < until) {
        const id = pool.splice(Math.floor(Math.random() * pool.length), 1)[0];
        if (!id) {
          await new Promise((r) => setTimeout(r, 20));
          continue;
        }
        const res = await t.call('DELETE', `/v1/entries/${id}`, { role: 'eraser' });
        if (res.status !== 202) {
          failures.push(`forget ${id}: ${res.status} ${await res.text()}`);
          continue;
        }
        forgotten.add(id);
        const { erasureId } = (await res.json()) as { erasureId: string };
        // a forget that does not complete is named with where it stopped
        const done = awaitErasure(t.call, erasureId, 540_000).then((e) =>
          e.status === 'completed' ? e.status : `${e.status}: ${JSON.stringify(e.steps.filter((x) => x.status !== 'done').map((x) => [x.name, x.detail]))}`,
        );
        erasures.push(done);
        await done;
      }
    };
    await Promise.all([...Array.from({ length: WRITERS }, (_, w) => writer(w)), ...Array.from({ length: FORGETTERS }, () => forgetter())]);
    const statuses = await Promise.all(erasures);

    expect(failures).toEqual([]);
    expect(acknowledged.size).toBeGreaterThan(WRITERS);
    expect(forgotten.size).toBeGreaterThan(0);
    expect(statuses.filter((s) => s !== 'completed')).toEqual([]);
    // one stored entry per idempotency key: as many rows as acknowledged appends
    const [rows] = await queryRows<{ n: string }>(
      t.app.db.db,
      sql`select count(*) as n from log_entries where subject_hash = ${t.app.keys.subjectHash(subject)}`,
    );
    expect(Number(rows!.n)).toBe(acknowledged.size);
    expect(new Set(acknowledged.values()).size).toBe(acknowledged.size);
    // every kept entry in the list, every forgotten one gone
    const listed = (await t.app.log.read(subject)).entries.map((e) => e.entryId);
    const kept = [...acknowledged.values()].filter((id) => !forgotten.has(id));
    expect(new Set(listed)).toEqual(new Set(kept));
    for (const id of [...forgotten].slice(0, 50)) expect((await t.call('GET', `/v1/entries/${id}`)).status).toBe(410);
    for (const id of kept.slice(0, 50)) expect((await t.call('GET', `/v1/entries/${id}`)).status).toBe(200);
  });
});
