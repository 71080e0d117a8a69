/**
 * The backup routes over HTTP against PostgreSQL and a real, versioned MinIO: status
 * codes and fields from API.md, roles, problem+json refusals, and that no response
 * carries a DEK or an entry's text.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectProblem, ok } from '../support/http.js';
import { openTestApp, type TestApp, type TestRole } from '../support/vault.js';
import { encodings, hex, minioEnv, until } from './support.js';

const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;
const SHA256_HEX = /^[0-9a-f]{64}$/;

interface Taken {
  backupId: string;
  objects: number;
  keys: number;
}
interface Listed extends Taken {
  createdAt: string;
}
interface ManifestBody {
  backupId: string;
  version: number;
  createdAt: string;
  objects: Array<{ key: string; sha256: string; keyIds: string[] }>;
  keys: Array<{ keyId: string; state: string; destroyedAt?: string }>;
  base: { version: number; mac: string | null };
  overlay: { destroyed: number; through: number | null };
}

describe('backup routes', () => {
  let t: TestApp;
  const SUBJECT = `user:h-${hex()}`;
  const CANARY = `CANARY-${hex(8)}`;
  let keyId: string;
  let taken: Taken;
  /** The subject's DEK as base64url, base64 and hex, captured before it is destroyed. */
  let dekForms: Array<[string, string]> = [];
  /** Every response body seen in this file, checked for secrets at the end. */
  const bodies: Array<{ what: string; text: string }> = [];

  /** A call whose body is kept in `bodies`. */
  async function call(what: string, method: string, path: string, role: TestRole | 'none'): Promise<Response> {
    const res = await t.call(method, path, { role });
    bodies.push({ what, text: await res.clone().text() });
    return res;
  }
  const refused = (what: string, method: string, path: string, role: TestRole | 'none', status: number, code: string) =>
    expectProblem(call(what, method, path, role), status, code, what);

  beforeAll(async () => {
    t = await openTestApp({ extraEnv: minioEnv().env });
    const appended = await t.call('POST', `/v1/subjects/${encodeURIComponent(SUBJECT)}/entries`, {
      role: 'writer',
      body: { text: `The vault code is ${CANARY}.` },
    });
    expect(appended.status).toBe(201);
    keyId = ((await appended.json()) as { keyId: string }).keyId;
    const { dek } = await t.app.keys.dekFor(keyId);
    dekForms = encodings(dek)
      .filter(([form]) => form !== 'raw')
      .map(([form, bytes]) => [form, bytes.toString('utf8')]);
    dek.fill(0);
  });
  afterAll(async () => {
    await t?.close();
  });

  it('POST /v1/backups takes a backup: 201 { backupId, objects, keys }', async () => {
    taken = await ok<Taken>(call('take', 'POST', '/v1/backups', 'backup'), 201);
    expect(taken).toEqual({ backupId: expect.any(String), objects: 1, keys: 1 });
  });

  it('GET /v1/backups lists it with createdAt', async () => {
    const { backups } = await ok<{ backups: Listed[] }>(call('list', 'GET', '/v1/backups', 'backup'), 200);
    expect(backups).toHaveLength(1);
    expect(backups[0]).toMatchObject({ backupId: taken.backupId, objects: 1, keys: 1 });
    expect(backups[0]!.createdAt).toMatch(RFC3339);
  });

  it('GET /v1/backups/{id}/manifest answers the current manifest with the fields of API.md', async () => {
    const m = await ok<ManifestBody>(call('manifest', 'GET', `/v1/backups/${taken.backupId}/manifest`, 'backup'), 200);
    expect(m).toMatchObject({ backupId: taken.backupId, version: 1 });
    expect(m.createdAt).toMatch(RFC3339);
    expect(m.objects).toHaveLength(1);
    expect(m.objects[0]!.key).toMatch(/^log\//);
    expect(m.objects[0]!.sha256).toMatch(SHA256_HEX);
    expect(m.objects[0]!.keyIds).toEqual([keyId]);
    expect(m.keys).toEqual([expect.objectContaining({ keyId, state: 'active' })]);
    expect(m.keys[0]!.destroyedAt).toBeUndefined();
    expect(m.overlay).toEqual({ destroyed: 0, through: null });
  });

  it('answers 404 problem+json for an unknown backup', async () => {
    await refused('unknown manifest', 'GET', '/v1/backups/bak_doesnotexist0000000000/manifest', 'backup', 404, 'not_found');
  });

  it('lets the backup and admin roles in and refuses writer and eraser (403) and no token (401)', async () => {
    const byAdmin = await ok<Taken>(call('take as admin', 'POST', '/v1/backups', 'admin'), 201);
    expect(byAdmin.backupId).not.toBe(taken.backupId);
    expect((await ok<{ backups: Listed[] }>(call('list as admin', 'GET', '/v1/backups', 'admin'), 200)).backups).toHaveLength(2);
    expect((await ok<ManifestBody>(call('manifest as admin', 'GET', `/v1/backups/${taken.backupId}/manifest`, 'admin'), 200)).backupId).toBe(taken.backupId);

    const routes: Array<[string, string]> = [
      ['POST', '/v1/backups'],
      ['GET', '/v1/backups'],
      ['GET', `/v1/backups/${taken.backupId}/manifest`],
    ];
    for (const [method, path] of routes) {
      await refused(`${method} ${path} as writer`, method, path, 'writer', 403, 'forbidden');
      await refused(`${method} ${path} as eraser`, method, path, 'eraser', 403, 'forbidden');
      await refused(`${method} ${path} without a token`, method, path, 'none', 401, 'unauthorized');
    }
    // the refused POSTs took no backup
    expect(await t.app.backups.list()).toHaveLength(2);
  });

  it('shows a destruction in the folded manifest with destroyedAt, the base unchanged', async () => {
    const destroyed = await t.call('POST', `/v1/admin/keys/${keyId}/destroy`, { role: 'admin', body: { reason: 'contract test' } });
    expect(destroyed.status).toBe(200);
    const m = await until(
      'the destruction folded in',
      () => ok<ManifestBody>(call('manifest after destruction', 'GET', `/v1/backups/${taken.backupId}/manifest`, 'backup'), 200),
      (b) => b.overlay.destroyed === 1,
    );
    expect(m.keys).toEqual([expect.objectContaining({ keyId, state: 'destroyed' })]);
    expect(m.keys[0]!.destroyedAt).toMatch(RFC3339);
    expect(m.version).toBe(1);
    expect(m.base).toEqual({ version: 1, mac: expect.stringMatching(/^[0-9a-f]{64}$/) });
    expect(m.overlay.through).toEqual(expect.any(Number));
  });

  it('never answered with a DEK or the text of an entry', async () => {
    expect(bodies.length).toBeGreaterThanOrEqual(16);
    expect(dekForms).toHaveLength(3);
    for (const b of bodies) {
      expect(b.text, b.what).not.toContain(CANARY);
      for (const [form, dek] of dekForms) expect(b.text, `${b.what}: the DEK as ${form}`).not.toContain(dek);
    }
  });
});
