/**
 * Bad input over HTTP: malformed subject ids, malformed JSON, schema violations,
 * oversized bodies and unknown routes all end in a problem document naming what was
 * wrong, never echo tokens or body content, and lose nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectProblem } from '../support/http.js';
import { openTestApp, type TestApp, TOKENS } from '../support/vault.js';

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
    await expectProblem(
      await t.call('POST', `/v1/admin/keys/${knownKeyId}/destroy`, { role: 'admin', rawBody: '{"reason": ' }),
      400,
      'validation_failed',
    );
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
    const res = await t.app.request('/v1/keys/validity', {
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

  it('a known path with an unregistered method is a problem+json client error', async () => {
    const res = await t.call('DELETE', '/v1/subjects/user:survivor/key', { role: 'writer' });
    expect(res.status).toBeGreaterThanOrEqual(400);
    expect(res.status).toBeLessThan(500);
    expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
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
    t.vault.cache.clear();
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
    const res = await small.app.request('/v1/keys/validity', {
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
