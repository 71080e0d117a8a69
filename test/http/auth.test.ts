/**
 * Authentication and authorization over every /v1 route: who may call what, what a
 * missing, unknown or malformed credential gets, and that the public service
 * endpoints answer without one. The route table is checked against the OpenAPI
 * document, so a new /v1 route without a row here fails this file.
 */
import { readFileSync } from 'node:fs';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sealLegacyFrame } from '../../src/log/frame.js';
import { encodeSegment } from '../../src/log/segment.js';
import { expectProblem } from '../support/http.js';
import { openTestApp, type TestApp, type TestRole, TOKENS } from '../support/vault.js';

const ROLES: readonly TestRole[] = ['writer', 'backup', 'eraser', 'approver', 'admin'];

interface RouteCase {
  readonly method: 'GET' | 'PUT' | 'POST' | 'DELETE';
  /** The path as the OpenAPI document spells it. */
  readonly template: string;
  /** Roles that may call it (API.md: admin may call everything). */
  readonly allowed: readonly TestRole[];
  /** A concrete path for a valid request (by the role calling, for routes whose valid request is used up). */
  path(role?: TestRole | 'none'): string;
  /** A valid body, when the route takes one. */
  body?(role?: TestRole | 'none'): unknown;
  /** The content type of a 2xx answer (default application/json; null: none, a 204). */
  readonly contentType?: RegExp | null;
  /** Answers without a token: no 401 or 403, every role and no token get a 2xx answer. */
  readonly public?: true;
}

let t: TestApp;
let destroyKeyId = '';
let liveKeyId = '';
let entryId = '';
/** An entry the DELETE row forgets (idempotent: 202, then 200 for the same erasure). */
let forgetEntryId = '';
/** An entry per role to supersede, each written by the writer token. */
const supersedeIds: Partial<Record<TestRole | 'none', string>> = {};
const supersedeAllIds: Partial<Record<TestRole | 'none', string>> = {};
/** A lease the DELETE row releases (idempotent: 204 again). */
let leaseId = '';
let artifactId = '';
let backupId = '';
let registration: unknown;
/** A finished erasure (GET, events, report). */
let erasureId = '';
/** Per allowed role, an incomplete erasure still holding its fingerprints and another subject's readable entry to redact. */
const redaction: Partial<Record<TestRole | 'none', { erasureId: string; entryId: string }>> = {};
const dismissal: Partial<Record<TestRole | 'none', { erasureId: string; entryId: string }>> = {};
const redactionFor = (role: TestRole | 'none' = 'eraser') => redaction[role] ?? redaction.eraser!;
const dismissalFor = (role: TestRole | 'none' = 'eraser') => dismissal[role] ?? dismissal.eraser!;
/** Per allowed role, a proposed dismissal (proposed in process, by no principal) to approve, and one to reject. */
const proposal: Partial<Record<TestRole | 'none', { erasureId: string; dismissalId: string }>> = {};
const rejection: Partial<Record<TestRole | 'none', { erasureId: string; dismissalId: string }>> = {};
const proposalFor = (role: TestRole | 'none' = 'approver') => proposal[role] ?? proposal.approver!;
const rejectionFor = (role: TestRole | 'none' = 'eraser') => rejection[role] ?? rejection.eraser!;
/** Per allowed role, a failed erasure to resume. */
const resumable: Partial<Record<TestRole | 'none', string>> = {};
const resumableFor = (role: TestRole | 'none' = 'eraser') => resumable[role] ?? resumable.eraser!;

const ROUTES: readonly RouteCase[] = [
  {
    method: 'PUT',
    template: '/v1/subjects/{subject}/key',
    allowed: ['writer', 'admin'],
    path: () => '/v1/subjects/user:auth-table/key',
  },
  {
    method: 'POST',
    template: '/v1/subjects/{subject}/key/lease',
    allowed: ['writer', 'admin'],
    path: () => '/v1/subjects/user:auth-table/key/lease',
  },
  {
    method: 'POST',
    template: '/v1/keys/batch',
    allowed: ['writer', 'admin'],
    path: () => '/v1/keys/batch',
    body: () => ({ subjects: ['user:auth-table', 'user:auth-batch'] }),
  },
  {
    method: 'POST',
    template: '/v1/keys/validity',
    allowed: ['backup', 'admin'],
    path: () => '/v1/keys/validity',
    body: () => ({ keyIds: [liveKeyId, 'key_unknown'] }),
  },
  {
    method: 'POST',
    template: '/v1/admin/kek/rotate',
    allowed: ['admin'],
    path: () => '/v1/admin/kek/rotate',
  },
  {
    method: 'GET',
    template: '/v1/admin/kek',
    allowed: ['admin'],
    path: () => '/v1/admin/kek',
  },
  {
    method: 'POST',
    template: '/v1/admin/keys/{keyId}/destroy',
    allowed: ['admin'],
    path: () => `/v1/admin/keys/${destroyKeyId}/destroy`,
    body: () => ({ reason: 'auth table test' }),
  },
  {
    method: 'POST',
    template: '/v1/subjects/{subject}/entries',
    allowed: ['writer', 'admin'],
    path: () => '/v1/subjects/user:auth-live/entries',
    body: () => ({ text: 'auth table entry' }),
  },
  {
    method: 'GET',
    template: '/v1/subjects/{subject}/entries',
    allowed: ['writer', 'admin'],
    path: () => '/v1/subjects/user:auth-live/entries',
  },
  {
    method: 'POST',
    template: '/v1/subjects/{subject}/entries/reservations',
    allowed: ['writer', 'admin'],
    path: () => '/v1/subjects/user:auth-live/entries/reservations',
    body: () => ({ count: 2 }),
  },
  {
    method: 'POST',
    template: '/v1/segments',
    allowed: ['writer', 'admin'],
    path: () => '/v1/segments',
    body: () => registration,
  },
  {
    method: 'GET',
    template: '/v1/entries/{entryId}',
    allowed: ['writer', 'admin'],
    path: () => `/v1/entries/${entryId}`,
  },
  {
    method: 'POST',
    template: '/v1/subjects/{subject}/items/lookup',
    allowed: ['writer', 'admin'],
    path: () => '/v1/subjects/user:auth-items/items/lookup',
    body: () => ({ namespace: ['memories'], key: 'profile' }),
  },
  {
    method: 'POST',
    template: '/v1/subjects/{subject}/items/search',
    allowed: ['writer', 'admin'],
    path: () => '/v1/subjects/user:auth-items/items/search',
    body: () => ({ limit: 5 }),
  },
  {
    method: 'GET',
    template: '/v1/items/namespaces',
    allowed: ['writer', 'admin'],
    path: () => '/v1/items/namespaces?limit=10',
  },
  {
    method: 'DELETE',
    template: '/v1/entries/{entryId}',
    // a writer forgets only what its own token wrote: the entry is the writer token's
    allowed: ['writer', 'eraser', 'admin'],
    path: () => `/v1/entries/${forgetEntryId}`,
  },
  {
    method: 'POST',
    template: '/v1/subjects/{subject}/entries/{entryId}/supersede',
    allowed: ['writer', 'eraser', 'admin'],
    path: (who) => `/v1/subjects/user:auth-supersede/entries/${supersedeIds[who ?? 'none'] ?? `entry_${'B'.repeat(22)}`}/supersede`,
    body: () => ({ text: 'superseded' }),
  },
  {
    method: 'POST',
    template: '/v1/subjects/{subject}/supersede',
    allowed: ['writer', 'eraser', 'admin'],
    path: () => '/v1/subjects/user:auth-supersede-all/supersede',
    body: (who) => ({ entryIds: [supersedeAllIds[who ?? 'none'] ?? `entry_${'B'.repeat(22)}`], entries: [{ text: 'superseded' }] }),
  },
  {
    method: 'DELETE',
    template: '/v1/subjects/{subject}/key/lease/{leaseId}',
    allowed: ['writer', 'admin'],
    path: () => `/v1/subjects/user:auth-lease/key/lease/${leaseId}`,
    contentType: null,
  },
  {
    method: 'POST',
    template: '/v1/artifacts',
    allowed: ['writer', 'admin'],
    path: () => '/v1/artifacts',
    body: () => ({ kind: 'fact', text: 'auth table fact', sources: [entryId] }),
  },
  {
    method: 'GET',
    template: '/v1/artifacts',
    allowed: ['writer', 'eraser', 'admin'],
    path: () => '/v1/artifacts',
  },
  {
    method: 'GET',
    template: '/v1/artifacts/{artifactId}',
    allowed: ['writer', 'admin'],
    path: () => `/v1/artifacts/${artifactId}`,
  },
  {
    method: 'GET',
    template: '/v1/artifacts/{artifactId}/provenance',
    allowed: ['writer', 'eraser', 'admin'],
    path: () => `/v1/artifacts/${artifactId}/provenance`,
  },
  {
    method: 'POST',
    template: '/v1/artifacts/{artifactId}/regenerate',
    allowed: ['writer', 'eraser', 'admin'],
    path: () => `/v1/artifacts/${artifactId}/regenerate`,
    body: () => ({}),
  },
  {
    method: 'POST',
    template: '/v1/search',
    allowed: ['writer', 'admin'],
    path: () => '/v1/search',
    body: () => ({ query: 'seed', k: 3, subject: 'user:seed' }),
  },
  {
    method: 'POST',
    template: '/v1/backups',
    allowed: ['backup', 'admin'],
    path: () => '/v1/backups',
  },
  {
    method: 'GET',
    template: '/v1/backups',
    allowed: ['backup', 'admin'],
    path: () => '/v1/backups',
  },
  {
    method: 'GET',
    template: '/v1/backups/{backupId}/manifest',
    allowed: ['backup', 'admin'],
    path: () => `/v1/backups/${backupId}/manifest`,
  },
  {
    method: 'POST',
    template: '/v1/training-exposures',
    allowed: ['writer', 'admin'],
    path: () => '/v1/training-exposures',
    body: () => ({ corpus: 'auth-table-corpus', ids: [entryId] }),
  },
  {
    method: 'POST',
    template: '/v1/erasures',
    allowed: ['eraser', 'admin'],
    path: () => '/v1/erasures',
    body: () => ({ subject: 'user:auth-erase' }),
  },
  {
    method: 'POST',
    template: '/v1/erasures/batch',
    allowed: ['eraser', 'admin'],
    path: () => '/v1/erasures/batch',
    // a subject never seen: answered in its item, nothing erased
    body: () => ({ subjects: ['user:auth-bulk-never-seen'] }),
  },
  {
    method: 'GET',
    template: '/v1/erasures',
    allowed: ['eraser', 'approver', 'admin'],
    path: () => '/v1/erasures',
  },
  {
    method: 'GET',
    template: '/v1/erasures/{erasureId}',
    allowed: ['eraser', 'approver', 'admin'],
    path: () => `/v1/erasures/${erasureId}`,
  },
  {
    method: 'GET',
    template: '/v1/erasures/{erasureId}/events',
    allowed: ['eraser', 'admin'],
    path: () => `/v1/erasures/${erasureId}/events`,
    contentType: /^text\/event-stream/,
  },
  {
    method: 'GET',
    template: '/v1/erasures/{erasureId}/report',
    allowed: ['eraser', 'approver', 'admin'],
    path: () => `/v1/erasures/${erasureId}/report`,
    contentType: /^text\/html/,
  },
  {
    method: 'POST',
    template: '/v1/erasures/{erasureId}/report-link',
    allowed: ['eraser', 'admin'],
    path: () => `/v1/erasures/${erasureId}/report-link`,
    body: () => ({ expiresInSeconds: 600 }),
  },
  {
    method: 'POST',
    template: '/v1/erasures/{erasureId}/redactions',
    allowed: ['eraser', 'admin'],
    // an order sets the erasure running: each allowed role orders on its own erasure
    path: (role) => `/v1/erasures/${redactionFor(role).erasureId}/redactions`,
    body: (role) => ({ ids: [redactionFor(role).entryId] }),
  },
  {
    method: 'POST',
    template: '/v1/erasures/{erasureId}/dismissals',
    allowed: ['eraser', 'admin'],
    // a record takes one proposal at a time: each allowed role proposes on its own erasure
    path: (role) => `/v1/erasures/${dismissalFor(role).erasureId}/dismissals`,
    body: (role) => ({ matches: [{ id: dismissalFor(role).entryId, reason: 'auth table: a ruling' }] }),
  },
  {
    method: 'POST',
    template: '/v1/erasures/{erasureId}/dismissals/{dismissalId}/approve',
    allowed: ['approver', 'admin'],
    // an approval sets the erasure running: each allowed role approves a proposal of its own
    path: (role) => `/v1/erasures/${proposalFor(role).erasureId}/dismissals/${proposalFor(role).dismissalId}/approve`,
  },
  {
    method: 'POST',
    template: '/v1/erasures/{erasureId}/dismissals/{dismissalId}/revoke',
    allowed: ['eraser', 'approver', 'admin'],
    // a rejection is made once: each allowed role rejects a proposal of its own
    path: (role) => `/v1/erasures/${rejectionFor(role).erasureId}/dismissals/${rejectionFor(role).dismissalId}/revoke`,
    body: () => ({ reason: 'auth table: not convinced' }),
  },
  {
    method: 'POST',
    template: '/v1/erasures/{erasureId}/resume',
    allowed: ['eraser', 'admin'],
    // a resume sets the erasure running: each allowed role resumes its own failed erasure
    path: (role) => `/v1/erasures/${resumableFor(role)}/resume`,
  },
  {
    method: 'GET',
    template: '/v1/erasures/{erasureId}/certificate',
    allowed: ['eraser', 'admin'],
    path: () => `/v1/erasures/${erasureId}/certificate`,
  },
  {
    method: 'GET',
    template: '/v1/certificates/public-key',
    allowed: ROLES,
    path: () => '/v1/certificates/public-key',
    public: true,
  },
  {
    method: 'GET',
    template: '/v1/certificates/keys',
    allowed: ROLES,
    path: () => '/v1/certificates/keys',
    public: true,
  },
  {
    method: 'POST',
    template: '/v1/certificates/keys/rotate',
    allowed: ['admin'],
    path: () => '/v1/certificates/keys/rotate',
  },
  {
    method: 'POST',
    template: '/v1/subjects/{subject}/reinstate',
    allowed: ['admin'],
    // the subject erased in beforeAll: its tombstone is lifted once
    path: () => '/v1/subjects/user:auth-erased/reinstate',
    body: () => ({ reason: 'auth table: reinstated' }),
  },
];

beforeAll(async () => {
  t = await openTestApp();
  liveKeyId = (await t.app.keys.ensureKey('user:auth-live', 'writer')).keyId;
  destroyKeyId = (await t.app.keys.ensureKey('user:auth-destroy', 'writer')).keyId;
  entryId = (await t.app.log.append('user:auth-live', { text: 'seed' }, 'writer')).entryId;
  // written over HTTP with the writer token: the writer may forget and supersede its own entries
  const written = async (subject: string, text: string) =>
    ((await (await t.call('POST', `/v1/subjects/${subject}/entries`, { body: { text } })).json()) as { entryId: string }).entryId;
  forgetEntryId = await written('user:auth-forget', 'to be forgotten');
  for (const role of ROLES) supersedeIds[role] = await written('user:auth-supersede', `to be superseded by the ${role}`);
  for (const role of ROLES) supersedeAllIds[role] = await written('user:auth-supersede-all', `to be superseded with others by the ${role}`);
  leaseId = (await t.app.keys.lease('user:auth-lease', 'writer')).leaseId;
  artifactId = (await t.app.artifacts.write({ kind: 'summary', text: 'seed summary', sources: [entryId] }, 'writer')).artifactId;
  backupId = (await t.app.backups.run()).backupId;
  // a segment a writer uploaded itself, registered (idempotently) by every allowed role
  const { keyId, firstSeq } = await t.app.log.reserve('user:auth-live', 1, 'writer');
  const { dek } = await t.app.keys.dekFor(keyId);
  const ownEntryId = `entry_${'A'.repeat(22)}`;
  const { bytes, places } = encodeSegment([sealLegacyFrame(dek, { keyId, entryId: ownEntryId, seq: firstSeq }, { text: 'own', kind: null, metadata: null })]);
  const segment = `log/seg_${'B'.repeat(22)}`;
  await t.app.objects.put(segment, bytes);
  registration = { segment, entries: [{ entryId: ownEntryId, subject: 'user:auth-live', keyId, seq: firstSeq, ...places[0]! }] };
  // erasures: one finished, and per allowed role one left incomplete by another subject's paraphrase of it
  await t.app.log.append('user:auth-erase', { text: 'to be erased' }, 'writer');
  await t.app.log.append('user:auth-erased', { text: 'erased already' }, 'writer');
  erasureId = (await t.app.erasures.request({ subject: 'user:auth-erased' }, 'eraser')).erasureId;
  await t.app.erasures.settle(erasureId);
  for (const [i, role] of (['eraser', 'approver', 'admin'] as const).entries()) {
    for (const use of ['redaction', 'dismissal', 'approval', 'rejection'] as const) {
      const num = `${100 + i * 111 + ['redaction', 'dismissal', 'approval', 'rejection'].indexOf(use) * 500}`;
      // a redaction takes a near copy; a dismissal only a record that is none (a notice sharing the clinic and date)
      const [own, other] =
        use === 'redaction'
          ? [
              `My home address is ${num} Rue des Lilas, Lyon; I moved there in March.`,
              `Dropped the parcel at Alice's place, ${num} rue des Lilas in Lyon, she moved there in March.`,
            ]
          : [
              `Appointment with Dr. Okonkwo at the Halden${num} clinic on 14 March about my knee.`,
              `Public notice: Dr. Okonkwo at the Halden${num} clinic is closed on 14 March for renovation.`,
            ];
      await t.app.log.append(`user:auth-para-${use}-${role}`, { text: own }, 'writer');
      const note = await t.app.log.append(`user:auth-note-${use}-${role}`, { text: other }, 'writer');
      const requested = await t.app.erasures.request({ subject: `user:auth-para-${use}-${role}`, publicAttributes: ['Alice'] }, 'eraser');
      const view = await t.app.erasures.settle(requested.erasureId);
      expect(view.status, `the ${role}'s ${use} fixture`).toBe('incomplete');
      expect(view.probe.matches.map((m) => m.id)).toContain(note.entryId);
      if (use === 'redaction') redaction[role] = { erasureId: requested.erasureId, entryId: note.entryId };
      else if (use === 'dismissal') dismissal[role] = { erasureId: requested.erasureId, entryId: note.entryId };
      else {
        const { dismissalId } = await t.app.erasures.dismiss(
          requested.erasureId,
          { matches: [{ id: note.entryId, reason: 'auth table: a proposal' }] },
          'eraser',
        );
        (use === 'approval' ? proposal : rejection)[role] = { erasureId: requested.erasureId, dismissalId };
      }
    }
    // a failed erasure, forged from a finished one at its last step (the route's access is what is tested here)
    await t.app.log.append(`user:auth-resume-${role}`, { text: 'to be resumed' }, 'writer');
    const failed = (await t.app.erasures.request({ subject: `user:auth-resume-${role}` }, 'eraser')).erasureId;
    await t.app.erasures.settle(failed);
    await t.app.db.db.execute(
      sql`update erasures set status = 'failed', state = jsonb_set(state, '{steps,certify,status}', '"failed"') where erasure_id = ${failed}`,
    );
    resumable[role] = failed;
  }
});
afterAll(async () => {
  await t?.close();
});

function send(route: RouteCase, who: TestRole | 'none', headers?: Record<string, string>): Promise<Response> {
  return t.call(route.method, route.path(who), {
    role: who,
    ...(route.body ? { body: route.body(who) } : {}),
    ...(headers ? { headers } : {}),
  });
}

const BAD_CREDENTIALS: ReadonlyArray<{ name: string; headers?: Record<string, string> }> = [
  { name: 'no Authorization header' },
  { name: 'an unknown bearer token', headers: { authorization: 'Bearer not-a-known-token-0001' } },
  { name: 'a Basic Authorization header', headers: { authorization: `Basic ${Buffer.from(`writer:${TOKENS.writer}`).toString('base64')}` } },
  { name: 'the Basic scheme carrying a valid token', headers: { authorization: `Basic ${TOKENS.admin}` } },
  { name: '"Bearer" with nothing after it', headers: { authorization: 'Bearer' } },
  { name: '"Bearer " with an empty token', headers: { authorization: 'Bearer ' } },
  { name: 'a valid token without a scheme', headers: { authorization: TOKENS.admin } },
  { name: 'a valid token with trailing garbage', headers: { authorization: `Bearer ${TOKENS.admin} extra` } },
];

for (const route of ROUTES.filter((r) => r.public)) {
  describe(`${route.method} ${route.template} (public)`, () => {
    for (const who of ['none', ...ROLES] as const) {
      it(`answers 2xx ${who === 'none' ? 'without a token' : `to the ${who} role`}`, async () => {
        const res = await send(route, who);
        const text = await res.text();
        expect(res.status, text).toBeGreaterThanOrEqual(200);
        expect(res.status, text).toBeLessThan(300);
        expect(res.headers.get('content-type')).toMatch(route.contentType ?? /^application\/json/);
      });
    }
    it('ignores a bogus Authorization header instead of refusing it', async () => {
      const res = await send(route, 'none', { authorization: 'Bearer not-a-known-token-0001' });
      expect(res.status).toBe(200);
    });
  });
}

for (const route of ROUTES.filter((r) => !r.public)) {
  describe(`${route.method} ${route.template}`, () => {
    for (const { name, headers } of BAD_CREDENTIALS) {
      it(`refuses ${name} with 401 unauthorized and a WWW-Authenticate challenge`, async () => {
        const res = await send(route, 'none', headers);
        await expectProblem(res, 401, 'unauthorized');
        expect(res.headers.get('www-authenticate')).toMatch(/^Bearer\b/);
      });
    }

    for (const role of ROLES.filter((r) => !route.allowed.includes(r))) {
      it(`refuses the ${role} role with 403 forbidden`, async () => {
        const res = await send(route, role);
        const { problem } = await expectProblem(res, 403, 'forbidden');
        expect(res.headers.get('www-authenticate')).toBeNull();
        expect(JSON.stringify(problem)).not.toContain(TOKENS[role]);
      });
    }

    for (const role of route.allowed) {
      it(`lets the ${role} role through with a 2xx answer`, async () => {
        const res = await send(route, role);
        const text = await res.text();
        expect(res.status, text).toBeGreaterThanOrEqual(200);
        expect(res.status, text).toBeLessThan(300);
        if (route.contentType === null) expect(res.headers.get('content-type')).toBeNull();
        else expect(res.headers.get('content-type')).toMatch(route.contentType ?? /^application\/json/);
      });
    }
  });
}

describe('the route table', () => {
  it('each row allows the roles docs/api.md names for its route, and admin on every route, as API.md says', () => {
    // the rows decide which roles the tests above expect through and which refused: read them from the
    // document, not from this table, so a row that drifts from it fails here
    const documented = new Map<string, string>();
    for (const line of readFileSync(new URL('../../docs/api.md', import.meta.url), 'utf8').split('\n')) {
      const m = /^\| ((?:`[A-Z]+ \/[^`]+`(?:, )?)+) \| ([^|]+) \|/.exec(line);
      if (!m) continue;
      for (const [, op] of m[1]!.matchAll(/`([A-Z]+ \/[^`]+)`/g)) documented.set(op!, m[2]!);
    }
    for (const route of ROUTES) {
      const op = `${route.method} ${route.template}`;
      const cell = documented.get(op);
      expect(cell, `${op} is not in docs/api.md's tables`).toBeDefined();
      if (route.public) {
        expect(cell!.trim(), op).toBe('none');
        continue;
      }
      const named = ROLES.filter((r) => new RegExp(`\\b${r}\\b`).test(cell!));
      expect(named.length, `${op}: no role in docs/api.md's "${cell}"`).toBeGreaterThan(0);
      expect([...route.allowed].sort(), `${op} (docs/api.md: ${cell})`).toEqual([...new Set([...named, 'admin'])].sort());
    }
  });

  it('covers every /v1 operation in the OpenAPI document, and every row is in the document', async () => {
    const res = await t.call('GET', '/openapi.json', { role: 'none' });
    expect(res.status).toBe(200);
    const doc = (await res.json()) as { paths: Record<string, Record<string, unknown>> };
    const methods = new Set(['get', 'put', 'post', 'delete', 'patch', 'head', 'options']);
    const documented = Object.entries(doc.paths)
      .filter(([p]) => p.startsWith('/v1/'))
      .flatMap(([p, ops]) =>
        Object.keys(ops)
          .filter((m) => methods.has(m))
          .map((m) => `${m.toUpperCase()} ${p}`),
      )
      .sort();
    const table = ROUTES.map((r) => `${r.method} ${r.template}`).sort();
    const uncovered = documented.filter((op) => !table.includes(op));
    expect(uncovered, 'documented /v1 operations without a row in the auth table').toEqual([]);
    expect(
      table.filter((op) => !documented.includes(op)),
      'table rows missing from openapi.json',
    ).toEqual([]);
  });

  it('every /v1 operation in the OpenAPI document declares bearer security and a 401 and 403 answer (public rows: none of them)', async () => {
    const res = await t.call('GET', '/openapi.json', { role: 'none' });
    const doc = (await res.json()) as {
      paths: Record<string, Record<string, { security?: Array<Record<string, unknown>>; responses?: Record<string, unknown> }>>;
      components?: { securitySchemes?: Record<string, { type?: string; scheme?: string }> };
    };
    expect(doc.components?.securitySchemes?.bearer).toMatchObject({ type: 'http', scheme: 'bearer' });
    const v1 = Object.entries(doc.paths).filter(([p]) => p.startsWith('/v1/'));
    expect(v1.length).toBeGreaterThan(0);
    const publicOps = ROUTES.filter((r) => r.public).map((r) => `${r.method} ${r.template}`);
    for (const [p, ops] of v1) {
      for (const [m, op] of Object.entries(ops)) {
        if (publicOps.includes(`${m.toUpperCase()} ${p}`)) {
          expect(op.security ?? [], `${m} ${p}`).toEqual([]);
          expect(Object.keys(op.responses ?? {}), `${m} ${p}`).not.toContain('401');
          continue;
        }
        // the report alone also opens with a report link (test/erasure/report-http.test.ts: no other route does)
        const alternatives = `${m} ${p}` === 'get /v1/erasures/{erasureId}/report' ? [{ reportLink: [] }] : [];
        expect(op.security, `${m} ${p}`).toEqual([{ bearer: [] }, ...alternatives]);
        expect(Object.keys(op.responses ?? {}), `${m} ${p}`).toEqual(expect.arrayContaining(['401', '403']));
      }
    }
  });
});

describe('public service endpoints', () => {
  it('GET /healthz answers 200 {status: ok} without a token', async () => {
    const res = await t.call('GET', '/healthz', { role: 'none' });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: 'ok' });
  });

  it('GET /readyz answers 200 with the database check ok without a token', async () => {
    const res = await t.call('GET', '/readyz', { role: 'none' });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ status: 'ok', checks: { database: 'ok' } });
  });

  it('GET /metrics answers Prometheus text without a token', async () => {
    const res = await t.call('GET', '/metrics', { role: 'none' });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(await res.text()).toContain('# TYPE lethe_http_requests_total counter');
  });

  it('GET /openapi.json answers an OpenAPI 3.1 document without a token', async () => {
    const res = await t.call('GET', '/openapi.json', { role: 'none' });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(await res.json()).toMatchObject({ openapi: '3.1.0', info: { title: 'lethe' } });
  });

  it('GET /docs answers the HTML reference without a token', async () => {
    const res = await t.call('GET', '/docs', { role: 'none' });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    expect(await res.text()).toContain('/openapi.json');
  });

  it('public endpoints ignore a bogus Authorization header instead of refusing it', async () => {
    for (const p of ['/healthz', '/readyz', '/metrics', '/openapi.json', '/docs']) {
      const res = await t.call('GET', p, { role: 'none', headers: { authorization: 'Bearer not-a-known-token-0001' } });
      expect(res.status, p).toBe(200);
    }
  });
});
