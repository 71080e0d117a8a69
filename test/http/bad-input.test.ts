/**
 * Bad input over HTTP: malformed subject ids, malformed JSON, schema violations,
 * oversized bodies and unknown routes all end in a problem document naming what was
 * wrong, never echo tokens or body content, and lose nothing. NUL and unpaired
 * surrogates anywhere in a body, query or path, over-deep JSON, malformed ids in any
 * path, a method a path does not take (405), and a database outage (503 with
 * Retry-After) each get their one answer on every route.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_JSON_DEPTH } from '../../src/http/bad-input.js';
import { createHttpApp } from '../../src/http/app.js';
import { TokenStore } from '../../src/http/auth.js';
import type { Services } from '../../src/http/services.js';
import { expectProblem, ok } from '../support/http.js';
import { openTestApp, requestInit, type TestApp, type TestRole, TOKENS } from '../support/vault.js';

/** A recognisable secret-looking value planted in request bodies. */
const PLANTED = 'sk_live_PLANTED_SECRET_7f3a9c1e';

let t: TestApp;
let knownKeyId = '';
let knownDek = '';

async function leaseDek(subject: string): Promise<{ keyId: string; dek: string }> {
  const res = await t.call('POST', `/v1/subjects/${subject}/key/lease`, { role: 'writer' });
  expect(res.status).toBe(200);
  return (await res.json()) as { keyId: string; dek: string };
}

beforeAll(async () => {
  t = await openTestApp();
  const l = await leaseDek('user:survivor');
  knownKeyId = l.keyId;
  knownDek = l.dek;
});
afterAll(async () => {
  await t?.close();
});

describe('subject ids in the path', () => {
  const BAD_SUBJECTS: ReadonlyArray<[string, string]> = [
    ['a space', 'has%20space'],
    ['201 characters', 'x'.repeat(201)],
    ['a semicolon', 'semi;colon'],
    ['non-ASCII letters', encodeURIComponent('ünï')],
    ['a percent-encoded slash', 'user%2Fother'],
    ['a percent-encoded NUL', 'user%00x'],
    ['a quote', 'o%27brien'],
  ];

  for (const [what, segment] of BAD_SUBJECTS) {
    it(`PUT key for a subject with ${what} is 400 validation_failed naming the subject field`, async () => {
      const { detail } = await expectProblem(await t.call('PUT', `/v1/subjects/${segment}/key`, { role: 'writer' }), 400, 'validation_failed');
      expect(detail).toContain('subject');
    });

    it(`a lease for a subject with ${what} is 400 validation_failed naming the subject field`, async () => {
      const { detail } = await expectProblem(await t.call('POST', `/v1/subjects/${segment}/key/lease`, { role: 'writer' }), 400, 'validation_failed');
      expect(detail).toContain('subject');
    });
  }

  it('a subject of exactly 200 characters is accepted', async () => {
    const res = await t.call('PUT', `/v1/subjects/${'y'.repeat(200)}/key`, { role: 'writer' });
    expect(res.status).toBe(201);
  });
});

describe('request bodies', () => {
  it('malformed JSON is 400 validation_failed about the body', async () => {
    for (const raw of ['{', '{"keyIds": [', 'not json at all', '{"keyIds": ["a",]}']) {
      const { detail } = await expectProblem(await t.call('POST', '/v1/keys/validity', { role: 'backup', rawBody: raw }), 400, 'validation_failed');
      expect(detail, raw).toContain('body');
    }
  });

  it('malformed JSON on the destroy route is 400 validation_failed', async () => {
    await expectProblem(await t.call('POST', `/v1/admin/keys/${knownKeyId}/destroy`, { role: 'admin', rawBody: '{"reason": ' }), 400, 'validation_failed');
  });

  const VALIDITY_VIOLATIONS: ReadonlyArray<[string, unknown]> = [
    ['keyIds is a string, not an array', { keyIds: 'key_abc' }],
    ['keyIds is missing', {}],
    ['keyIds is empty', { keyIds: [] }],
    ['keyIds holds 10,001 ids', { keyIds: Array.from({ length: 10_001 }, (_, i) => `key_${i}`) }],
    ['keyIds holds numbers', { keyIds: [1, 2, 3] }],
    ['keyIds holds an empty string', { keyIds: [''] }],
    ['keyIds holds a 256-character id', { keyIds: ['k'.repeat(256)] }],
    ['the body is an array', [{ keyIds: ['key_a'] }]],
    ['the body is null', null],
  ];

  for (const [what, body] of VALIDITY_VIOLATIONS) {
    it(`validity where ${what} is 400 validation_failed naming the field`, async () => {
      const res = await t.call('POST', '/v1/keys/validity', { role: 'backup', rawBody: JSON.stringify(body) });
      const { detail } = await expectProblem(res, 400, 'validation_failed');
      // a body that is not an object at all is named as a whole ("json: …")
      if (body === null || Array.isArray(body)) expect(detail).toMatch(/^(json|body)\b/);
      else expect(detail).toContain('keyIds');
    });
  }

  it('exactly 10,000 ids are accepted', async () => {
    const keyIds = [knownKeyId, ...Array.from({ length: 9_999 }, (_, i) => `key_${i}`)];
    const res = await t.call('POST', '/v1/keys/validity', { role: 'backup', body: { keyIds } });
    expect(res.status).toBe(200);
    const { keys } = (await res.json()) as { keys: Record<string, string> };
    expect(Object.keys(keys)).toHaveLength(10_000);
    expect(keys[knownKeyId]).toBe('active');
  });

  const DESTROY_VIOLATIONS: ReadonlyArray<[string, unknown]> = [
    ['no reason', {}],
    ['an empty reason', { reason: '' }],
    ['a blank reason', { reason: '   ' }],
    ['a numeric reason', { reason: 42 }],
    ['a 501-character reason', { reason: 'r'.repeat(501) }],
  ];

  for (const [what, body] of DESTROY_VIOLATIONS) {
    it(`destroy with ${what} is 400 validation_failed naming reason, and the key stays active`, async () => {
      const res = await t.call('POST', `/v1/admin/keys/${knownKeyId}/destroy`, { role: 'admin', body });
      const { detail } = await expectProblem(res, 400, 'validation_failed');
      expect(detail).toContain('reason');
      const check = await t.call('POST', '/v1/keys/validity', { role: 'backup', body: { keyIds: [knownKeyId] } });
      expect(await check.json()).toEqual({ keys: { [knownKeyId]: 'active' } });
    });
  }

  it('a key id over 255 characters in the destroy path is 400 naming keyId', async () => {
    const res = await t.call('POST', `/v1/admin/keys/${'k'.repeat(256)}/destroy`, { role: 'admin', body: { reason: 'x' } });
    const { detail } = await expectProblem(res, 400, 'validation_failed');
    expect(detail).toContain('keyId');
  });

  it('a body that is not JSON at all (text/plain) is a client error, never a 500', async () => {
    const res = await t.call('POST', '/v1/keys/validity', {
      role: 'backup',
      rawBody: 'keyIds=key_a',
      headers: { 'content-type': 'text/plain' },
    });
    const text = await res.text();
    expect(res.status, text).toBeGreaterThanOrEqual(400);
    expect(res.status, text).toBeLessThan(500);
    expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  });

  it('a JSON body sent without a Content-Type header is a client error, never a 500', async () => {
    const res = await t.http.request('/v1/keys/validity', {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKENS.backup}` },
      body: new TextEncoder().encode(JSON.stringify({ keyIds: ['key_a'] })),
    });
    const text = await res.text();
    expect(res.status, text).toBeGreaterThanOrEqual(400);
    expect(res.status, text).toBeLessThan(500);
    expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  });

  it('a body over the default 1 MiB limit is 413 payload_too_large', async () => {
    const big = JSON.stringify({ keyIds: ['key_a'], pad: 'p'.repeat(1.1 * 1024 * 1024) });
    await expectProblem(await t.call('POST', '/v1/keys/validity', { role: 'backup', rawBody: big }), 413, 'payload_too_large');
  });
});

describe('routes that do not exist', () => {
  it('an unknown path is 404 not_found as problem+json', async () => {
    await expectProblem(await t.call('GET', '/v1/nothing-here', { role: 'writer' }), 404, 'not_found');
    await expectProblem(await t.call('GET', '/nothing', { role: 'none' }), 404, 'not_found');
  });

  it('a known path with an unregistered method is 405 method_not_allowed with an Allow header', async () => {
    const cases: ReadonlyArray<[string, string, string]> = [
      ['DELETE', '/v1/subjects/user:survivor/key', 'PUT'],
      ['GET', '/v1/keys/validity', 'POST'],
      ['PUT', '/v1/subjects/user:survivor/entries', 'GET, HEAD, POST'],
      ['DELETE', '/v1/backups', 'GET, HEAD, POST'],
      ['POST', '/healthz', 'GET, HEAD'],
      ['PATCH', `/v1/erasures/ers_${'A'.repeat(22)}`, 'GET, HEAD'],
    ];
    for (const [method, path, allow] of cases) {
      const res = await t.call(method, path, { role: 'admin' });
      await expectProblem(res, 405, 'method_not_allowed', `${method} ${path}`);
      expect(res.headers.get('allow'), `${method} ${path}`).toBe(allow);
    }
  });

  it('an unknown path is 404 whatever the method, with no Allow header', async () => {
    for (const method of ['GET', 'POST', 'DELETE']) {
      const res = await t.call(method, '/v1/subjects/user:survivor/nothing', { role: 'admin' });
      await expectProblem(res, 404, 'not_found');
      expect(res.headers.get('allow')).toBeNull();
    }
  });
});

describe('errors never echo secrets', () => {
  it('neither tokens nor planted body content appear in any error', async () => {
    const bodies: Array<{ what: string; res: Response }> = [
      {
        what: 'malformed JSON with a secret',
        res: await t.call('POST', '/v1/keys/validity', { role: 'backup', rawBody: `{"keyIds": ["${PLANTED}"` }),
      },
      {
        what: 'secret as a non-array keyIds',
        res: await t.call('POST', '/v1/keys/validity', { role: 'backup', body: { keyIds: PLANTED } }),
      },
      {
        what: 'secret as an over-long key id',
        res: await t.call('POST', '/v1/keys/validity', { role: 'backup', body: { keyIds: [PLANTED.repeat(20)] } }),
      },
      {
        what: 'secret in an unknown field next to a bad reason',
        res: await t.call('POST', `/v1/admin/keys/${knownKeyId}/destroy`, { role: 'admin', body: { reason: 7, note: PLANTED } }),
      },
      {
        what: 'secret as an over-long reason',
        res: await t.call('POST', `/v1/admin/keys/${knownKeyId}/destroy`, { role: 'admin', body: { reason: PLANTED.repeat(20) } }),
      },
      {
        what: 'secret reason for an unknown key',
        res: await t.call('POST', '/v1/admin/keys/key_nosuchkey0000000000000/destroy', { role: 'admin', body: { reason: PLANTED } }),
      },
      {
        what: 'secret in the body of a request with a wrong role',
        res: await t.call('POST', '/v1/keys/validity', { role: 'writer', body: { keyIds: [PLANTED] } }),
      },
      {
        what: 'unknown token that looks like a secret',
        res: await t.call('PUT', '/v1/subjects/user:x/key', { role: 'none', headers: { authorization: `Bearer ${PLANTED}` } }),
      },
      {
        what: 'oversized body with a secret',
        res: await t.call('POST', '/v1/keys/validity', { role: 'backup', rawBody: JSON.stringify({ keyIds: [PLANTED], pad: 'p'.repeat(1_100_000) }) }),
      },
    ];
    for (const role of ['writer', 'backup', 'eraser'] as const) {
      bodies.push({ what: `forbidden ${role}`, res: await t.call('POST', '/v1/admin/kek/rotate', { role }) });
    }
    for (const { what, res } of bodies) {
      expect(res.status, what).toBeGreaterThanOrEqual(400);
      const text = await res.text();
      const headers = JSON.stringify([...res.headers]);
      for (const secret of [PLANTED, ...Object.values(TOKENS)]) {
        expect(text, what).not.toContain(secret);
        expect(headers, what).not.toContain(secret);
      }
      expect(text, what).not.toContain('sk_live');
    }
  });
});

describe('nothing is lost', () => {
  it('after all the bad requests the first key still leases the same DEK and is active', async () => {
    for (let i = 0; i < 5; i++) {
      await t.call('POST', `/v1/admin/keys/${knownKeyId}/destroy`, { role: 'admin', rawBody: '{"reason":' });
      await t.call('POST', `/v1/admin/keys/${knownKeyId}/destroy`, { role: 'admin', body: { reason: '' } });
      await t.call('POST', `/v1/admin/keys/${knownKeyId}/destroy`, { role: 'writer', body: { reason: 'x' } });
      await t.call('POST', '/v1/subjects/user%2Fsurvivor/key/lease', { role: 'writer' });
    }
    const again = await leaseDek('user:survivor');
    expect(again.keyId).toBe(knownKeyId);
    expect(again.dek).toBe(knownDek);
    t.app.cache.clear();
    const fromDb = await leaseDek('user:survivor');
    expect(fromDb.dek).toBe(knownDek);
    const res = await t.call('POST', '/v1/keys/validity', { role: 'backup', body: { keyIds: [knownKeyId] } });
    expect(await res.json()).toEqual({ keys: { [knownKeyId]: 'active' } });
  });
});

describe('with LETHE_BODY_LIMIT_BYTES=2048', () => {
  let small: TestApp;
  beforeAll(async () => {
    small = await openTestApp({ extraEnv: { LETHE_BODY_LIMIT_BYTES: '2048' } });
  });
  afterAll(async () => {
    await small?.close();
  });

  it('a body just over the limit is 413 payload_too_large naming the limit', async () => {
    const body = JSON.stringify({ keyIds: ['key_a'], pad: 'p'.repeat(2100) });
    expect(Buffer.byteLength(body)).toBeGreaterThan(2048);
    const res = await small.call('POST', '/v1/keys/validity', { role: 'backup', rawBody: body });
    const { detail } = await expectProblem(res, 413, 'payload_too_large');
    expect(detail).toContain('2048');
  });

  it('a body just over the limit is 413 even without a Content-Length header (streamed)', async () => {
    const chunk = new TextEncoder().encode(JSON.stringify({ keyIds: ['key_a'], pad: 'p'.repeat(3000) }));
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(chunk.subarray(0, 1000));
        controller.enqueue(chunk.subarray(1000));
        controller.close();
      },
    });
    const res = await small.http.request('/v1/keys/validity', {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKENS.backup}`, 'content-type': 'application/json' },
      body: stream,
      duplex: 'half',
    } as RequestInit);
    await expectProblem(res, 413, 'payload_too_large');
  });

  it('a body under the limit is accepted', async () => {
    const res = await small.call('POST', '/v1/keys/validity', { role: 'backup', body: { keyIds: ['key_a'] } });
    expect(res.status).toBe(200);
  });
});

/** `{"a":{"a":…1…}}`: `levels` nested objects, as raw JSON text. */
const nested = (levels: number) => `${'{"a":'.repeat(levels)}1${'}'.repeat(levels)}`;

describe('NUL and unpaired UTF-16 surrogates in a JSON body', () => {
  const NUL = 'a\u0000b';
  const HIGH = 'a\uD800b';
  const LOW = '\uDC00z';
  const ERASURE = `ers_${'A'.repeat(22)}`;
  const ENTRY = `entry_${'A'.repeat(22)}`;
  const CASES: ReadonlyArray<{ what: string; method: string; path: string; role: TestRole; body: unknown; field: string }> = [
    { what: 'a key id with NUL', method: 'POST', path: '/v1/keys/validity', role: 'backup', body: { keyIds: [NUL] }, field: 'body.keyIds.0' },
    {
      what: 'a key id with a lone high surrogate',
      method: 'POST',
      path: '/v1/keys/validity',
      role: 'backup',
      body: { keyIds: ['key_a', HIGH] },
      field: 'body.keyIds.1',
    },
    { what: 'entry text with NUL', method: 'POST', path: '/v1/subjects/user:nul/entries', role: 'writer', body: { text: NUL }, field: 'body.text' },
    {
      what: 'entry kind with a lone low surrogate',
      method: 'POST',
      path: '/v1/subjects/user:nul/entries',
      role: 'writer',
      body: { text: 'ok', kind: LOW },
      field: 'body.kind',
    },
    {
      what: 'a metadata key with NUL',
      method: 'POST',
      path: '/v1/subjects/user:nul/entries',
      role: 'writer',
      body: { text: 'ok', metadata: { [NUL]: 1 } },
      field: 'body.metadata',
    },
    {
      what: 'a metadata key with a lone surrogate',
      method: 'POST',
      path: '/v1/subjects/user:nul/entries',
      role: 'writer',
      body: { text: 'ok', metadata: { ok: { [HIGH]: 1 } } },
      field: 'body.metadata.ok',
    },
    {
      what: 'a deep metadata value with NUL',
      method: 'POST',
      path: '/v1/subjects/user:nul/entries',
      role: 'writer',
      body: { text: 'ok', metadata: { a: { b: [1, NUL] } } },
      field: 'body.metadata.a.b.1',
    },
    {
      what: 'an artifact source with NUL',
      method: 'POST',
      path: '/v1/artifacts',
      role: 'writer',
      body: { kind: 'fact', text: 'ok', sources: [NUL] },
      field: 'body.sources.0',
    },
    {
      what: 'artifact text with a lone surrogate',
      method: 'POST',
      path: '/v1/artifacts',
      role: 'writer',
      body: { kind: 'fact', text: HIGH, sources: [ENTRY] },
      field: 'body.text',
    },
    { what: 'a search query with NUL', method: 'POST', path: '/v1/search', role: 'writer', body: { query: NUL, subject: 'user:nul' }, field: 'body.query' },
    {
      what: 'a corpus name with NUL',
      method: 'POST',
      path: '/v1/training-exposures',
      role: 'writer',
      body: { corpus: NUL, ids: [ENTRY] },
      field: 'body.corpus',
    },
    {
      what: 'an exposure id with a lone surrogate',
      method: 'POST',
      path: '/v1/training-exposures',
      role: 'writer',
      body: { corpus: 'c', ids: [LOW] },
      field: 'body.ids.0',
    },
    {
      what: 'an erasure reason with NUL',
      method: 'POST',
      path: '/v1/erasures',
      role: 'eraser',
      body: { subject: 'user:survivor', reason: NUL },
      field: 'body.reason',
    },
    {
      what: 'a public attribute with a lone surrogate',
      method: 'POST',
      path: '/v1/erasures',
      role: 'eraser',
      body: { subject: 'user:survivor', publicAttributes: ['x', LOW] },
      field: 'body.publicAttributes.1',
    },
    { what: 'a destroy reason with NUL', method: 'POST', path: '/v1/admin/keys/KEY/destroy', role: 'admin', body: { reason: NUL }, field: 'body.reason' },
    { what: 'a redaction id with NUL', method: 'POST', path: `/v1/erasures/${ERASURE}/redactions`, role: 'eraser', body: { ids: [NUL] }, field: 'body.ids.0' },
    {
      what: 'a dismissal reason with a lone surrogate',
      method: 'POST',
      path: `/v1/erasures/${ERASURE}/dismissals`,
      role: 'eraser',
      body: { matches: [{ id: ENTRY, reason: HIGH }] },
      field: 'body.matches.0.reason',
    },
    {
      what: 'a regeneration exclusion with NUL',
      method: 'POST',
      path: `/v1/artifacts/art_${'A'.repeat(22)}/regenerate`,
      role: 'writer',
      body: { excluding: [NUL] },
      field: 'body.excluding.0',
    },
    { what: 'an unknown top-level key with NUL', method: 'POST', path: '/v1/segments', role: 'writer', body: { [NUL]: 'x' }, field: 'body' },
  ];

  for (const c of CASES) {
    it(`${c.method} ${c.path.replace(/\/(ers|art)_A+/, '/{id}')} with ${c.what} is 400 validation_failed naming ${c.field}`, async () => {
      const path = c.path.replace('KEY', knownKeyId);
      const { detail } = await expectProblem(await t.call(c.method, path, { role: c.role, body: c.body }), 400, 'validation_failed');
      expect(detail.startsWith(`${c.field}: `), detail).toBe(true);
      expect(detail).toMatch(/NUL \(U\+0000\)|unpaired UTF-16 surrogate/);
    });
  }

  it('refuses before anything is stored: the subject has no key and the known key is still active', async () => {
    await expectProblem(await t.call('GET', '/v1/subjects/user:nul/entries', { role: 'writer' }), 404, 'not_found');
    const res = await t.call('POST', '/v1/keys/validity', { role: 'backup', body: { keyIds: [knownKeyId] } });
    expect(await res.json()).toEqual({ keys: { [knownKeyId]: 'active' } });
  });

  it('a surrogate pair (an emoji) and other Unicode pass, and read back unchanged', async () => {
    const text = 'ok 😀 ünï 中文 \u{10FFFF}';
    const metadata = { '😀': ['é', { ключ: '𝄞' }] };
    const { entryId } = await ok<{ entryId: string }>(t.call('POST', '/v1/subjects/user:unicode/entries', { role: 'writer', body: { text, metadata } }), 201);
    const entry = await ok<{ text: string; metadata: unknown }>(t.call('GET', `/v1/entries/${entryId}`, { role: 'writer' }), 200);
    expect(entry.text).toBe(text);
    expect(entry.metadata).toEqual(metadata);
  });

  it('NUL in the query string, as a value or a name, is 400 naming the parameter', async () => {
    const value = await expectProblem(await t.call('GET', '/v1/subjects/user:survivor/entries?after=%00', { role: 'writer' }), 400, 'validation_failed');
    expect(value.detail).toMatch(/^query\.after: .*NUL/);
    const name = await expectProblem(await t.call('GET', '/v1/backups?a%00b=1', { role: 'backup' }), 400, 'validation_failed');
    expect(name.detail).toMatch(/^query: a parameter name .*NUL/);
  });

  it('the problem detail never echoes the offending text', async () => {
    const { text } = await expectProblem(
      await t.call('POST', '/v1/search', { role: 'writer', body: { query: `${PLANTED}\u0000`, subject: 'user:nul' } }),
      400,
      'validation_failed',
    );
    expect(text).not.toContain(PLANTED);
  });
});

describe('JSON nesting depth', () => {
  it(`a 10,000-deep metadata is 400 validation_failed naming the limit of ${MAX_JSON_DEPTH}`, async () => {
    const rawBody = `{"text":"deep","metadata":${nested(10_000)}}`;
    const { detail } = await expectProblem(await t.call('POST', '/v1/subjects/user:deep/entries', { role: 'writer', rawBody }), 400, 'validation_failed');
    expect(detail).toBe(`body: JSON nested deeper than ${MAX_JSON_DEPTH} levels`);
  });

  it('10,000 nested arrays on a route with no nesting at all are refused the same way', async () => {
    const rawBody = `{"keyIds":${'['.repeat(10_000)}${']'.repeat(10_000)}}`;
    await expectProblem(await t.call('POST', '/v1/keys/validity', { role: 'backup', rawBody }), 400, 'validation_failed');
  });

  it(`exactly ${MAX_JSON_DEPTH} levels (the body is one) are accepted; one more is refused`, async () => {
    const at = `{"text":"at the limit","metadata":${nested(MAX_JSON_DEPTH - 1)}}`;
    await ok(t.call('POST', '/v1/subjects/user:deep/entries', { role: 'writer', rawBody: at }), 201);
    const over = `{"text":"over the limit","metadata":{"b":[${nested(MAX_JSON_DEPTH - 2)}]}}`;
    await expectProblem(await t.call('POST', '/v1/subjects/user:deep/entries', { role: 'writer', rawBody: over }), 400, 'validation_failed');
  });

  it('brackets inside strings (and escaped quotes) do not count', async () => {
    const text = `${'[{'.repeat(5000)} "quoted \\" [[[ ${'}]'.repeat(10)}`;
    const { entryId } = await ok<{ entryId: string }>(
      t.call('POST', '/v1/subjects/user:deep/entries', { role: 'writer', body: { text, metadata: { '[[[': '{{{' } } }),
      201,
    );
    expect((await ok<{ text: string }>(t.call('GET', `/v1/entries/${entryId}`, { role: 'writer' }), 200)).text).toBe(text);
  });
});

describe('ids in the path', () => {
  const ENTRY = `entry_${'A'.repeat(22)}`;
  const ROUTES: ReadonlyArray<{
    method: string;
    template: string;
    param: string;
    prefix: string;
    role: TestRole;
    body?: unknown;
    other?: Record<string, string>;
  }> = [
    { method: 'DELETE', template: '/v1/entries/{entryId}', param: 'entryId', prefix: 'entry', role: 'eraser' },
    {
      method: 'POST',
      template: '/v1/subjects/{subject}/entries/{entryId}/supersede',
      param: 'entryId',
      prefix: 'entry',
      role: 'writer',
      body: { text: 'a successor' },
      other: { subject: 'user:ids-in-path' },
    },
    {
      method: 'DELETE',
      template: '/v1/subjects/{subject}/key/lease/{leaseId}',
      param: 'leaseId',
      prefix: 'lease',
      role: 'writer',
      other: { subject: 'user:ids-in-path' },
    },
    { method: 'POST', template: '/v1/admin/keys/{keyId}/destroy', param: 'keyId', prefix: 'key', role: 'admin', body: { reason: 'ids in the path' } },
    { method: 'GET', template: '/v1/entries/{entryId}', param: 'entryId', prefix: 'entry', role: 'writer' },
    { method: 'GET', template: '/v1/artifacts/{artifactId}', param: 'artifactId', prefix: 'art', role: 'writer' },
    { method: 'GET', template: '/v1/artifacts/{artifactId}/provenance', param: 'artifactId', prefix: 'art', role: 'writer' },
    { method: 'POST', template: '/v1/artifacts/{artifactId}/regenerate', param: 'artifactId', prefix: 'art', role: 'writer', body: {} },
    { method: 'GET', template: '/v1/backups/{backupId}/manifest', param: 'backupId', prefix: 'bak', role: 'backup' },
    { method: 'GET', template: '/v1/erasures/{erasureId}', param: 'erasureId', prefix: 'ers', role: 'eraser' },
    { method: 'GET', template: '/v1/erasures/{erasureId}/events', param: 'erasureId', prefix: 'ers', role: 'eraser' },
    { method: 'GET', template: '/v1/erasures/{erasureId}/report', param: 'erasureId', prefix: 'ers', role: 'eraser' },
    { method: 'GET', template: '/v1/erasures/{erasureId}/certificate', param: 'erasureId', prefix: 'ers', role: 'eraser' },
    { method: 'POST', template: '/v1/erasures/{erasureId}/redactions', param: 'erasureId', prefix: 'ers', role: 'eraser', body: { ids: [ENTRY] } },
    {
      method: 'POST',
      template: '/v1/erasures/{erasureId}/dismissals',
      param: 'erasureId',
      prefix: 'ers',
      role: 'eraser',
      body: { matches: [{ id: ENTRY, reason: 'a ruling' }] },
    },
    { method: 'POST', template: '/v1/erasures/{erasureId}/resume', param: 'erasureId', prefix: 'ers', role: 'eraser' },
    ...(['approve', 'revoke'] as const).flatMap((op) =>
      (['erasureId', 'dismissalId'] as const).map((param) => ({
        method: 'POST',
        template: `/v1/erasures/{erasureId}/dismissals/{dismissalId}/${op}`,
        param,
        prefix: param === 'erasureId' ? 'ers' : 'dsm',
        role: 'approver' as const,
        other: { [param === 'erasureId' ? 'dismissalId' : 'erasureId']: param === 'erasureId' ? `dsm_${'Z'.repeat(22)}` : `ers_${'Z'.repeat(22)}` } as Record<
          string,
          string
        >,
      })),
    ),
    { method: 'POST', template: '/v1/erasures/{erasureId}/report-link', param: 'erasureId', prefix: 'ers', role: 'eraser', body: {} },
  ];
  const SUBJECT_ROUTES: ReadonlyArray<{ method: string; template: string; body?: unknown; role?: 'admin'; other?: Record<string, string> }> = [
    { method: 'DELETE', template: '/v1/subjects/{subject}/key/lease/{leaseId}', other: { leaseId: `lease_${'Z'.repeat(22)}` } },
    { method: 'PUT', template: '/v1/subjects/{subject}/key' },
    { method: 'POST', template: '/v1/subjects/{subject}/key/lease' },
    { method: 'POST', template: '/v1/subjects/{subject}/entries', body: { text: 'x' } },
    { method: 'GET', template: '/v1/subjects/{subject}/entries' },
    { method: 'POST', template: '/v1/subjects/{subject}/entries/reservations', body: { count: 1 } },
    { method: 'POST', template: '/v1/subjects/{subject}/items/lookup', body: { namespace: ['memories'], key: 'k' } },
    { method: 'POST', template: '/v1/subjects/{subject}/items/search', body: {} },
    { method: 'POST', template: '/v1/subjects/{subject}/supersede', body: { entryIds: [`entry_${'A'.repeat(22)}`], entries: [{ text: 'x' }] } },
    { method: 'POST', template: '/v1/subjects/{subject}/reinstate', body: { reason: 'x' }, role: 'admin' },
  ];

  it('every path parameter in the OpenAPI document has a pattern, and the tables here cover every such route', async () => {
    const doc = await ok<{ paths: Record<string, Record<string, { parameters?: Array<{ in: string; name: string; schema?: { pattern?: string } }> }>> }>(
      t.call('GET', '/openapi.json', { role: 'none' }),
      200,
    );
    const withParams: string[] = [];
    for (const [path, ops] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(ops)) {
        const params = (op.parameters ?? []).filter((p) => p.in === 'path');
        for (const p of params) expect(p.schema?.pattern, `${method} ${path} {${p.name}}`).toMatch(/^\^.+\$$/);
        if (params.length > 0) withParams.push(`${method.toUpperCase()} ${path}`);
      }
    }
    const covered = [...new Set([...ROUTES, ...SUBJECT_ROUTES].map((r) => `${r.method} ${r.template}`))];
    expect(withParams.sort()).toEqual(covered.sort());
  });

  const malformed = (prefix: string) => [
    'nonsense',
    `${prefix}_short`,
    `${prefix}_${'A'.repeat(23)}`,
    `${prefix === 'ers' ? 'art' : 'ers'}_${'A'.repeat(22)}`,
    `${prefix}_${'A'.repeat(21)}%00`,
    `${prefix}_${'A'.repeat(21)}%ED%A0%80`,
    `${prefix}_${'A'.repeat(21)}%F0%9F%98%80`,
  ];

  /** The template with its other parameters filled with valid values. */
  const fill = (template: string, other: Record<string, string> = {}) => Object.entries(other).reduce((t, [k, v]) => t.replace(`{${k}}`, v), template);

  for (const r of ROUTES) {
    it(`${r.method} ${r.template}: a malformed ${r.param} is 400 validation_failed naming it; a well-formed unknown one is 404`, async () => {
      const template = fill(r.template, r.other);
      for (const id of malformed(r.prefix)) {
        const path = template.replace(`{${r.param}}`, id);
        const { detail } = await expectProblem(await t.call(r.method, path, { role: r.role, body: r.body }), 400, 'validation_failed', id);
        expect(detail, id).toContain(`path.${r.param}`);
      }
      const unknown = `${r.prefix}_${'Z'.repeat(22)}`;
      await expectProblem(await t.call(r.method, template.replace(`{${r.param}}`, unknown), { role: r.role, body: r.body }), 404, 'not_found');
    });
  }

  for (const r of SUBJECT_ROUTES) {
    it(`${r.method} ${r.template}: a subject with NUL, a lone surrogate or a slash is 400 validation_failed naming subject`, async () => {
      for (const subject of ['a%00b', 'a%ED%A0%80b', 'a%2Fb', '']) {
        const path = fill(r.template, r.other).replace('{subject}', subject);
        const res = await t.call(r.method, path, { role: r.role ?? 'writer', body: r.body });
        if (subject === '') {
          // an empty segment is another path: not a route
          expect(res.status).toBeGreaterThanOrEqual(400);
          expect(res.status).toBeLessThan(500);
          continue;
        }
        const { detail } = await expectProblem(res, 400, 'validation_failed', subject);
        expect(detail, subject).toContain('path.subject');
      }
    });
  }
});

describe('a database that is not answering', () => {
  const TRANSIENT = [
    '08000',
    '08003',
    '08006',
    '08001',
    '08004',
    '08P01',
    '55000',
    '57P01',
    '57P02',
    '57P03',
    '53300',
    '25006',
    '40001',
    '40P01',
    '55P03',
    'CONNECTION_DESTROYED',
    'CONNECTION_CLOSED',
    'CONNECTION_ENDED',
    'CONNECT_TIMEOUT',
    'ECONNREFUSED',
    'ECONNRESET',
    'EPIPE',
    'ETIMEDOUT',
  ];

  /** The app over the test vault's services, with `epochs.list` failing with `error`. */
  const failingWith = (error: unknown) => {
    const services = Object.create(t.app) as Services;
    Object.defineProperty(services, 'epochs', { value: { list: () => Promise.reject(error) } });
    return createHttpApp({ services, tokens: TokenStore.fromPairs(t.config.tokens) });
  };

  for (const code of TRANSIENT) {
    it(`${code} (as drizzle wraps it) is 503 unavailable with Retry-After, and says nothing of the query`, async () => {
      const driver = Object.assign(new Error(`driver said ${PLANTED}`), { code });
      const wrapped = new Error(`Failed query: select ${PLANTED}`, { cause: driver });
      const res = await failingWith(wrapped).request('/v1/admin/kek', requestInit('GET', { role: 'admin' }));
      const { text } = await expectProblem(res, 503, 'unavailable', code);
      expect(res.headers.get('retry-after')).toBe('1');
      expect(text).not.toContain(PLANTED);
    });
  }

  it('a permanent database error (a constraint, a syntax error, bad data) is not 503', async () => {
    for (const code of ['23505', '42601', '22021', '0A000', '42P01']) {
      const res = await failingWith(Object.assign(new Error('x'), { code })).request('/v1/admin/kek', requestInit('GET', { role: 'admin' }));
      expect(res.status, code).not.toBe(503);
      expect(res.headers.get('retry-after'), code).toBeNull();
    }
  });

  it('a real closed connection pool answers 503 unavailable with Retry-After', async () => {
    const down = await openTestApp();
    try {
      await down.app.db.close();
      const res = await down.call('GET', '/v1/admin/kek', { role: 'admin' });
      await expectProblem(res, 503, 'unavailable');
      expect(res.headers.get('retry-after')).toBe('1');
    } finally {
      await down.close().catch(() => {});
    }
  });
});
