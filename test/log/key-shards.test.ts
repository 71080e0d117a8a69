/**
 * A subject's keys in shards (src/vault/key-shards.ts), on PostgreSQL and MinIO through
 * the HTTP app, with shards of 8 entries: a full head rolls into a shard and appends go
 * on; lists and search read across the shards; forgetting an entry re-keys only its
 * shard (the rows and wraps touched are counted); a subject from before shards is split
 * at its first forget; erasing the subject destroys every shard; a database copy taken
 * before a forget opens the forgotten entry under no live key.
 */
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { queryRows } from '../../src/db/client.js';
import { openEntry } from '../../src/log/frame.js';
import { frameAt } from '../../src/log/segment.js';
import { minioEnv } from '../backups/support.js';
import { awaitErasure, tag } from '../erasure/fixtures.js';
import { expectProblem, ok } from '../support/http.js';
import { openTestApp, type TestApp } from '../support/vault.js';

const SHARD = 8;
const WORDS =
  'amber basil cedar dune ember fjord grove harbor iris jade kelp lumen moss nectar opal pine quartz reef sage tundra umber violet willow yarrow zinc'.split(
    ' ',
  );
const words = () => Array.from({ length: 6 }, () => `${WORDS[Math.floor(Math.random() * WORDS.length)]}${tag(2)}`).join(' ');

interface Place {
  entry_id: string;
  key_id: string;
  wrapped_key: Uint8Array;
  seq: number;
  segment: string;
  frame_offset: number;
  frame_length: number;
}

describe('a subject key in shards', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await openTestApp({ extraEnv: { ...minioEnv().env, LETHE_ERASURE_POLL_MS: '100', LETHE_KEY_SHARD_ENTRIES: String(SHARD) } });
  });
  afterAll(async () => {
    await t?.close();
  });

  const append = async (subject: string, text: string) =>
    (await ok<{ entryId: string }>(t.call('POST', `/v1/subjects/${subject}/entries`, { body: { text, kind: 'memory' } }), 201)).entryId;
  const appendMany = async (subject: string, n: number, label: string) => {
    const ids: string[] = [];
    // texts with nothing in common: the probe counts a look-alike sibling as a copy
    for (let i = 0; i < n; i++) ids.push(await append(subject, `${label}${i} ${words()}`));
    return ids;
  };
  const listed = async (subject: string) =>
    (await ok<{ entries: Array<{ entryId: string }> }>(t.call('GET', `/v1/subjects/${encodeURIComponent(subject)}/entries?limit=1000`), 200)).entries.map(
      (e) => e.entryId,
    );
  const keysOf = (subject: string) => t.app.keys.keysOf(t.app.keys.subjectHash(subject));
  const places = async (subject: string) =>
    queryRows<Place>(
      t.app.db.db,
      sql`select entry_id, key_id, wrapped_key, seq, segment, frame_offset, frame_length from log_entries
           where subject_hash = ${t.app.keys.subjectHash(subject)} order by seq`,
    );
  const rolled = async (subject: string, keys: number) => {
    for (let i = 0; i < 100 && (await keysOf(subject)).length < keys; i++) await new Promise((r) => setTimeout(r, 50));
    return keysOf(subject);
  };
  const forget = async (entryId: string) => {
    const res = await t.call('DELETE', `/v1/entries/${entryId}`, { role: 'eraser' });
    expect(res.status).toBe(202);
    const done = await awaitErasure(t.call, ((await res.json()) as { erasureId: string }).erasureId);
    expect(done.status, JSON.stringify(done.steps)).toBe('completed');
    return done;
  };

  it('a head that took a shard of sequence numbers rolls into a shard: appends go on, lists and search read every key', { timeout: 120_000 }, async () => {
    const subject = `user:shards-roll-${tag()}`;
    const ids = await appendMany(subject, 3 * SHARD + 2, 'roll');
    const keys = await rolled(subject, 3);
    // one head, the rest shards, each holding at most a shard and a few appends in flight
    expect(keys.filter((k) => k.head)).toHaveLength(1);
    expect(keys.length).toBeGreaterThanOrEqual(3);
    const rows = await places(subject);
    const perKey = new Map<string, number>();
    for (const r of rows) perKey.set(r.key_id, (perKey.get(r.key_id) ?? 0) + 1);
    expect([...perKey.keys()].sort()).toEqual(keys.map((k) => k.keyId).sort());
    for (const n of perKey.values()) expect(n).toBeLessThanOrEqual(2 * SHARD);
    expect(await listed(subject)).toEqual(ids);
    // sequence numbers stay unique and ordered across the keys
    expect(rows.map((r) => r.seq)).toEqual([...rows.map((r) => r.seq)].sort((a, b) => a - b));
    expect(new Set(rows.map((r) => r.seq)).size).toBe(rows.length);
    // scoped search finds an entry of the oldest shard
    await t.app.log.indexer.waitIndexed({ subjectHash: t.app.keys.subjectHash(subject), timeoutMs: 10_000 });
    const first = (await ok<{ entries: Array<{ text: string }> }>(t.call('GET', `/v1/subjects/${encodeURIComponent(subject)}/entries?limit=1`), 200))
      .entries[0]!;
    const hits = (await ok<{ hits: Array<{ id: string }> }>(t.call('POST', '/v1/search', { body: { query: first.text, k: 3, subject } }), 200)).hits;
    expect(hits[0]?.id).toBe(ids[0]);
  });

  it('forgetting an entry re-keys only its shard: every other key and row untouched, at most a shard of wraps', { timeout: 120_000 }, async () => {
    const subject = `user:shards-forget-${tag()}`;
    const ids = await appendMany(subject, 5 * SHARD, 'forget');
    await rolled(subject, 5);
    const before = await places(subject);
    const secret = ids[SHARD + 2]!;
    const oldKey = before.find((r) => r.entry_id === secret)!.key_id;
    const done = await forget(secret);
    const after = await places(subject);
    const changed = after.filter((a) => {
      const b = before.find((r) => r.entry_id === a.entry_id)!;
      return b.key_id !== a.key_id || Buffer.compare(Buffer.from(b.wrapped_key), Buffer.from(a.wrapped_key)) !== 0;
    });
    // only the forgotten entry's shard-mates moved (re-wrapped under its replacement), never more than a shard
    const mates = before.filter((r) => r.key_id === oldKey && r.entry_id !== secret).map((r) => r.entry_id);
    expect(changed.map((c) => c.entry_id).sort()).toEqual(mates.sort());
    expect(changed.length).toBeLessThan(SHARD + 1);
    expect(new Set(changed.map((c) => c.key_id)).size).toBe(1);
    expect(await t.app.keys.validity([oldKey])).toEqual({ [oldKey]: 'destroyed' });
    expect(done.certificate?.payload).toMatchObject({ scope: 'records', entryIds: [secret], status: 'completed' });
    // the forgotten entry is gone, every other one reads back in order
    await expectProblem(t.call('GET', `/v1/entries/${secret}`), 410, 'entry_forgotten');
    expect(await listed(subject)).toEqual(ids.filter((id) => id !== secret));
    // a copy of the database taken before the forget: the forgotten record key opens under no live key of the subject
    const row = before.find((r) => r.entry_id === secret)!;
    const frame = frameAt(await t.app.objects.get(row.segment), { offset: row.frame_offset, length: row.frame_length });
    await expect(t.app.keys.dekFor(oldKey)).rejects.toMatchObject({ code: 'key_destroyed' });
    for (const k of await keysOf(subject)) {
      const { dek } = await t.app.keys.dekFor(k.keyId);
      for (const keyId of [k.keyId, oldKey]) expect(() => openEntry(dek, { keyId, entryId: secret, seq: Number(row.seq) }, row.wrapped_key, frame)).toThrow();
    }
  });

  it('a subject from before shards (one key of many entries) is split into shards at its first forget', { timeout: 120_000 }, async () => {
    const subject = `user:shards-legacy-${tag()}`;
    const first = await append(subject, `legacy ${words()}`);
    // as before shards: the head never rolls
    await t.app.db.db.execute(sql`update subject_keys set base_seq = 1000000000 where subject_hash = ${t.app.keys.subjectHash(subject)}`);
    const ids = [first, ...(await appendMany(subject, 4 * SHARD, 'legacy'))];
    expect(await keysOf(subject)).toHaveLength(1);
    await forget(ids[3]!);
    const keys = await keysOf(subject);
    const rows = (await places(subject)).filter((r) => r.entry_id !== ids[3]);
    // 32 survivors: four keys of 8, the newest 8 under the head
    expect(keys).toHaveLength(Math.ceil(rows.length / SHARD));
    const perKey = new Map<string, string[]>();
    for (const r of rows) perKey.set(r.key_id, [...(perKey.get(r.key_id) ?? []), r.entry_id]);
    for (const list of perKey.values()) expect(list.length).toBeLessThanOrEqual(SHARD);
    expect(perKey.get(keys.find((k) => k.head)!.keyId)).toEqual(ids.filter((id) => id !== ids[3]).slice(-SHARD));
    expect(await listed(subject)).toEqual(ids.filter((id) => id !== ids[3]));
    // the next forget touches one shard only
    const before = await places(subject);
    await forget(ids[5]!);
    const after = await places(subject);
    const moved = after.filter((a) => before.find((b) => b.entry_id === a.entry_id)!.key_id !== a.key_id);
    expect(moved.length).toBeLessThan(SHARD);
  });

  it('erasing the subject destroys its head and every shard, and the certificate is completed', { timeout: 120_000 }, async () => {
    const subject = `user:shards-erase-${tag()}`;
    const ids = await appendMany(subject, 3 * SHARD, 'erase');
    const keys = await rolled(subject, 3);
    expect(keys.length).toBeGreaterThanOrEqual(3);
    const res = await t.call('POST', '/v1/erasures', { role: 'eraser', body: { subject, legalBasis: 'gdpr-art17' } });
    expect(res.status).toBe(202);
    const done = await awaitErasure(t.call, ((await res.json()) as { erasureId: string }).erasureId);
    expect(done.status, JSON.stringify(done.steps)).toBe('completed');
    const validity = await t.app.keys.validity(keys.map((k) => k.keyId));
    for (const k of keys) expect(validity[k.keyId]).toBe('destroyed');
    expect(await keysOf(subject)).toEqual([]);
    for (const id of [ids[0]!, ids.at(-1)!]) expect((await t.call('GET', `/v1/entries/${id}`)).status).toBe(410);
    // every shard's destruction is in the backup store's ledger chain before the certificate
    expect(await t.app.destructions.ledger(keys.map((k) => k.keyId))).toHaveLength(keys.length);
  });

  it('a head destroyed alone (break-glass) leaves its shards: the next head continues their sequence numbers, and erasing the subject takes the shards', {
    timeout: 120_000,
  }, async () => {
    const subject = `user:shards-headless-${tag()}`;
    const ids = await appendMany(subject, 2 * SHARD + 1, 'headless');
    const keys = await rolled(subject, 3);
    const head = keys.find((k) => k.head)!;
    await ok(t.call('POST', `/v1/admin/keys/${head.keyId}/destroy`, { role: 'admin', body: { reason: 'test: break-glass' } }), 200);
    const left = await keysOf(subject);
    expect(left.length).toBe(keys.length - 1);
    expect(left.some((k) => k.head)).toBe(false);
    // a new head: its numbers follow the shards', so pages stay in order
    const next = await append(subject, `after ${words()}`);
    // (the destroyed head's rows stay indexed under it, unreadable: not counted)
    const live = new Set((await keysOf(subject)).map((k) => k.keyId));
    const rows = (await places(subject)).filter((r) => live.has(r.key_id));
    expect(rows.at(-1)!.entry_id).toBe(next);
    expect(new Set(rows.map((r) => r.seq)).size).toBe(rows.length);
    const survivors = rows.map((r) => r.entry_id);
    expect(await listed(subject)).toEqual(survivors);
    expect(survivors.length).toBeLessThan(ids.length + 1);
    const res = await t.call('POST', '/v1/erasures', { role: 'eraser', body: { subject, legalBasis: 'gdpr-art17' } });
    const done = await awaitErasure(t.call, ((await res.json()) as { erasureId: string }).erasureId);
    expect(done.status, JSON.stringify(done.steps)).toBe('completed');
    expect(await keysOf(subject)).toEqual([]);
  });

  it("concurrent reservations of blocks: each granted at most the head's room, the ranges disjoint, none refused or deadlocked", {
    timeout: 60_000,
  }, async () => {
    const subject = `user:shards-reserve-${tag()}`;
    await append(subject, `first ${words()}`);
    const blocks = await Promise.all(Array.from({ length: 32 }, () => t.app.log.reserve(subject, 5, 'writer')));
    const taken: Array<[string, number]> = blocks.flatMap((b) => Array.from({ length: b.count }, (_, i) => [b.keyId, b.firstSeq + i] as [string, number]));
    expect(new Set(taken.map(([k, q]) => `${k}:${q}`)).size).toBe(taken.length);
    for (const b of blocks) expect(b.count).toBeGreaterThanOrEqual(1);
    for (const b of blocks) expect(b.count).toBeLessThanOrEqual(5);
  });
});
