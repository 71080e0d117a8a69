/**
 * Registration of writer-sealed segments (`POST /v1/segments`), on PostgreSQL and a
 * real MinIO: idempotent per entry id at the same place, a conflict at another place
 * (nothing registered, no vector published under the id), concurrent registrations of
 * one id at two places, and frames whose payload breaks the entry schema — registered,
 * then refused by the indexer (quarantined: never served nor searchable).
 */
import { randomBytes } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeContext, seal, utf8 } from '../../src/crypto/index.js';
import { queryRows } from '../../src/db/client.js';
import { type FramePayload, sealLegacyFrame } from '../../src/log/frame.js';
import { MAX_JSON_DEPTH } from '../../src/log/payload.js';
import { encodeSegment } from '../../src/log/segment.js';
import { expectProblem, ok } from '../support/http.js';
import { minioEnv, openTestApp, type TestApp } from '../support/vault.js';

type Results = { results: Array<{ entryId: string; status: string }> };

describe('registration of writer-sealed segments', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await openTestApp({ extraEnv: minioEnv('lethe-reg') });
  });
  afterAll(async () => {
    await t?.close();
  });

  const id = (prefix: 'entry' | 'seg') => `${prefix}_${randomBytes(16).toString('base64url')}`;

  /**
   * Seals `payloads` under the subject's key (one reserved seq each, or the given ones), uploads one segment, and answers its registration body.
   * A frame given as `raw` JSON text is sealed as is, as a writer could (sealLegacyFrame's JSON.stringify cannot write 10,000-deep JSON).
   */
  async function upload(subject: string, frames: ReadonlyArray<{ entryId?: string; seq?: number } & ({ payload: unknown } | { raw: string })>) {
    const { keyId, firstSeq } = await t.app.log.reserve(subject, frames.length, 'writer');
    const { dek } = await t.app.keys.dekFor(keyId);
    const sealed = frames.map((f, i) => {
      const entryId = f.entryId ?? id('entry');
      const seq = f.seq ?? firstSeq + i;
      const envelope =
        'raw' in f
          ? seal({ key: dek, keyId, plaintext: utf8.encode(f.raw), associatedData: encodeContext('frame', { keyId, entryId, seq }) })
          : sealLegacyFrame(dek, { keyId, entryId, seq }, f.payload as FramePayload);
      return { entryId, seq, envelope };
    });
    const { bytes, places } = encodeSegment(sealed.map((s) => s.envelope));
    const segment = `log/${id('seg')}`;
    await t.app.objects.put(segment, bytes);
    return { segment, entries: sealed.map((s, i) => ({ entryId: s.entryId, subject, keyId, seq: s.seq, ...places[i]! })) };
  }
  const register = (body: unknown) => t.call('POST', '/v1/segments', { body });
  const indexed = async (ids: readonly string[]) =>
    queryRows<{ entry_id: string; segment: string }>(t.app.db.db, sql`select entry_id, segment from log_entries where entry_id in ${ids}`);
  const embedded = async (ids: readonly string[]) =>
    Number((await queryRows<{ n: string }>(t.app.db.db, sql`select count(*) as n from embeddings where record_id in ${ids}`))[0]!.n);
  const payload = (text: string): FramePayload => ({ text, kind: 'note', metadata: { at: 'home' } });

  it('registering an entry again at the same place answers registered again and indexes it once', async () => {
    const body = await upload('user:reg-same', [{ payload: payload('lunch with Ana') }, { payload: payload('dinner with Bo') }]);
    const ids = body.entries.map((e) => e.entryId);
    const first = await ok<Results>(register(body), 201);
    expect(first.results.map((r) => r.status)).toEqual(['registered', 'registered']);
    await t.app.log.drained();
    const vector = t.app.vectors.index.vectorOf(ids[0]!)!.slice();
    for (let i = 0; i < 2; i++) expect(await ok<Results>(register(body), 201)).toEqual(first);
    await t.app.log.drained();
    // a retry of part of the batch, too
    expect((await ok<Results>(register({ ...body, entries: [body.entries[1]] }), 201)).results).toEqual([{ entryId: ids[1], status: 'registered' }]);
    expect(await indexed(ids)).toHaveLength(2);
    expect(await embedded(ids)).toBe(2);
    expect(t.app.vectors.index.vectorOf(ids[0]!)).toEqual(vector);
    const entries = (await ok<{ entries: Array<{ entryId: string; text: string }> }>(t.call('GET', '/v1/subjects/user:reg-same/entries'), 200)).entries;
    expect(entries.map((e) => e.text)).toEqual(['lunch with Ana', 'dinner with Bo']);
  });

  it('a frame a writer sealed before record keys (no wrappedKey) reads back; a re-key converts it under a record key of its own and leaves its text whole', async () => {
    const subject = `user:reg-legacy-${randomBytes(4).toString('hex')}`;
    const body = await upload(subject, [{ payload: payload('booked the dentist for May') }, { payload: payload('renewed the passport') }]);
    expect((await ok<Results>(register(body), 201)).results.map((r) => r.status)).toEqual(['registered', 'registered']);
    await t.app.log.drained();
    const ids = body.entries.map((e) => e.entryId);
    const rows = async () =>
      queryRows<{ entry_id: string; segment: string; key_id: string; wrapped_key: Uint8Array | null }>(
        t.app.db.db,
        sql`select entry_id, segment, key_id, wrapped_key from log_entries where entry_id in ${ids} order by seq`,
      );
    expect((await rows()).map((r) => r.wrapped_key)).toEqual([null, null]);
    const texts = async () => (await t.app.log.list(subject)).map((e) => e.text);
    expect(await texts()).toEqual(['booked the dentist for May', 'renewed the passport']);
    const vectors = ids.map((id) => t.app.vectors.index.vectorOf(id)!.slice());
    const result = await t.app.log.rekeySubject(subject, { actor: 'test' });
    // the embeddings moved to the new key as they were (re-sealed, not re-embedded): the index holds the same vectors under it
    expect(ids.map((id) => t.app.vectors.index.vectorOf(id))).toEqual(vectors);
    expect(
      (await queryRows<{ n: string | number }>(t.app.db.db, sql`select count(*) as n from embeddings where key_id = ${result.newKeyId}`)).map((r) =>
        Number(r.n),
      ),
    ).toEqual([2]);
    expect(result).toMatchObject({ rewritten: 2, converted: 2, removed: 0 });
    const after = await rows();
    expect(after.every((r) => r.wrapped_key instanceof Uint8Array && r.key_id === result.newKeyId && r.segment !== body.segment)).toBe(true);
    expect(await texts()).toEqual(['booked the dentist for May', 'renewed the passport']);
    // a second re-key only re-wraps: the converted frames stay where they are
    const again = await t.app.log.rekeySubject(subject, { actor: 'test' });
    expect(again).toMatchObject({ rewritten: 2, converted: 0 });
    expect((await rows()).map((r) => r.segment)).toEqual(after.map((r) => r.segment));
    expect(await texts()).toEqual(['booked the dentist for May', 'renewed the passport']);
  });

  it('an entry id already indexed at another place is 409 conflict: nothing of the request is registered, no vector replaced', async () => {
    const original = await upload('user:reg-taken', [{ payload: payload('the original text') }]);
    await ok<Results>(register(original), 201);
    await t.app.log.drained();
    const taken = original.entries[0]!.entryId;
    const vector = t.app.vectors.index.vectorOf(taken)!.slice();
    const indexBefore = t.app.vectors.index.size;
    // the same id sealed again (another seq, another segment) next to a fresh entry
    const other = await upload('user:reg-taken', [{ entryId: taken, payload: payload('an impostor text') }, { payload: payload('an innocent bystander') }]);
    const { detail } = await expectProblem(register(other), 409, 'conflict');
    expect(detail).toContain(taken);
    expect(detail).not.toContain('impostor');
    const fresh = other.entries[1]!.entryId;
    expect(await indexed([taken, fresh])).toEqual([{ entry_id: taken, segment: original.segment }]);
    await t.app.log.drained();
    expect(await embedded([fresh])).toBe(0);
    expect(t.app.vectors.index.vectorOf(taken)).toEqual(vector);
    expect(t.app.vectors.index.has(fresh)).toBe(false);
    expect(t.app.vectors.index.size).toBe(indexBefore);
    const entry = await ok<{ text: string }>(t.call('GET', `/v1/entries/${taken}`), 200);
    expect(entry.text).toBe('the original text');
    // same segment, other offset: taken too
    await expectProblem(register({ ...original, entries: [{ ...original.entries[0]!, length: original.entries[0]!.length - 1 }] }), 409, 'conflict');
  });

  it('two concurrent registrations of one id at two places: one registers, the other is a conflict', async () => {
    const entryId = id('entry');
    const a = await upload('user:reg-race', [{ entryId, payload: payload('version A') }]);
    const b = await upload('user:reg-race', [{ entryId, payload: payload('version B') }]);
    const replies = await Promise.all([register(a), register(b)]);
    expect(replies.map((r) => r.status).sort()).toEqual([201, 409]);
    const winner = replies[0]!.status === 201 ? a : b;
    expect(await indexed([entryId])).toEqual([{ entry_id: entryId, segment: winner.segment }]);
    await t.app.log.drained();
    expect(await embedded([entryId])).toBe(1);
    const entry = await ok<{ text: string }>(t.call('GET', `/v1/entries/${entryId}`), 200);
    expect(entry.text).toBe(winner === a ? 'version A' : 'version B');
    // the in-memory vector is the winner's: a search for its text finds it first
    const hits = await ok<{ hits: Array<{ id: string }> }>(t.call('POST', '/v1/search', { body: { query: entry.text, k: 1, subject: 'user:reg-race' } }), 200);
    expect(hits.hits[0]?.id).toBe(entryId);
  });

  const refusal = async (ids: readonly string[]) =>
    queryRows<{ entry_id: string; refused: string | null }>(t.app.db.db, sql`select entry_id, refused from log_entries where entry_id in ${ids} order by seq`);
  const refusedCount = async () =>
    (await t.app.metrics.registry.getSingleMetric('lethe_log_entries_refused_total')!.get()).values.reduce((n, v) => n + v.value, 0);

  /** A registered entry the indexer refused: quarantined (its reason names the field), counted, never served nor indexed; its valid neighbour is indexed. */
  async function expectQuarantined(body: Awaited<ReturnType<typeof upload>>, reason: string, subject: string) {
    const ids = body.entries.map((e) => e.entryId);
    const before = await refusedCount();
    // answered before the indexer looked at the frames: registered
    expect((await ok<Results>(register(body), 201)).results.map((r) => r.status)).toEqual(['registered', 'registered']);
    await t.app.log.drained();
    expect(await refusal(ids)).toEqual([
      { entry_id: ids[0], refused: null },
      { entry_id: ids[1], refused: reason },
    ]);
    expect(await refusedCount()).toBe(before + 1);
    expect(await embedded([ids[1]!])).toBe(0);
    expect(t.app.vectors.index.has(ids[1]!)).toBe(false);
    expect(t.app.vectors.index.has(ids[0]!)).toBe(true);
    const { detail } = await expectProblem(t.call('GET', `/v1/entries/${ids[1]}`), 404, 'not_found');
    expect(detail).toMatch(/refused/);
    const listed = (await ok<{ entries: Array<{ entryId: string }> }>(t.call('GET', `/v1/subjects/${subject}/entries`), 200)).entries.map((e) => e.entryId);
    expect(listed).toContain(ids[0]);
    expect(listed).not.toContain(ids[1]);
  }

  it('registers frames whose kind, metadata or text the entry schema refuses; the indexer quarantines them, naming the field', async () => {
    const cases: Array<{ payload: unknown; field: string }> = [
      { payload: { text: 'x', kind: 5, metadata: null }, field: 'kind' },
      { payload: { text: 'x', kind: '', metadata: null }, field: 'kind' },
      { payload: { text: 'x', kind: 'k'.repeat(65), metadata: null }, field: 'kind' },
      { payload: { text: 'x', metadata: null }, field: 'kind' },
      { payload: { text: 'x', kind: null, metadata: [1, 2] }, field: 'metadata' },
      { payload: { text: 'x', kind: null, metadata: 'a string' }, field: 'metadata' },
      { payload: { text: 'x', kind: null, metadata: { big: 'm'.repeat(17 * 1024) } }, field: 'metadata' },
      { payload: { text: 't'.repeat(64 * 1024 + 1), kind: null, metadata: null }, field: 'text' },
    ];
    for (const c of cases) {
      const subject = `user:reg-bad-${randomBytes(3).toString('hex')}`;
      const body = await upload(subject, [{ payload: payload('a valid neighbour') }, { payload: c.payload }]);
      await expectQuarantined(body, `payload_refused:${c.field}`, subject);
    }
    // what the schema admits: kind null, metadata null, a 64-character kind, nested metadata
    const good = await upload('user:reg-bad', [
      { payload: { text: 'y', kind: null, metadata: null } },
      { payload: { text: 'z', kind: 'k'.repeat(64), metadata: { nested: { list: [1, 'two', null] } } } },
    ]);
    expect((await ok<Results>(register(good), 201)).results.map((r) => r.status)).toEqual(['registered', 'registered']);
    await t.app.log.drained();
    expect((await refusal(good.entries.map((e) => e.entryId))).map((r) => r.refused)).toEqual([null, null]);
  });

  it(`quarantines frames the HTTP layer would refuse in a body (deeper than ${MAX_JSON_DEPTH} levels, NUL, a lone surrogate) without throwing, naming only the top-level field`, async () => {
    const nested = (depth: number) => `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;
    const cases: Array<{ frame: { payload: unknown } | { raw: string }; field: string }> = [
      { frame: { raw: `{"text":"deep","kind":null,"metadata":${nested(10_000)}}` }, field: 'metadata' },
      { frame: { raw: `{"text":"deep","kind":null,"metadata":{"b":[${nested(MAX_JSON_DEPTH - 2)}]}}` }, field: 'metadata' },
      { frame: { payload: { text: 'x', kind: 'no\u0000te', metadata: null } }, field: 'kind' },
      { frame: { payload: { text: 'x', kind: null, metadata: { 'k\uD800ey': 1 } } }, field: 'metadata' },
      // the path inside the metadata names a writer's key: only the top-level field is kept
      { frame: { payload: { text: 'x', kind: null, metadata: { secretkey: ['fine', 'lone \uDC00'] } } }, field: 'metadata' },
      { frame: { payload: { text: 'nul \u0000 in the text', kind: null, metadata: null } }, field: 'text' },
    ];
    for (const c of cases) {
      const subject = `user:reg-deep-${randomBytes(3).toString('hex')}`;
      const body = await upload(subject, [{ payload: payload('a valid neighbour') }, c.frame]);
      await expectQuarantined(body, `payload_refused:${c.field}`, subject);
    }
    // exactly the limit: the payload is level 1, so metadata may nest one level less
    const atLimit = await upload('user:reg-deep', [{ raw: `{"text":"at the limit","kind":null,"metadata":${nested(MAX_JSON_DEPTH - 1)}}` }]);
    expect((await ok<Results>(register(atLimit), 201)).results.map((r) => r.status)).toEqual(['registered']);
    await t.app.log.drained();
    expect((await refusal([atLimit.entries[0]!.entryId]))[0]!.refused).toBeNull();
  });

  it('quarantines a frame that does not open under the key it names (sealed under another key)', async () => {
    const subject = `user:reg-unopened-${randomBytes(3).toString('hex')}`;
    const { keyId, firstSeq } = await t.app.log.reserve(subject, 2, 'writer');
    const { dek } = await t.app.keys.dekFor(keyId);
    const ids = [id('entry'), id('entry')];
    // the second frame sealed under a key the service never made, naming the subject's key
    const { bytes, places } = encodeSegment([
      sealLegacyFrame(dek, { keyId, entryId: ids[0]!, seq: firstSeq }, payload('a valid neighbour')),
      sealLegacyFrame(randomBytes(32), { keyId, entryId: ids[1]!, seq: firstSeq + 1 }, payload('sealed under another key')),
    ]);
    const segment = `log/${id('seg')}`;
    await t.app.objects.put(segment, bytes);
    const body = { segment, entries: ids.map((entryId, i) => ({ entryId, subject, keyId, seq: firstSeq + i, ...places[i]! })) };
    await expectQuarantined(body, 'frame_unopened', subject);
  });

  it('refuses an entry id named twice in one request', async () => {
    const body = await upload('user:reg-twice', [{ payload: payload('once') }]);
    await expectProblem(register({ ...body, entries: [body.entries[0], body.entries[0]] }), 400, 'validation_failed');
    expect(await indexed([body.entries[0]!.entryId])).toEqual([]);
  });
});
