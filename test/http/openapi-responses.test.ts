/**
 * What the service answers, against what /openapi.json says it answers (issue 33): the
 * backup manifest and an erasure certificate (its payload field by field) validate
 * against their schemas with no undeclared field and every required one present; the
 * `Location` of an answer that opened or found an erasure, and the `WWW-Authenticate`
 * of a 401, are declared headers and are sent.
 *
 * The check is strict where the document is not: an object with `properties` and no
 * `additionalProperties` accepts no other field here, so a field the service adds
 * without documenting it fails.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestApp, type TestApp } from '../support/vault.js';

type Schema = Record<string, unknown>;
interface Doc {
  paths: Record<string, Record<string, { responses?: Record<string, { headers?: Record<string, unknown>; content?: Record<string, { schema: Schema }> }> }>>;
  components: { schemas: Record<string, Schema> };
}

let t: TestApp;
let doc: Doc;

function deref(node: Schema): Schema {
  let n = node;
  while (typeof n.$ref === 'string') n = doc.components.schemas[n.$ref.split('/').pop()!]!;
  return n;
}

function typeOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number';
  return typeof value;
}

/** Every way `value` departs from `schema` (empty: it validates), strict about undeclared fields. */
function violations(schema: Schema, value: unknown, at = '$'): string[] {
  const s = deref(schema);
  const out: string[] = [];
  for (const part of (s.allOf as Schema[] | undefined) ?? [])
    out.push(...violations({ ...deref(part), properties: undefined, required: undefined }, value, at));
  const variants = (s.anyOf ?? s.oneOf) as Schema[] | undefined;
  if (variants) {
    const tried = variants.map((v) => violations(v, value, at));
    if (!tried.some((v) => v.length === 0)) out.push(...tried.sort((a, b) => a.length - b.length)[0]!);
    return out;
  }
  if (s.type !== undefined) {
    const types = Array.isArray(s.type) ? (s.type as string[]) : [s.type as string];
    const actual = typeOf(value);
    if (!types.includes(actual) && !(actual === 'integer' && types.includes('number'))) return [...out, `${at}: ${actual}, not ${types.join(' | ')}`];
  }
  if (Array.isArray(s.enum) && !s.enum.includes(value)) out.push(`${at}: ${JSON.stringify(value)} is not one of ${JSON.stringify(s.enum)}`);
  if (typeof value === 'string') {
    if (s.format === 'date-time' && Number.isNaN(Date.parse(value))) out.push(`${at}: ${value} is not a date-time`);
    if (typeof s.pattern === 'string' && !new RegExp(s.pattern, 'u').test(value)) out.push(`${at}: does not match ${s.pattern}`);
  }
  if (Array.isArray(value) && s.items) for (const [i, item] of value.entries()) out.push(...violations(s.items as Schema, item, `${at}[${i}]`));
  if (typeOf(value) === 'object' && (s.properties || s.additionalProperties !== undefined || s.type === 'object')) {
    const parts = [s, ...((s.allOf as Schema[] | undefined) ?? []).map(deref)];
    const properties = Object.assign({}, ...parts.map((p) => (p.properties as Record<string, Schema>) ?? {})) as Record<string, Schema>;
    const required = parts.flatMap((p) => (p.required as string[]) ?? []);
    const record = value as Record<string, unknown>;
    for (const name of required) if (!(name in record)) out.push(`${at}.${name}: required, absent`);
    for (const [name, v] of Object.entries(record)) {
      if (name in properties) out.push(...violations(properties[name]!, v, `${at}.${name}`));
      else if (typeof s.additionalProperties === 'object' && s.additionalProperties !== null)
        out.push(...violations(s.additionalProperties as Schema, v, `${at}.${name}`));
      else if (s.additionalProperties !== true) out.push(`${at}.${name}: not declared by the document`);
    }
  }
  return out;
}

const component = (name: string): Schema => {
  const s = doc.components.schemas[name];
  if (!s) throw new Error(`no component ${name}`);
  return s;
};

/** The component without one of its properties: what the document said before it declared it. */
function without(name: string, property: string): Schema {
  const s = component(name);
  const { [property]: _gone, ...properties } = s.properties as Record<string, Schema>;
  return { ...s, properties, required: ((s.required as string[]) ?? []).filter((r) => r !== property) };
}

async function settled(erasureId: string): Promise<void> {
  await t.app.erasures.settle(erasureId);
}

beforeAll(async () => {
  t = await openTestApp({ embedded: true });
  const res = await t.call('GET', '/openapi.json', { role: 'none' });
  expect(res.status).toBe(200);
  doc = (await res.json()) as Doc;
}, 120_000);

afterAll(async () => {
  await t?.close();
});

describe('the validator itself', () => {
  it('flags an undeclared field, a missing required one, a wrong type and a value outside the enum', () => {
    const schema = { type: 'object', properties: { a: { type: 'integer' }, b: { type: 'string', enum: ['x'] } }, required: ['a'] };
    expect(violations(schema, { a: 1, b: 'x' })).toEqual([]);
    expect(violations(schema, { b: 'y', c: true }).sort()).toEqual(
      ['$.a: required, absent', '$.b: "y" is not one of ["x"]', '$.c: not declared by the document'].sort(),
    );
    expect(violations(schema, { a: 1.5 })).toEqual(['$.a: number, not integer']);
  });
});

describe('answers against /openapi.json', () => {
  it('an erasure certificate: its payload validates field by field (subject scope, a request context)', { timeout: 120_000 }, async () => {
    await t.call('POST', '/v1/subjects/user:oas-cert/entries', { role: 'writer', body: { text: 'Alice lives at 12 Rose Street' } });
    const requested = await t.call('POST', '/v1/erasures', {
      role: 'eraser',
      body: {
        subject: 'user:oas-cert',
        legalBasis: 'gdpr-art17',
        request: { reasonCategory: 'withdrawn-consent', legalBasis: 'GDPR Art. 17(1)(b)', controller: 'Example Ltd', reference: 'TICKET-1' },
      },
    });
    expect(requested.status, await requested.clone().text()).toBe(202);
    const { erasureId } = (await requested.json()) as { erasureId: string };
    expect(requested.headers.get('location')).toBe(`/v1/erasures/${erasureId}`);
    await settled(erasureId);

    const res = await t.call('GET', `/v1/erasures/${erasureId}/certificate`, { role: 'eraser' });
    expect(res.status).toBe(200);
    const certificate = (await res.json()) as { payload: Record<string, unknown> };
    expect(violations(component('ErasureCertificate'), certificate)).toEqual([]);
    // the check bites: a payload field the document did not declare fails it
    expect(violations(without('ErasureCertificatePayload', 'tiers'), certificate.payload)).toEqual(['$.tiers: not declared by the document']);
    // the fields the issue named: typed now, not an open object
    const payload = component('ErasureCertificatePayload');
    expect(Object.keys(payload.properties as object)).toEqual(expect.arrayContaining(Object.keys(certificate.payload)));
    expect(certificate.payload).toMatchObject({ format: 'lethe-erasure-certificate/1', erasureId, scope: 'subject', legalBasis: 'gdpr-art17' });
    expect(certificate.payload.request).toMatchObject({ reasonCategory: 'withdrawn-consent' });
    expect(certificate.payload.signingKeyId).toMatch(/^csk_/);

    // the erasure view carries the same certificate, under the same schema
    const view = await (await t.call('GET', `/v1/erasures/${erasureId}`, { role: 'eraser' })).json();
    expect(violations(component('Erasure'), view)).toEqual([]);
    expect(deref((component('Erasure').properties as Record<string, Schema>).certificate!)).toBe(component('ErasureCertificate'));
  });

  it('a forget: Location on 202 and on the 200 that finds the same erasure; its certificate (records scope) validates', { timeout: 120_000 }, async () => {
    const appended = await t.call('POST', '/v1/subjects/user:oas-forget/entries', { role: 'writer', body: { text: 'Bob prefers tea' } });
    const { entryId } = (await appended.json()) as { entryId: string };
    await t.call('POST', '/v1/subjects/user:oas-forget/entries', { role: 'writer', body: { text: 'Bob plays chess' } });
    const first = await t.call('DELETE', `/v1/entries/${entryId}`, { role: 'eraser' });
    const again = await t.call('DELETE', `/v1/entries/${entryId}`, { role: 'eraser' });
    expect([first.status, again.status]).toEqual([202, 200]);
    const { erasureId } = (await first.json()) as { erasureId: string };
    const responses = doc.paths['/v1/entries/{entryId}']!.delete!.responses!;
    for (const [res, status] of [
      [first, '202'],
      [again, '200'],
    ] as const) {
      expect(res.headers.get('location')).toBe(`/v1/erasures/${erasureId}`);
      expect(Object.keys(responses[status]!.headers ?? {})).toContain('Location');
    }
    await settled(erasureId);
    const certificate = (await (await t.call('GET', `/v1/erasures/${erasureId}/certificate`, { role: 'eraser' })).json()) as {
      payload: Record<string, unknown>;
    };
    expect(violations(component('ErasureCertificate'), certificate)).toEqual([]);
    expect(certificate.payload).toMatchObject({ scope: 'records', entryIds: [entryId] });
  });

  it('the backup manifest: database, ledgerEntries and ledgerHead are declared, and it validates with nothing undeclared', { timeout: 120_000 }, async () => {
    const taken = await t.call('POST', '/v1/backups', { role: 'backup' });
    expect(taken.status, await taken.clone().text()).toBe(201);
    const { backupId } = (await taken.json()) as { backupId: string };
    const res = await t.call('GET', `/v1/backups/${backupId}/manifest`, { role: 'backup' });
    expect(res.status).toBe(200);
    const manifest = (await res.json()) as Record<string, unknown>;
    const schema = component('BackupManifest');
    expect(violations(schema, manifest)).toEqual([]);
    expect(schema.required).toEqual(expect.arrayContaining(['database', 'ledgerEntries']));
    // as the document was before: these three were served and not declared
    for (const field of ['database', 'ledgerEntries', 'ledgerHead']) {
      expect(violations(without('BackupManifest', field), manifest)).toEqual([`$.${field}: not declared by the document`]);
    }
    expect(Object.keys(schema.properties as object)).toContain('ledgerHead');
    expect(manifest).toMatchObject({ database: { key: `backups/${backupId}/database.json`, sha256: expect.stringMatching(/^[0-9a-f]{64}$/) } });
    expect(manifest.ledgerEntries).toEqual(expect.any(Number));
    // the erasures above destroyed keys: the ledger chain has a head, and the manifest names it
    expect(manifest.ledgerHead).toMatchObject({ seq: expect.any(Number), mac: expect.stringMatching(/^[0-9a-f]+$/) });
  });

  it('every 401 declares WWW-Authenticate, and a 401 sends it', async () => {
    const undeclared: string[] = [];
    for (const [path, methods] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(methods)) {
        const unauthorized = op.responses?.['401'];
        if (unauthorized && !Object.keys(unauthorized.headers ?? {}).includes('WWW-Authenticate')) undeclared.push(`${method.toUpperCase()} ${path}`);
      }
    }
    expect(undeclared).toEqual([]);
    for (const headers of [{}, { authorization: 'Bearer not-a-token' }] as Record<string, string>[]) {
      const res = await t.http.request('/v1/erasures', { headers });
      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toBe('Bearer realm="lethe"');
    }
  });

  it('every answer that sets Location declares it', () => {
    // the routes that set it (c.header('Location', …)): each of their success statuses declares it
    const setting = {
      'post /v1/erasures': ['200', '202'],
      'delete /v1/entries/{entryId}': ['200', '202'],
      'post /v1/subjects/{subject}/entries/{entryId}/supersede': ['201'],
      'post /v1/subjects/{subject}/supersede': ['201'],
      'post /v1/erasures/{erasureId}/redactions': ['202'],
    };
    for (const [operation, statuses] of Object.entries(setting)) {
      const [method, path] = operation.split(' ') as [string, string];
      for (const status of statuses) {
        expect(Object.keys(doc.paths[path]![method]!.responses![status]!.headers ?? {}), `${operation} ${status}`).toContain('Location');
      }
    }
  });
});
