import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../support/pg.js';
import { CLI, type RunningService, startService } from '../support/process.js';
import { TOKENS, tempDir, testEnv } from '../support/vault.js';

const auth = (role: keyof typeof TOKENS) => ({ authorization: `Bearer ${TOKENS[role]}` });

async function metricValue(service: RunningService, name: string, labels = ''): Promise<number> {
  const text = await (await fetch(`${service.url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name}${labels} `) || (labels === '' && l.startsWith(`${name} `)));
  return line ? Number(line.split(' ').at(-1)) : 0;
}

describe('two lethe serve processes on one database', () => {
  let db: TestDatabase;
  let a: RunningService;
  let b: RunningService;

  beforeAll(async () => {
    db = await createTestDatabase();
    const env = testEnv({ databaseUrl: db.url, dataDir: tempDir() });
    a = await startService(process.execPath, [...CLI, 'serve'], env);
    b = await startService(process.execPath, [...CLI, 'serve'], env);
  }, 120_000);
  afterAll(async () => {
    await a?.stop();
    await b?.stop();
    await db?.drop();
  });

  it('a key destroyed through one replica is dropped from the other within one second and never leased again', async () => {
    const leased = await fetch(`${b.url}/v1/subjects/user:replica/key/lease`, { method: 'POST', headers: auth('writer') });
    expect(leased.status).toBe(200);
    const { keyId, dek } = (await leased.json()) as { keyId: string; dek: string };
    expect(await metricValue(b, 'lethe_dek_cache_entries')).toBe(1);

    const started = performance.now();
    const destroyed = await fetch(`${a.url}/v1/admin/keys/${keyId}/destroy`, {
      method: 'POST',
      headers: { ...auth('admin'), 'content-type': 'application/json' },
      body: JSON.stringify({ reason: 'replica test' }),
    });
    expect(destroyed.status).toBe(200);

    let dropped = false;
    while (performance.now() - started < 1000) {
      if ((await metricValue(b, 'lethe_dek_cache_invalidations_total', '{source="notification"}')) === 1) {
        dropped = true;
        break;
      }
      await new Promise((r) => setTimeout(r, 20));
    }
    const elapsed = performance.now() - started;
    expect(dropped, `replica B still cached the destroyed key after ${elapsed.toFixed(0)} ms`).toBe(true);
    expect(await metricValue(b, 'lethe_dek_cache_entries')).toBe(0);

    const after = await fetch(`${b.url}/v1/subjects/user:replica/key/lease`, { method: 'POST', headers: auth('writer') });
    expect(after.status).toBe(200);
    const next = (await after.json()) as { keyId: string; dek: string };
    expect(next.keyId).not.toBe(keyId);
    expect(next.dek).not.toBe(dek);

    const validity = await fetch(`${b.url}/v1/keys/validity`, {
      method: 'POST',
      headers: { ...auth('backup'), 'content-type': 'application/json' },
      body: JSON.stringify({ keyIds: [keyId, next.keyId] }),
    });
    expect(await validity.json()).toEqual({ keys: { [keyId]: 'destroyed', [next.keyId]: 'active' } });
  });

  it('a rotation through one replica leaves the other serving the same DEKs', async () => {
    const before = (await (await fetch(`${b.url}/v1/subjects/user:rot/key/lease`, { method: 'POST', headers: auth('writer') })).json()) as {
      dek: string;
    };
    const rotated = await fetch(`${a.url}/v1/admin/kek/rotate`, { method: 'POST', headers: auth('admin') });
    expect(rotated.status).toBe(200);
    // B's KEK for the retired epoch was dropped on notification; a cold subject still unwraps under the new one
    const cold = await fetch(`${b.url}/v1/subjects/user:replica/key/lease`, { method: 'POST', headers: auth('writer') });
    expect(cold.status).toBe(200);
    const after = (await (await fetch(`${a.url}/v1/subjects/user:rot/key/lease`, { method: 'POST', headers: auth('writer') })).json()) as {
      dek: string;
    };
    expect(after.dek).toBe(before.dek);
  });

  it('the body limit holds on the real server, for declared and for chunked bodies, and loses nothing', async () => {
    const big = JSON.stringify({ keyIds: Array.from({ length: 100_000 }, (_, i) => `key_${i}`) });
    const declared = await fetch(`${a.url}/v1/keys/validity`, {
      method: 'POST',
      headers: { ...auth('backup'), 'content-type': 'application/json' },
      body: big,
    });
    expect(declared.status, 'declared length').toBe(413);
    expect(declared.headers.get('content-type')).toBe('application/problem+json');
    expect(((await declared.json()) as { code: string }).code).toBe('payload_too_large');
    const bytes = new TextEncoder().encode(big);
    expect(bytes.length).toBeGreaterThan(1024 * 1024);
    const chunked = await fetch(`${a.url}/v1/keys/validity`, {
      method: 'POST',
      headers: { ...auth('backup'), 'content-type': 'application/json' },
      body: new ReadableStream({
        start(controller) {
          for (let i = 0; i < bytes.length; i += 64 * 1024) controller.enqueue(bytes.subarray(i, i + 64 * 1024));
          controller.close();
        },
      }),
      duplex: 'half',
    } as RequestInit);
    expect(chunked.status, await chunked.clone().text()).toBe(413);
    const small = await fetch(`${a.url}/v1/keys/validity`, {
      method: 'POST',
      headers: { ...auth('backup'), 'content-type': 'application/json' },
      body: JSON.stringify({ keyIds: ['key_x'] }),
    });
    expect(await small.json()).toEqual({ keys: { key_x: 'unknown' } });
  });
});
