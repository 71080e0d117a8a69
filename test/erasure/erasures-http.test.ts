/**
 * The erasure routes over HTTP (API.md, "Erasure"), on PostgreSQL with the local
 * object store: POST /v1/erasures (202 new, 200 the same open erasure, 404 a subject
 * never seen, 400 for every malformed request with nothing created), GET of an
 * erasure's status, its server-sent events (ordered step events, a final end event,
 * Last-Event-ID resuming), its HTML report, redaction orders (409 / 400 / 202), the
 * certificate verifying against the public key served without a token, and who may
 * call what. No erasure answer ever names the subject.
 *
 * The background worker is off: erasures are driven with `settle`. One erasure is held
 * open on purpose by a key lease a writer took before it (drain_leases waits for it).
 */
import { randomBytes } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { queryRows } from '../../src/db/client.js';
import { verifyCertificate } from '../../src/crypto/certificate.js';
import { FIRST_RUN } from '../../src/erasure/machine.js';
import type { ErasureTransition } from '../../src/erasure/view.js';
import { expectProblem, ok } from '../support/http.js';
import { type CallOptions, openTestApp, type TestApp } from '../support/vault.js';

const tag = () => randomBytes(5).toString('hex');
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;
const ERASURE_ID = /^ers_[A-Za-z0-9_-]{22}$/;
const UNKNOWN_ERASURE = `ers_${'A'.repeat(22)}`;
const UNKNOWN_ENTRY = `entry_${'Q'.repeat(22)}`;

interface ErasureBody {
  erasureId: string;
  status: string;
  class?: string;
  subjectHash: string;
  legalBasis?: string;
  createdAt: string;
  finishedAt?: string;
  steps: Array<{ name: string; status: string; detail?: string; startedAt?: string; finishedAt?: string }>;
  residuals: Array<{ tier: string; kind: string; detail: string; until?: string; bound: number | string }>;
  probe: {
    recovered: number;
    threshold: number;
    matches: Array<{ id: string; tier: string; score: number }>;
    examined?: { shingleIndex: number; vectorIndex: number; provenance: number };
    coverage?: { indexed: number; stored: number };
    replica?: string;
  };
  certificate?: { payload: Record<string, unknown>; signature: string; publicKey: string; algorithm: string };
  certificateState?: string;
}

interface SseEvent {
  readonly event: string;
  readonly id?: string;
  readonly data: string;
}

type Transition = ErasureTransition;

let t: TestApp;
/** Every body an erasure route answered in this file: none may carry a subject id. */
const answered: Array<{ what: string; text: string }> = [];
/** Subject ids whose erasure was requested here. */
const subjects: string[] = [];
/** An erasure held open by a writer's lease (drain_leases waits for it). */
let openErasureId = '';
/** A finished class A erasure, as GET answered it. */
let completed: ErasureBody;
let completedSubject = '';
/** An entry of that erased subject (unreadable now). */
let completedEntry = '';

beforeAll(async () => {
  t = await openTestApp({ app: { erasureWorker: false } });
});
afterAll(async () => {
  await t?.close();
});

/** A call as the eraser (unless `o.role` says otherwise); an erasure route's body is kept in `answered`. */
async function call(method: string, path: string, o: CallOptions = {}): Promise<Response> {
  const res = await t.call(method, path, { role: 'eraser', ...o });
  if (path.startsWith('/v1/erasures')) answered.push({ what: `${method} ${path} → ${res.status}`, text: await res.clone().text() });
  return res;
}

async function append(subject: string, text: string): Promise<string> {
  const res = await t.call('POST', `/v1/subjects/${subject}/entries`, { role: 'writer', body: { text } });
  const body = await res.text();
  expect(res.status, body).toBe(201);
  return (JSON.parse(body) as { entryId: string }).entryId;
}

async function erasureCount(): Promise<number> {
  const [row] = await queryRows<{ n: number }>(t.app.db.db, sql`select count(*)::int as n from erasures`);
  return row!.n;
}

async function request(subject: string, extra: Record<string, unknown> = {}): Promise<{ erasureId: string; status: string; code: number }> {
  subjects.push(subject);
  const res = await call('POST', '/v1/erasures', { body: { subject, ...extra } });
  const text = await res.text();
  expect([200, 202], text).toContain(res.status);
  return { ...(JSON.parse(text) as { erasureId: string; status: string }), code: res.status };
}

/** A finished erasure as GET answers it, after running it to the end in this process. */
async function finished(erasureId: string): Promise<ErasureBody> {
  await t.app.erasures.settle(erasureId);
  return ok<ErasureBody>(call('GET', `/v1/erasures/${erasureId}`), 200);
}

function parseSse(text: string): SseEvent[] {
  const events: SseEvent[] = [];
  for (const block of text.split(/\r?\n\r?\n/)) {
    if (block.trim() === '') continue;
    let event = 'message';
    let id: string | undefined;
    const data: string[] = [];
    for (const line of block.split(/\r?\n/)) {
      if (line.startsWith(':')) continue;
      const at = line.indexOf(':');
      const field = at < 0 ? line : line.slice(0, at);
      const value = at < 0 ? '' : line.slice(at + 1).replace(/^ /, '');
      if (field === 'event') event = value;
      else if (field === 'id') id = value;
      else if (field === 'data') data.push(value);
    }
    events.push({ event, ...(id !== undefined ? { id } : {}), data: data.join('\n') });
  }
  return events;
}

/** The events stream of an erasure, read to its end. */
async function events(
  erasureId: string,
  headers: Record<string, string> = {},
): Promise<{ steps: Array<Transition & { eventId: string }>; end: SseEvent; all: SseEvent[] }> {
  const res = await call('GET', `/v1/erasures/${erasureId}/events`, { headers });
  const text = await res.text();
  expect(res.status, text).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
  const all = parseSse(text);
  expect(all.length).toBeGreaterThan(0);
  const end = all.at(-1)!;
  expect(end.event).toBe('end');
  expect(
    all.slice(0, -1).every((e) => e.event === 'step'),
    text,
  ).toBe(true);
  const steps = all.slice(0, -1).map((e) => ({ ...(JSON.parse(e.data) as Transition), eventId: e.id ?? '' }));
  return { steps, end, all };
}

describe('POST /v1/erasures', () => {
  it('answers 202 for a new erasure and 200 with the same erasureId while it is open', async () => {
    const s = `user:ers-open-${tag()}`;
    await append(s, 'Ola keeps her bike in the courtyard.');
    // a writer holds a lease: drain_leases waits for it, so the erasure stays open
    const lease = await t.call('POST', `/v1/subjects/${s}/key/lease`, { role: 'writer' });
    expect(lease.status).toBe(200);
    const first = await request(s, { reason: 'user asked', legalBasis: 'gdpr-art17' });
    expect(first.code).toBe(202);
    expect(first.erasureId).toMatch(ERASURE_ID);
    expect(first.status).toBe('pending');

    const again = await call('POST', '/v1/erasures', { body: { subject: s } });
    expect(await ok(again, 200)).toEqual({ erasureId: first.erasureId, status: expect.stringMatching(/^(pending|running)$/) });

    // run what can run: it parks at drain_leases and is still the open erasure
    await t.app.erasures.drain();
    const view = await ok<ErasureBody>(call('GET', `/v1/erasures/${first.erasureId}`), 200);
    expect(view.status).toBe('running');
    expect(view.steps.find((st) => st.name === 'drain_leases')).toMatchObject({ status: 'running', detail: expect.stringContaining('lease') });
    // no appends meanwhile: at drain_leases the key is destroyed already, and the subject tombstoned
    const late = await t.call('POST', `/v1/subjects/${s}/entries`, { role: 'writer', body: { text: 'too late' } });
    expect(late.status).toBe(410);
    expect(((await late.json()) as { code: string }).code).toBe('subject_erased');
    const third = await call('POST', '/v1/erasures', { body: { subject: s, legalBasis: 'contract' } });
    expect(third.status).toBe(200);
    expect(((await third.json()) as { erasureId: string }).erasureId).toBe(first.erasureId);
    openErasureId = first.erasureId;
  });

  it('answers 404 not_found problem+json for a subject lethe has never seen, creating nothing', async () => {
    const before = await erasureCount();
    const s = `user:never-seen-${tag()}`;
    subjects.push(s);
    const reply = await call('POST', '/v1/erasures', { body: { subject: s } });
    await expectProblem(reply, 404, 'not_found');
    expect(await erasureCount()).toBe(before);
  });

  it('refuses malformed requests with 400 validation_failed naming the field, and creates nothing', async () => {
    const s = `user:ers-bad-${tag()}`;
    await append(s, 'Known subject, so a request that slipped through would create a row.');
    subjects.push(s);
    const cases: Array<{ name: string; body?: unknown; rawBody?: string; detail: RegExp }> = [
      { name: 'missing subject', body: { reason: 'no subject' }, detail: /subject/ },
      { name: 'empty subject', body: { subject: '' }, detail: /subject/ },
      { name: 'bad subject characters', body: { subject: 'user/has space' }, detail: /subject/ },
      { name: 'subject too long', body: { subject: 'u'.repeat(201) }, detail: /subject/ },
      { name: 'subject not a string', body: { subject: 42 }, detail: /subject/ },
      { name: 'an unknown field', body: { subject: s, force: true }, detail: /force/ },
      { name: 'legalBasis outside the enum', body: { subject: s, legalBasis: 'gdpr-art99' }, detail: /legalBasis/ },
      { name: 'a negative unlearning bound', body: { subject: s, unlearning: { method: 'SISA', bound: -0.1 } }, detail: /unlearning/ },
      { name: 'a non-numeric unlearning bound', body: { subject: s, unlearning: { method: 'SISA', bound: '0.1' } }, detail: /unlearning/ },
      { name: 'an unlearning without a method', body: { subject: s, unlearning: { bound: 0.1 } }, detail: /unlearning/ },
      { name: 'an unknown field in unlearning', body: { subject: s, unlearning: { method: 'SISA', bound: 0.1, extra: 1 } }, detail: /unlearning|extra/ },
      { name: '33 public attributes', body: { subject: s, publicAttributes: Array.from({ length: 33 }, (_, i) => `attr ${i}`) }, detail: /publicAttributes/ },
      { name: 'an empty public attribute', body: { subject: s, publicAttributes: [''] }, detail: /publicAttributes/ },
      { name: 'malformed JSON', rawBody: `{"subject": "${s}"`, detail: /body/ },
      { name: 'a JSON array', body: [s], detail: /body/ },
    ];
    const before = await erasureCount();
    for (const c of cases) {
      const reply = await call('POST', '/v1/erasures', c.rawBody !== undefined ? { rawBody: c.rawBody } : { body: c.body });
      const { detail } = await expectProblem(reply, 400, 'validation_failed');
      expect(detail, c.name).toMatch(c.detail);
      expect(await erasureCount(), c.name).toBe(before);
    }
    // the same subject with a valid body is accepted: the refusals were the body's fault
    const accepted = await request(s, { publicAttributes: Array.from({ length: 32 }, (_, i) => `attr ${i}`), unlearning: { method: 'none', bound: 0 } });
    expect(accepted.code).toBe(202);
    expect(await erasureCount()).toBe(before + 1);
    await t.app.erasures.settle(accepted.erasureId);
  });
});

describe('a completed class A erasure', () => {
  beforeAll(async () => {
    completedSubject = `user:ers-a-${tag()}`;
    completedEntry = await append(completedSubject, `My locker code is ${tag()}.`);
    await append(completedSubject, 'I prefer tea over coffee.');
    const { erasureId, code } = await request(completedSubject, { legalBasis: 'gdpr-art17', reason: 'Art. 17 request' });
    expect(code).toBe(202);
    completed = await finished(erasureId);
  });

  it('GET answers the shape of API.md: status, class, named steps, residuals, probe and certificate', () => {
    const v = completed;
    expect(v.erasureId).toMatch(ERASURE_ID);
    expect(v.status).toBe('completed');
    expect(v.class).toBe('A');
    expect(v.legalBasis).toBe('gdpr-art17');
    expect(v.subjectHash).toMatch(/^[0-9a-f]{64}$/);
    expect(v.createdAt).toMatch(RFC3339);
    expect(v.finishedAt).toMatch(RFC3339);
    expect(v.steps.map((s) => s.name)).toEqual([...FIRST_RUN]);
    for (const s of v.steps) {
      expect(s.status, s.name).toBe('done');
      expect(typeof s.detail, s.name).toBe('string');
      expect(s.startedAt, s.name).toMatch(RFC3339);
      expect(s.finishedAt, s.name).toMatch(RFC3339);
    }
    expect(v.residuals.length).toBeGreaterThan(0);
    for (const r of v.residuals) {
      expect(r).toMatchObject({ tier: expect.any(String), kind: expect.any(String), detail: expect.any(String) });
      if (r.until !== undefined) expect(r.until).toMatch(RFC3339);
    }
    expect(v.residuals.map((r) => r.kind)).toEqual(expect.arrayContaining(['gist', 'wrapped-dek']));
    expect(v.probe).toMatchObject({ recovered: 0, threshold: 0.15, matches: [], cappedShingles: 0, replica: expect.any(String) });
    // the probe states where its candidates came from and that its index covered every stored record
    expect(v.probe.examined).toEqual({ shingleIndex: expect.any(Number), vectorIndex: expect.any(Number), provenance: 0 });
    expect(v.probe.coverage!.indexed).toBe(v.probe.coverage!.stored);
    expect(v.certificate!.payload.probe).toMatchObject({ coverage: v.probe.coverage, examined: v.probe.examined, replica: v.probe.replica });
    expect(v.certificate).toMatchObject({ payload: expect.any(Object), signature: expect.any(String), publicKey: expect.any(String) });
    expect(v.certificate!.payload).toMatchObject({
      erasureId: v.erasureId,
      subjectHash: v.subjectHash,
      class: 'A',
      status: 'completed',
      legalBasis: 'gdpr-art17',
    });
    expect(v.certificateState).toMatch(/^(provisional|final)$/);
  });

  it('the certificate verifies against GET /v1/certificates/public-key (served without a token), and not when altered', async () => {
    const res = await t.call('GET', '/v1/certificates/public-key', { role: 'none' });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    const key = (await res.json()) as { algorithm: string; keyId: string; publicKey: string };
    const [current] = await t.app.certificateKeys.list();
    expect(key).toEqual({ algorithm: 'Ed25519', keyId: current!.keyId, publicKey: current!.publicKey });
    expect(completed.certificate!.publicKey).toBe(key.publicKey);
    expect(completed.certificate!.payload.signingKeyId).toBe(key.keyId);
    // the certificate as served verifies as-is (it names its algorithm)
    const cert = completed.certificate!;
    expect(cert.algorithm).toBe(key.algorithm);
    expect(verifyCertificate(cert, key.publicKey)).toEqual({ valid: true, keyId: key.keyId });
    expect(verifyCertificate({ ...cert, payload: { ...cert.payload, status: 'incomplete' } }, key.publicKey).valid).toBe(false);
    expect(verifyCertificate(cert, toOtherKey(key.publicKey)).valid).toBe(false);
  });

  it('a second request for the erased subject starts a new erasure (the first is no longer open)', async () => {
    const again = await request(completedSubject);
    expect(again.code).toBe(202);
    expect(again.erasureId).not.toBe(completed.erasureId);
    const view = await finished(again.erasureId);
    expect(['completed', 'incomplete', 'failed']).toContain(view.status);
  });

  it('the report is 200 text/html with the erasure id and status, a content-security-policy and no caching', async () => {
    const res = await call('GET', `/v1/erasures/${completed.erasureId}/report`);
    const text = await res.text();
    expect(res.status, text).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    expect(res.headers.get('content-security-policy')).toMatch(/default-src 'none'/);
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(text).toMatch(/^<!doctype html>/i);
    expect(text).toContain(completed.erasureId);
    expect(text).toContain('completed');
  });
});

describe('GET /v1/erasures/{id}/events', () => {
  it('streams ordered step events covering every step, then an end event with the status', async () => {
    const s = `user:ers-sse-${tag()}`;
    await append(s, 'Sven walks his dog at six.');
    const { erasureId } = await request(s);
    // open the stream while the erasure is still open, then run it: the stream follows it live
    const streamed = events(erasureId);
    await t.app.erasures.settle(erasureId);
    const { steps, end } = await streamed;

    const ids = steps.map((e) => e.id);
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
    expect(new Set(ids).size).toBe(ids.length);
    for (const e of steps) {
      expect(e.eventId).toBe(String(e.id));
      expect(e.at).toMatch(RFC3339);
    }
    expect(steps[0]).toMatchObject({ fromStep: null, toStep: 'classify', status: 'pending' });
    // one transition out of each step, in the order of the machine
    expect(steps.slice(1).map((e) => e.fromStep)).toEqual([...FIRST_RUN]);
    expect(steps.slice(1).map((e) => e.toStep)).toEqual([...FIRST_RUN.slice(1), null]);
    expect(steps.at(-1)).toMatchObject({ fromStep: 'certify', toStep: null, status: 'completed' });
    expect(JSON.parse(end.data)).toEqual({ erasureId, status: 'completed', class: 'A', recovered: 0 });
  });

  it('Last-Event-ID resumes: only the events after it, then the end event', async () => {
    const full = await events(completed.erasureId);
    const cut = full.steps.findIndex((e) => e.fromStep === 'destroy');
    expect(cut).toBeGreaterThan(0);
    const resumed = await events(completed.erasureId, { 'last-event-id': full.steps[cut]!.eventId });
    expect(resumed.steps.map((e) => e.id)).toEqual(full.steps.slice(cut + 1).map((e) => e.id));
    expect(resumed.steps[0]?.fromStep).toBe('drain_leases');
    expect(JSON.parse(resumed.end.data)).toMatchObject({ erasureId: completed.erasureId, status: 'completed' });

    const atEnd = await events(completed.erasureId, { 'last-event-id': full.steps.at(-1)!.eventId });
    expect(atEnd.steps).toEqual([]);
    expect(JSON.parse(atEnd.end.data)).toMatchObject({ status: 'completed' });

    // a Last-Event-ID that is not a positive integer replays from the start
    const garbage = await events(completed.erasureId, { 'last-event-id': 'not-a-number' });
    expect(garbage.steps.map((e) => e.id)).toEqual(full.steps.map((e) => e.id));
  });
});

describe('GET of an unknown or malformed erasure id', () => {
  for (const suffix of ['', '/events', '/report']) {
    it(`GET /v1/erasures/${UNKNOWN_ERASURE}${suffix} is 404 not_found`, async () => {
      await expectProblem(await call('GET', `/v1/erasures/${UNKNOWN_ERASURE}${suffix}`), 404, 'not_found');
    });
    for (const id of ['not-an-erasure', 'ers_short', `ers_${'A'.repeat(21)}!`]) {
      it(`GET /v1/erasures/${id}${suffix} is 400 validation_failed naming erasureId`, async () => {
        const { detail } = await expectProblem(await call('GET', `/v1/erasures/${encodeURIComponent(id)}${suffix}`), 400, 'validation_failed');
        expect(detail).toContain('erasureId');
      });
    }
  }
  it('POST /v1/erasures/{unknown}/redactions is 404 not_found', async () => {
    await expectProblem(await call('POST', `/v1/erasures/${UNKNOWN_ERASURE}/redactions`, { body: { ids: [UNKNOWN_ENTRY] } }), 404, 'not_found');
  });
});

describe('POST /v1/erasures/{id}/redactions', () => {
  let incomplete: ErasureBody;
  let A = '';
  let aEntry = '';
  let note = '';
  let keep = '';
  let artifactId = '';

  beforeAll(async () => {
    A = `user:para-a-${tag()}`;
    const B = `user:para-b-${tag()}`;
    const num = `${Math.floor(Math.random() * 900) + 100}`;
    aEntry = await append(A, `My home address is ${num} Rue des Lilas, Lyon; I moved there in March.`);
    note = await append(B, `Dropped the parcel at Alice's place, ${num} rue des Lilas in Lyon, she moved there in March.`);
    keep = await append(B, 'Bob ordered new running shoes.');
    const art = await t.call('POST', '/v1/artifacts', { role: 'writer', body: { kind: 'fact', text: 'Bob runs.', sources: [keep] } });
    expect(art.status).toBe(201);
    artifactId = ((await art.json()) as { artifactId: string }).artifactId;
    const { erasureId } = await request(A, { publicAttributes: ['Alice'] });
    incomplete = await finished(erasureId);
  });

  it('the paraphrasing note of another subject leaves the erasure incomplete, naming it', () => {
    expect(incomplete.status).toBe('incomplete');
    expect(incomplete.probe.recovered).toBeGreaterThan(incomplete.probe.threshold);
    expect(incomplete.probe.matches.map((m) => m.id)).toContain(note);
    expect(incomplete.residuals.map((r) => r.kind)).toEqual(expect.arrayContaining(['cross-subject', 'fingerprints']));
  });

  it('409 conflict while the erasure is running', async () => {
    expect(openErasureId).toMatch(ERASURE_ID);
    expect((await ok<ErasureBody>(call('GET', `/v1/erasures/${openErasureId}`), 200)).status).toBe('running');
    await expectProblem(await call('POST', `/v1/erasures/${openErasureId}/redactions`, { body: { ids: [keep] } }), 409, 'conflict');
  });

  it('409 conflict for a completed erasure whose probe fingerprints were destroyed', async () => {
    await expectProblem(await call('POST', `/v1/erasures/${completed.erasureId}/redactions`, { body: { ids: [keep] } }), 409, 'conflict');
  });

  it("400 validation_failed for an artifact id, the erased subject's own entry, an unknown or unreadable entry, an empty list, and malformed JSON", async () => {
    const path = `/v1/erasures/${incomplete.erasureId}/redactions`;
    const cases: Array<{ name: string; body?: unknown; rawBody?: string; detail: RegExp }> = [
      { name: 'an artifact id', body: { ids: [artifactId] }, detail: /not log entries/ },
      { name: "the erased subject's own entry", body: { ids: [aEntry] }, detail: /own entries/ },
      { name: 'an unknown entry id', body: { ids: [UNKNOWN_ENTRY] }, detail: /not entries lethe holds/ },
      { name: "another erased subject's entry", body: { ids: [completedEntry] }, detail: /already unreadable/ },
      { name: 'a known entry with an unknown one', body: { ids: [note, UNKNOWN_ENTRY] }, detail: /not entries lethe holds/ },
      { name: 'an empty list', body: { ids: [] }, detail: /ids/ },
      { name: 'no ids', body: {}, detail: /ids/ },
      { name: 'an unknown field', body: { ids: [note], all: true }, detail: /all/ },
      { name: 'malformed JSON', rawBody: '{"ids": [', detail: /body/ },
    ];
    for (const c of cases) {
      const reply = await call('POST', path, c.rawBody !== undefined ? { rawBody: c.rawBody } : { body: c.body });
      const { detail } = await expectProblem(reply, 400, 'validation_failed');
      expect(detail, c.name).toMatch(c.detail);
    }
    // nothing was ordered: the erasure is as it was
    const view = await ok<ErasureBody>(call('GET', `/v1/erasures/${incomplete.erasureId}`), 200);
    expect(view.status).toBe('incomplete');
    expect(view.steps.some((s) => s.name === 'redact')).toBe(false);
    const entry = await t.call('GET', `/v1/entries/${note}`, { role: 'writer' });
    expect(entry.status).toBe(200);
  });

  it("202 for another subject's entry: the redaction runs, the probe reruns, and the erasure completes", async () => {
    const reply = await call('POST', `/v1/erasures/${incomplete.erasureId}/redactions`, { body: { ids: [note] } });
    expect(await ok(reply, 202)).toEqual({ erasureId: incomplete.erasureId, status: 'running' });
    expect(reply.headers.get('location')).toBe(`/v1/erasures/${incomplete.erasureId}`);
    // ordered again while it runs: 409
    await expectProblem(await call('POST', `/v1/erasures/${incomplete.erasureId}/redactions`, { body: { ids: [note] } }), 409, 'conflict');
    const after = await finished(incomplete.erasureId);
    expect(after.status).toBe('completed');
    expect(after.probe.matches).toEqual([]);
    expect(after.steps.find((s) => s.name === 'redact')).toMatchObject({ status: 'done' });
    expect((await t.call('GET', `/v1/entries/${note}`, { role: 'writer' })).status).toBe(410);
    expect((await t.call('GET', `/v1/entries/${keep}`, { role: 'writer' })).status).toBe(200);
    // the fingerprints went with the last match: no further redaction can be probed
    await expectProblem(await call('POST', `/v1/erasures/${incomplete.erasureId}/redactions`, { body: { ids: [keep] } }), 409, 'conflict');
  });
});

describe('roles', () => {
  const routes = (): Array<{ method: string; path: string; body?: unknown }> => [
    { method: 'POST', path: '/v1/erasures', body: { subject: completedSubject } },
    { method: 'GET', path: `/v1/erasures/${completed.erasureId}` },
    { method: 'GET', path: `/v1/erasures/${completed.erasureId}/events` },
    { method: 'GET', path: `/v1/erasures/${completed.erasureId}/report` },
    { method: 'POST', path: `/v1/erasures/${completed.erasureId}/redactions`, body: { ids: [UNKNOWN_ENTRY] } },
  ];

  it('writer and backup get 403 forbidden, no token gets 401, on every erasure route; nothing is created', async () => {
    const before = await erasureCount();
    for (const r of routes()) {
      for (const role of ['writer', 'backup'] as const) {
        await expectProblem(await call(r.method, r.path, { role, ...(r.body ? { body: r.body } : {}) }), 403, 'forbidden');
      }
      const anon = await call(r.method, r.path, { role: 'none', ...(r.body ? { body: r.body } : {}) });
      await expectProblem(anon, 401, 'unauthorized');
      expect(anon.headers.get('www-authenticate')).toMatch(/^Bearer\b/);
    }
    expect(await erasureCount()).toBe(before);
  });

  it('eraser, and admin (API.md: admin may do everything), are let through', async () => {
    for (const role of ['eraser', 'admin'] as const) {
      expect((await call('GET', `/v1/erasures/${completed.erasureId}`, { role })).status).toBe(200);
      expect((await call('GET', `/v1/erasures/${completed.erasureId}/report`, { role })).status).toBe(200);
      expect((await call('GET', `/v1/erasures/${completed.erasureId}/events`, { role })).status).toBe(200);
    }
  });

  it('the public key needs no token, and ignores a bogus one', async () => {
    for (const headers of [{}, { authorization: 'Bearer not-a-known-token-0001' }] as Array<Record<string, string>>) {
      const res = await t.call('GET', '/v1/certificates/public-key', { role: 'none', headers });
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({
        algorithm: 'Ed25519',
        keyId: expect.stringMatching(/^csk_/),
        publicKey: (await t.app.certificateKeys.publicKeys())[0],
      });
    }
  });
});

describe('privacy of the answers', () => {
  it('no erasure response body or report names a subject id', () => {
    expect(subjects.length).toBeGreaterThan(4);
    expect(answered.length).toBeGreaterThan(20);
    for (const s of subjects) {
      for (const a of answered) expect(a.text.includes(s), `${a.what} contains the subject id ${s}`).toBe(false);
    }
  });
});

/** The same key with one bit flipped (still 32 bytes of base64url). */
function toOtherKey(publicKey: string): string {
  const bytes = Buffer.from(publicKey, 'base64url');
  bytes[0] = bytes[0]! ^ 1;
  return bytes.toString('base64url');
}
