/**
 * Derived artifacts over HTTP: the contract of POST /v1/artifacts and
 * GET /v1/artifacts/{id} from API.md, the provenance and regenerate additions, every
 * refusal as problem+json with its code, and what a refused write leaves behind:
 * nothing — no artifact row, no object under artifacts/, and no echo of the text.
 */
import { existsSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { queryRows } from '../../src/db/client.js';
import { expectProblem, ok } from '../support/http.js';
import { openTestApp, type TestApp, type TestRole, TOKENS } from '../support/vault.js';

const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;
const ARTIFACT_ID = /^art_[A-Za-z0-9_-]{22}$/;
const UNKNOWN_ENTRY = `entry_${'A'.repeat(22)}`;
const UNKNOWN_ARTIFACT = `art_${'B'.repeat(22)}`;
/** Artifact text planted in every refused write: no problem document may carry it. */
const PLANTED = 'PLANTED-artifact-text-4b7e: the subject is allergic to penicillin';

interface Appended {
  entryId: string;
  keyId: string;
  seq: number;
}
interface Written {
  artifactId: string;
  version: number;
  subjects: number;
}
interface ArtifactBody {
  artifactId: string;
  kind: string;
  version: number;
  text: string;
  sources: string[];
  generator: string | null;
  createdAt: string;
  updatedAt: string;
  readFence: string;
}

let t: TestApp;
let alice: Appended;
let bob: Appended;
beforeAll(async () => {
  t = await openTestApp();
  alice = await append('user:alice', 'Alice drinks green tea. She lives in Lyon.');
  bob = await append('user:bob', 'Bob drinks black coffee. He lives in Oslo.');
});
afterAll(async () => {
  await t?.close();
});

async function append(subject: string, text: string): Promise<Appended> {
  return ok<Appended>(await t.call('POST', `/v1/subjects/${subject}/entries`, { role: 'writer', body: { text } }), 201);
}

const post = (body: unknown, role: TestRole | 'none' = 'writer') => t.call('POST', '/v1/artifacts', { role, body });
const get = (id: string, role: TestRole | 'none' = 'writer') => t.call('GET', `/v1/artifacts/${id}`, { role });

async function write(sources: string[], text = 'A summary.', kind = 'summary'): Promise<Written> {
  return ok<Written>(await post({ kind, text, sources }), 201);
}

async function read(id: string): Promise<ArtifactBody> {
  return ok<ArtifactBody>(await get(id), 200);
}

async function artifactRowCount(): Promise<number> {
  const [row] = await queryRows<{ n: number }>(t.app.db.db, sql`select count(*)::int as n from artifacts`);
  return Number(row!.n);
}

/** Every file stored under artifacts/ in the local object store. */
function artifactObjects(): string[] {
  const dir = path.join(t.dataDir, 'objects', t.config.bucket, 'artifacts');
  if (!existsSync(dir)) return [];
  return (readdirSync(dir, { recursive: true }) as string[]).filter((f) => statSync(path.join(dir, f)).isFile()).sort();
}

/**
 * A refused write: the problem document has the status and code, does not echo the
 * planted text, and no artifact row or artifact object is left behind.
 */
async function refused(send: () => Promise<Response>, status: number, code: string): Promise<string> {
  const rows = await artifactRowCount();
  const objects = artifactObjects();
  const { detail, text } = await expectProblem(await send(), status, code);
  expect(text).not.toContain(PLANTED);
  expect(text).not.toContain('penicillin');
  expect(await artifactRowCount()).toBe(rows);
  expect(artifactObjects()).toEqual(objects);
  return detail;
}

describe('POST /v1/artifacts', () => {
  it('answers 201 {artifactId, version: 1, subjects} and stores the text as an object under artifacts/', async () => {
    const before = artifactObjects();
    const w = await write([alice.entryId, bob.entryId], 'Alice drinks tea; Bob drinks coffee.');
    expect(Object.keys(w).sort()).toEqual(['artifactId', 'subjects', 'version']);
    expect(w.artifactId).toMatch(ARTIFACT_ID);
    expect(w.version).toBe(1);
    expect(w.subjects).toBe(2);
    expect(artifactObjects()).toEqual([...before, `${w.artifactId}/v1`].sort());
  });

  it('subjects counts distinct subjects, through artifacts cited as sources', async () => {
    const alice2 = await append('user:alice', 'Alice cycles to work.');
    const onlyAlice = await write([alice.entryId, alice2.entryId]);
    expect(onlyAlice.subjects).toBe(1);
    const carol = await append('user:carol', 'Carol plays the cello.');
    const digest = await write([onlyAlice.artifactId, carol.entryId], 'A digest.', 'digest');
    expect(digest.subjects).toBe(2);
  });

  it('accepts each kind: summary, fact and digest', async () => {
    for (const kind of ['summary', 'fact', 'digest']) {
      const w = await write([alice.entryId], `A ${kind}.`, kind);
      expect((await read(w.artifactId)).kind).toBe(kind);
    }
  });

  it('accepts a text of exactly 64 KiB', async () => {
    const w = await write([alice.entryId], 'a'.repeat(64 * 1024));
    expect((await read(w.artifactId)).text).toHaveLength(64 * 1024);
  });

  it('accepts the readFence of an earlier read', async () => {
    const listing = await ok<{ readFence: string }>(await t.call('GET', '/v1/subjects/user:alice/entries', { role: 'writer' }), 200);
    const res = await post({ kind: 'summary', text: 'From a fenced read.', sources: [alice.entryId], readFence: listing.readFence });
    expect((await ok<Written>(res, 201)).version).toBe(1);
  });
});

describe('GET /v1/artifacts/{artifactId}', () => {
  it('answers 200 {artifactId, kind, version, text, sources, updatedAt, readFence}, not cacheable', async () => {
    const text = 'Alice prefers tea — 緑茶, not coffee ☕. Bob: the opposite.';
    const w = await write([bob.entryId, alice.entryId], text, 'fact');
    const res = await get(w.artifactId);
    expect(res.headers.get('cache-control')).toBe('no-store');
    const a = await ok<ArtifactBody>(res, 200);
    expect(a).toMatchObject({ artifactId: w.artifactId, kind: 'fact', version: 1, text });
    expect(a.sources.sort()).toEqual([alice.entryId, bob.entryId].sort());
    expect(a.updatedAt).toMatch(RFC3339);
    expect(Math.abs(Date.parse(a.updatedAt) - Date.now())).toBeLessThan(60_000);
    expect(a.readFence).toMatch(/^rf1\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
  });

  it('records the generator when one is named, and null when none is', async () => {
    const named = await ok<Written>(await post({ kind: 'summary', text: 'Generated.', sources: [bob.entryId], generator: 'gpt-test-1' }), 201);
    expect((await read(named.artifactId)).generator).toBe('gpt-test-1');
    const unnamed = await write([bob.entryId]);
    expect((await read(unnamed.artifactId)).generator).toBeNull();
  });

  it('a well-formed unknown artifact id is 404 not_found; a malformed one (or an entry id) is 400 naming artifactId', async () => {
    await expectProblem(await get(UNKNOWN_ARTIFACT), 404, 'not_found');
    expect((await expectProblem(await get('nonsense'), 400, 'validation_failed')).detail).toContain('artifactId');
    expect((await expectProblem(await get(alice.entryId), 400, 'validation_failed')).detail).toContain('artifactId');
  });

  it('only writers (and admin) read artifact text: backup and eraser are 403, no token is 401', async () => {
    const w = await write([alice.entryId]);
    await expectProblem(await get(w.artifactId, 'backup'), 403, 'forbidden');
    await expectProblem(await get(w.artifactId, 'eraser'), 403, 'forbidden');
    await expectProblem(await get(w.artifactId, 'none'), 401, 'unauthorized');
    await ok(await get(w.artifactId, 'admin'), 200);
  });
});

describe('refused writes: 422', () => {
  it('empty sources is 422 provenance_required', async () => {
    await refused(() => post({ kind: 'summary', text: PLANTED, sources: [] }), 422, 'provenance_required');
  });

  it('a well-formed but unknown entry id is 422 unknown_source', async () => {
    await refused(() => post({ kind: 'summary', text: PLANTED, sources: [UNKNOWN_ENTRY] }), 422, 'unknown_source');
  });

  it('an unknown source next to a known one is 422 unknown_source', async () => {
    await refused(() => post({ kind: 'summary', text: PLANTED, sources: [alice.entryId, UNKNOWN_ENTRY] }), 422, 'unknown_source');
  });

  it('a well-formed but unknown artifact id is 422 unknown_source', async () => {
    await refused(() => post({ kind: 'summary', text: PLANTED, sources: [UNKNOWN_ARTIFACT] }), 422, 'unknown_source');
  });

  it('a garbage id is 422 unknown_source', async () => {
    for (const garbage of ['garbage', 'entry_short', `entry_${'A'.repeat(21)}!`, 'key_AAAAAAAAAAAAAAAAAAAAAA']) {
      await refused(() => post({ kind: 'summary', text: PLANTED, sources: [garbage] }), 422, 'unknown_source');
    }
  });
});

describe('refused writes: 409', () => {
  it('citing an entry whose key was destroyed is 409 source_erased', async () => {
    const gone = await append('user:destroyed', 'Dave had a secret.');
    await t.app.keys.destroyKey(gone.keyId, { reason: 't', actor: 'admin' });
    await refused(() => post({ kind: 'summary', text: PLANTED, sources: [gone.entryId] }), 409, 'source_erased');
    await refused(() => post({ kind: 'summary', text: PLANTED, sources: [alice.entryId, gone.entryId] }), 409, 'source_erased');
  });

  it('citing an artifact erased by regeneration is 409 source_erased, and reading it is 410 artifact_erased', async () => {
    const e = await append('user:erin', 'Erin moved away.');
    const other = await append('user:erin', 'Erin has a dog.');
    const w = await write([e.entryId, other.entryId]);
    const result = await t.app.artifacts.regenerate([w.artifactId], { excluding: [e.entryId, other.entryId], actor: 't' });
    expect(result.removed).toEqual([w.artifactId]);
    await refused(() => post({ kind: 'digest', text: PLANTED, sources: [w.artifactId] }), 409, 'source_erased');
    await refused(() => post({ kind: 'digest', text: PLANTED, sources: [alice.entryId, w.artifactId] }), 409, 'source_erased');
    await expectProblem(await get(w.artifactId), 410, 'artifact_erased');
  });

  it('citing an entry whose key is fenced is 409 erasure_in_progress, and accepted once the fence is lifted', async () => {
    const f = await append('user:fenced', 'Frank is being erased.');
    await t.app.keys.fenceKey(f.keyId, 'admin');
    try {
      await refused(() => post({ kind: 'summary', text: PLANTED, sources: [f.entryId] }), 409, 'erasure_in_progress');
    } finally {
      await t.app.keys.unfenceKey(f.keyId, 'admin');
    }
    expect((await write([f.entryId])).version).toBe(1);
  });
});

describe('refused writes: 400, 413, 401, 403', () => {
  const base = () => ({ kind: 'summary', text: PLANTED, sources: [alice.entryId] });

  it('an unknown kind is 400 validation_failed naming kind', async () => {
    expect(await refused(() => post({ ...base(), kind: 'poem' }), 400, 'validation_failed')).toContain('kind');
  });

  it('a missing text is 400 validation_failed naming text', async () => {
    const { text: _omitted, ...noText } = base();
    expect(await refused(() => post(noText), 400, 'validation_failed')).toContain('text');
  });

  it('an empty text is 400 validation_failed naming text', async () => {
    expect(await refused(() => post({ ...base(), text: '' }), 400, 'validation_failed')).toContain('text');
  });

  it('sources that is not an array is 400 validation_failed naming sources', async () => {
    expect(await refused(() => post({ ...base(), sources: alice.entryId }), 400, 'validation_failed')).toContain('sources');
  });

  it('malformed JSON is 400 validation_failed about the body', async () => {
    const raw = `{"kind": "summary", "text": "${PLANTED}", "sources": [`;
    expect(await refused(() => t.call('POST', '/v1/artifacts', { role: 'writer', rawBody: raw }), 400, 'validation_failed')).toContain('body');
  });

  it('a readFence that is not a token is 400 validation_failed naming readFence', async () => {
    expect(await refused(() => post({ ...base(), readFence: 'not-a-token' }), 400, 'validation_failed')).toContain('readFence');
  });

  it('a real readFence with one character of its MAC flipped is 400 validation_failed', async () => {
    const fence = (await read((await write([alice.entryId])).artifactId)).readFence;
    const [prefix, body, mac] = fence.split('.') as [string, string, string];
    const flipped = `${mac[0] === 'A' ? 'B' : 'A'}${mac.slice(1)}`;
    const tampered = `${prefix}.${body}.${flipped}`;
    expect(tampered).not.toBe(fence);
    expect(await refused(() => post({ ...base(), readFence: tampered }), 400, 'validation_failed')).toContain('readFence');
    // the untampered token is accepted: the flip is what was refused
    await ok(await post({ kind: 'summary', text: 'fenced', sources: [alice.entryId], readFence: fence }), 201);
  });

  it('a real readFence whose covered keys were edited is 400 validation_failed', async () => {
    const fence = (await read((await write([alice.entryId])).artifactId)).readFence;
    const [prefix, body, mac] = fence.split('.') as [string, string, string];
    const claims = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as { at: number; k: string[] };
    const edited = Buffer.from(JSON.stringify({ ...claims, k: [] })).toString('base64url');
    await refused(() => post({ ...base(), readFence: `${prefix}.${edited}.${mac}` }), 400, 'validation_failed');
  });

  it('a text over 64 KiB is 413 payload_too_large, counted in UTF-8 bytes', async () => {
    await refused(() => post({ ...base(), text: `${PLANTED} ${'x'.repeat(64 * 1024)}` }), 413, 'payload_too_large');
    const twoByte = 'é'.repeat(32 * 1024 + 1); // 32,769 characters, 65,538 bytes
    expect(twoByte.length).toBeLessThan(64 * 1024);
    await refused(() => post({ ...base(), text: twoByte }), 413, 'payload_too_large');
  });

  it('the planted text in other fields is not echoed either: as the kind, as a source id, as an over-long source id', async () => {
    await refused(() => post({ ...base(), kind: PLANTED }), 400, 'validation_failed');
    await refused(() => post({ ...base(), sources: [PLANTED] }), 422, 'unknown_source');
    await refused(() => post({ ...base(), sources: [PLANTED.repeat(3)] }), 400, 'validation_failed');
    await refused(() => post({ ...base(), generator: PLANTED.repeat(4) }), 400, 'validation_failed');
  });

  it('no token is 401 unauthorized', async () => {
    await refused(() => post(base(), 'none'), 401, 'unauthorized');
  });

  it('the backup and eraser roles are 403 forbidden', async () => {
    await refused(() => post(base(), 'backup'), 403, 'forbidden');
    await refused(() => post(base(), 'eraser'), 403, 'forbidden');
  });
});

describe('GET /v1/artifacts/{artifactId}/provenance', () => {
  let digest: string;
  let summary: string;
  beforeAll(async () => {
    summary = (await write([alice.entryId, bob.entryId])).artifactId;
    digest = (await write([summary, alice.entryId], 'A digest.', 'digest')).artifactId;
  });

  it('a writer gets the closure nearest first, each node once at its shortest depth, and the subject count', async () => {
    const p = await ok<{ artifactId: string; sources: Array<{ id: string; type: string; depth: number }>; subjects: number }>(
      await t.call('GET', `/v1/artifacts/${digest}/provenance`, { role: 'writer' }),
      200,
    );
    expect(p.artifactId).toBe(digest);
    expect(p.subjects).toBe(2);
    expect(p.sources).toHaveLength(3);
    expect(p.sources.slice(0, 2).map((s) => s.depth)).toEqual([1, 1]);
    expect(p.sources).toEqual(
      expect.arrayContaining([
        { id: summary, type: 'artifact', depth: 1 },
        { id: alice.entryId, type: 'entry', depth: 1 },
        { id: bob.entryId, type: 'entry', depth: 2 },
      ]),
    );
  });

  it('an eraser may read it too, and it carries no text', async () => {
    const res = await t.call('GET', `/v1/artifacts/${digest}/provenance`, { role: 'eraser' });
    const text = await res.text();
    expect(res.status, text).toBe(200);
    expect(text).not.toContain('Alice drinks');
    expect(text).not.toContain('A digest.');
  });

  it('the backup role is 403 forbidden, no token 401', async () => {
    await expectProblem(await t.call('GET', `/v1/artifacts/${digest}/provenance`, { role: 'backup' }), 403, 'forbidden');
    await expectProblem(await t.call('GET', `/v1/artifacts/${digest}/provenance`, { role: 'none' }), 401, 'unauthorized');
  });

  it('an unknown artifact is 404 not_found', async () => {
    await expectProblem(await t.call('GET', `/v1/artifacts/${UNKNOWN_ARTIFACT}/provenance`, { role: 'writer' }), 404, 'not_found');
  });
});

describe('POST /v1/artifacts/{artifactId}/regenerate', () => {
  const regenerate = (id: string, options: { role?: TestRole; body?: unknown; rawBody?: string; headers?: Record<string, string> } = {}) =>
    t.call('POST', `/v1/artifacts/${id}/regenerate`, { role: options.role ?? 'writer', ...options });

  it('with a body: drops the excluded source, answers the new version, and the text no longer holds it', async () => {
    const w = await write([alice.entryId, bob.entryId], 'Alice drinks green tea. Bob drinks black coffee.');
    const r = await ok<{ regenerated: unknown[]; removed: unknown[] }>(await regenerate(w.artifactId, { body: { excluding: [bob.entryId] } }), 200);
    expect(r).toEqual({ regenerated: [{ artifactId: w.artifactId, version: 2 }], removed: [], destruction: 'durable' });
    const a = await read(w.artifactId);
    expect(a.version).toBe(2);
    expect(a.sources).toEqual([alice.entryId]);
    expect(a.text).toContain('Alice drinks green tea.');
    expect(a.text).not.toContain('Bob');
    expect(artifactObjects().filter((o) => o.startsWith(`${w.artifactId}/`))).toEqual([`${w.artifactId}/v2`]);
  });

  it('with no body at all: regenerates from every surviving source', async () => {
    const w = await write([alice.entryId, bob.entryId]);
    const res = await t.http.request(`/v1/artifacts/${w.artifactId}/regenerate`, { method: 'POST', headers: { authorization: `Bearer ${TOKENS.writer}` } });
    const r = await ok<{ regenerated: unknown[]; removed: unknown[] }>(res, 200);
    expect(r).toEqual({ regenerated: [{ artifactId: w.artifactId, version: 2 }], removed: [], destruction: 'durable' });
    expect((await read(w.artifactId)).sources.sort()).toEqual([alice.entryId, bob.entryId].sort());
  });

  it('with an empty JSON object: the same as no body', async () => {
    const w = await write([alice.entryId]);
    expect(await ok(await regenerate(w.artifactId, { body: {} }), 200)).toEqual({
      regenerated: [{ artifactId: w.artifactId, version: 2 }],
      removed: [],
      destruction: 'durable',
    });
  });

  it('a JSON content type with an empty body is malformed JSON: 400, and nothing is regenerated', async () => {
    const w = await write([alice.entryId]);
    const res = await regenerate(w.artifactId, { rawBody: '', headers: { 'content-type': 'application/json', 'content-length': '0' } });
    await expectProblem(res, 400, 'validation_failed');
    expect((await read(w.artifactId)).version).toBe(1);
  });

  it('a body that is not JSON is a 4xx problem, never a 500, and regenerates nothing', async () => {
    const w = await write([alice.entryId]);
    const res = await regenerate(w.artifactId, { rawBody: 'excluding=x', headers: { 'content-type': 'text/plain' } });
    const text = await res.text();
    expect(res.status, text).toBeGreaterThanOrEqual(400);
    expect(res.status, text).toBeLessThan(500);
    expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect((await read(w.artifactId)).version).toBe(1);
  });

  it('excluding that is not an array is 400 validation_failed naming excluding', async () => {
    const w = await write([alice.entryId]);
    const { detail } = await expectProblem(await regenerate(w.artifactId, { body: { excluding: alice.entryId } }), 400, 'validation_failed');
    expect(detail).toContain('excluding');
    expect((await read(w.artifactId)).version).toBe(1);
  });

  it('excluding every source erases the artifact: 200 with it removed, then GET is 410', async () => {
    const w = await write([alice.entryId]);
    expect(await ok(await regenerate(w.artifactId, { body: { excluding: [alice.entryId] } }), 200)).toEqual({
      regenerated: [],
      removed: [w.artifactId],
      destruction: 'durable',
    });
    await expectProblem(await get(w.artifactId), 410, 'artifact_erased');
    expect(artifactObjects().filter((o) => o.startsWith(`${w.artifactId}/`))).toEqual([]);
  });

  it('an eraser may regenerate; backup is 403; an unknown artifact is 404', async () => {
    const w = await write([alice.entryId]);
    await ok(await regenerate(w.artifactId, { role: 'eraser' }), 200);
    await expectProblem(await regenerate(w.artifactId, { role: 'backup' }), 403, 'forbidden');
    await expectProblem(await regenerate(UNKNOWN_ARTIFACT), 404, 'not_found');
  });
});

describe('nothing is lost', () => {
  it('after every refusal above, the first sources still serve a new artifact that reads back byte for byte', async () => {
    const text = `Tea and coffee ${'∑'.repeat(100)}.`;
    const w = await write([alice.entryId, bob.entryId], text);
    expect((await read(w.artifactId)).text).toBe(text);
    const listing = await ok<{ entries: Array<{ entryId: string; text: string }> }>(
      await t.call('GET', '/v1/subjects/user:bob/entries', { role: 'writer' }),
      200,
    );
    expect(listing.entries.map((e) => e.text)).toContain('Bob drinks black coffee. He lives in Oslo.');
  });

  it('every artifact row has exactly one object per live version, and none for an erased one', async () => {
    const rows = await queryRows<{ artifact_id: string; version: number; state: string }>(t.app.db.db, sql`select artifact_id, version, state from artifacts`);
    const expected = rows
      .filter((r) => r.state === 'live')
      .map((r) => `${r.artifact_id}/v${r.version}`)
      .sort();
    expect(artifactObjects()).toEqual(expected);
  });
});
