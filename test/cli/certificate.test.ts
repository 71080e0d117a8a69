/**
 * `lethe certificate verify | public-key | keys | rotate-key` and `lethe erasure
 * certificate` as child processes, against a real `lethe serve` (a child process on
 * PostgreSQL). `verify` needs a trusted key — without one it exits 2 and says why the
 * key a certificate carries proves nothing; a forgery (flipped to completed, re-signed
 * with a random key, its embedded key replaced) fails with --url, --public-key and
 * --public-key-file alike; a certificate from before a key rotation still verifies
 * against the retired key the vault lists, and the next one names the new key. A
 * certificate issued after its key's retirement (the retired root-derived key of a
 * vault from before signing keys, which the root key re-derives) is invalid; `--url`
 * over plain http:// is refused for a host that is not loopback (issue 29).
 */
import { randomBytes } from 'node:crypto';
import { readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Certificate, certificateKeyId, certificatePublicKey, signCertificate } from '../../src/crypto/certificate.js';
import { deriveSubkey } from '../../src/crypto/index.js';
import { createTestDatabase, type TestDatabase } from '../support/pg.js';
import { CLI, type RunningService, runCli, startService } from '../support/process.js';
import { asKeyringBeforeSigningKeys, tempDir, testEnv, TOKENS } from '../support/vault.js';

const TIMEOUT = 120_000;
const tag = () => randomBytes(5).toString('hex');
const words = (n: number) => Array.from({ length: n }, () => `w${randomBytes(4).toString('hex')}`).join(' ');

let db: TestDatabase;
let dataDir: string;
let service: RunningService;
/** The service's own configuration: what the local commands (public-key, keys, rotate-key) run with. */
let localEnv: Record<string, string>;
/** A client's environment: the service's URL and the eraser's token, nothing else. */
let clientEnv: Record<string, string>;
/** A certificate the vault signed for an incomplete erasure (another subject's record still carries the content). */
let honestFile = '';
let honest: Certificate;
/** The same, flipped to completed, re-signed with a random key whose public key it now carries. */
let forgedFile = '';
/** The same forgery, naming its own key's id. */
let forgedOwnIdFile = '';
let keysFile = '';

beforeAll(async () => {
  db = await createTestDatabase();
  dataDir = tempDir();
  localEnv = { ...testEnv({ databaseUrl: db.url, dataDir, extra: { LETHE_ERASURE_POLL_MS: '100' } }), PATH: process.env.PATH ?? '' };
  service = await startService(process.execPath, [...CLI, 'serve'], localEnv);
  // a vault from before signing keys: it lists the retired root-derived key, whose private part the root key derives again
  asKeyringBeforeSigningKeys(path.join(dataDir, 'keyring'));
  clientEnv = { LETHE_URL: service.url, LETHE_TOKENS: `eraser=${TOKENS.eraser}` };
  honestFile = path.join(dataDir, 'honest.json');
  forgedFile = path.join(dataDir, 'forged.json');
  forgedOwnIdFile = path.join(dataDir, 'forged-own-id.json');
  keysFile = path.join(dataDir, 'keys.json');
}, TIMEOUT);

afterAll(async () => {
  await service?.stop();
  await db?.drop();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

async function call<T>(method: string, p: string, role: keyof typeof TOKENS | 'none', body?: unknown): Promise<{ status: number; body: T }> {
  const res = await fetch(`${service.url}${p}`, {
    method,
    headers: { ...(role === 'none' ? {} : { authorization: `Bearer ${TOKENS[role]}` }), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, body: (text ? JSON.parse(text) : undefined) as T };
}

async function append(subject: string, text: string): Promise<void> {
  const res = await call('POST', `/v1/subjects/${subject}/entries`, 'writer', { text });
  expect(res.status).toBe(201);
}

/** Requests an erasure through the service and waits until it finished. */
async function erase(subject: string): Promise<{ erasureId: string; status: string }> {
  const { body } = await call<{ erasureId: string }>('POST', '/v1/erasures', 'eraser', { subject });
  for (let i = 0; i < 600; i++) {
    const view = await call<{ status: string }>('GET', `/v1/erasures/${body.erasureId}`, 'eraser');
    if (view.body.status !== 'pending' && view.body.status !== 'running') return { erasureId: body.erasureId, status: view.body.status };
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`erasure ${body.erasureId} did not finish`);
}

const verify = (file: string, ...args: string[]) => runCli(['certificate', 'verify', file, ...args], clientEnv);

describe('lethe erasure certificate', () => {
  it('prints the signed certificate alone, and with -o writes it to a private file', { timeout: TIMEOUT }, async () => {
    const A = `user:cli-cert-a-${tag()}`;
    const secret = words(6);
    await append(A, `the locker code is ${secret}`);
    await append(`user:cli-cert-b-${tag()}`, `A told me the locker code is ${secret}`);
    const { erasureId, status } = await erase(A);
    expect(status).toBe('incomplete');
    const served = await call<Certificate>('GET', `/v1/erasures/${erasureId}/certificate`, 'eraser');
    expect(served.status).toBe(200);

    const [printed, written] = await Promise.all([
      runCli(['erasure', 'certificate', erasureId], clientEnv),
      runCli(['erasure', 'certificate', erasureId, '-o', honestFile], clientEnv),
    ]);
    expect(printed.code, printed.stderr).toBe(0);
    expect(JSON.parse(printed.stdout)).toEqual(served.body);
    expect(written.code, written.stderr).toBe(0);
    expect(JSON.parse(written.stdout)).toEqual({ erasureId, certificate: honestFile, bytes: expect.any(Number) });
    honest = JSON.parse(readFileSync(honestFile, 'utf8')) as Certificate;
    expect(honest).toEqual(served.body);
    expect(statSync(honestFile).mode & 0o777).toBe(0o600);
    expect(honest.payload).toMatchObject({ erasureId, status: 'incomplete', signingKeyId: expect.stringMatching(/^csk_/) });
    expect(printed.stdout + printed.stderr).not.toContain(A);

    // the forgeries every later test checks
    const forger = randomBytes(32);
    const flipped = { ...honest.payload, status: 'completed', probe: { recovered: 0, threshold: 0.15, matches: [] }, residuals: [] };
    const forged = signCertificate(flipped, forger);
    expect(forged.publicKey).not.toBe(honest.publicKey);
    writeFileSync(forgedFile, JSON.stringify(forged));
    writeFileSync(forgedOwnIdFile, JSON.stringify(signCertificate({ ...flipped, signingKeyId: certificateKeyId(certificatePublicKey(forger)) }, forger)));
  });

  it("exits 2 with the service's problem for an unknown id and an erasure without a certificate yet, and before any request for a malformed id", {
    timeout: TIMEOUT,
  }, async () => {
    // an erasure held open: a writer leased the key before it, so it waits at drain_leases
    const s = `user:cli-cert-open-${tag()}`;
    await append(s, words(5));
    expect((await call('POST', `/v1/subjects/${s}/key/lease`, 'writer')).status).toBe(200);
    const { body } = await call<{ erasureId: string }>('POST', '/v1/erasures', 'eraser', { subject: s });
    const [unknown, open, malformed] = await Promise.all([
      runCli(['erasure', 'certificate', `ers_${'A'.repeat(22)}`], clientEnv),
      runCli(['erasure', 'certificate', body.erasureId], clientEnv),
      runCli(['erasure', 'certificate', 'not-an-id'], { ...clientEnv, LETHE_URL: 'http://127.0.0.1:9' }),
    ]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/answered 404 not_found: no such erasure/);
    expect(open.code).toBe(2);
    expect(open.stderr).toMatch(/answered 409 conflict: erasure ers_\S+ has no certificate yet/);
    expect(malformed.code).toBe(2);
    expect(malformed.stderr).toMatch(/an erasure id is ers_ followed by 22 characters/);
    expect(unknown.stdout + open.stdout + malformed.stdout).toBe('');
  });
});

describe('lethe certificate verify', () => {
  it('exits 2 without a trusted key, saying why the key a certificate carries proves nothing — even for a forgery that holds under its own key', {
    timeout: TIMEOUT,
  }, async () => {
    const [plain, forged] = await Promise.all([verify(honestFile), verify(forgedFile)]);
    for (const run of [plain, forged]) {
      expect(run.code).toBe(2);
      expect(run.stdout).toBe('');
      expect(run.stderr).toMatch(/a trusted key is required/);
      expect(run.stderr).toMatch(/only shows that someone signed it/);
      expect(run.stderr).toMatch(/--url <vault base url>.*--public-key <key>.*--public-key-file <file>/);
    }
  });

  it('`public-key` and `keys` print what the service serves without a token', { timeout: TIMEOUT }, async () => {
    const [publicKey, keys] = await Promise.all([runCli(['certificate', 'public-key'], localEnv), runCli(['certificate', 'keys'], localEnv)]);
    expect(publicKey.code, publicKey.stderr).toBe(0);
    expect(keys.code, keys.stderr).toBe(0);
    expect(JSON.parse(publicKey.stdout)).toEqual((await call('GET', '/v1/certificates/public-key', 'none')).body);
    expect(JSON.parse(keys.stdout)).toEqual((await call('GET', '/v1/certificates/keys', 'none')).body);
    writeFileSync(keysFile, keys.stdout);
    expect(JSON.parse(publicKey.stdout)).toMatchObject({ keyId: honest.payload.signingKeyId, publicKey: honest.publicKey });
  });

  it("exits 0 for the vault's certificate with --url, --public-key and --public-key-file", { timeout: TIMEOUT }, async () => {
    const [url, key, file] = await Promise.all([
      verify(honestFile, '--url', service.url),
      verify(honestFile, '--public-key', honest.publicKey),
      verify(honestFile, '--public-key-file', keysFile),
    ]);
    for (const run of [url, key, file]) expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(url.stdout)).toEqual({ valid: true, keyId: honest.payload.signingKeyId, keyState: 'current' });
    expect(JSON.parse(key.stdout)).toEqual({ valid: true, keyId: honest.payload.signingKeyId });
    expect(JSON.parse(file.stdout)).toEqual({ valid: true, keyId: honest.payload.signingKeyId, keyState: 'current' });
  });

  it('exits 1 for a forged certificate with every trusted-key option, and for an edited one', { timeout: TIMEOUT }, async () => {
    const editedFile = path.join(dataDir, 'edited.json');
    writeFileSync(editedFile, JSON.stringify({ ...honest, payload: { ...honest.payload, status: 'completed' } }));
    const runs = await Promise.all([
      verify(forgedFile, '--url', service.url),
      verify(forgedFile, '--public-key', honest.publicKey),
      verify(forgedFile, '--public-key-file', keysFile),
      verify(forgedOwnIdFile, '--url', service.url),
      verify(forgedOwnIdFile, '--public-key', honest.publicKey),
      verify(forgedOwnIdFile, '--public-key-file', keysFile),
      verify(editedFile, '--url', service.url),
    ]);
    for (const run of runs) {
      expect(run.code, run.stdout).toBe(1);
      expect(JSON.parse(run.stdout)).toMatchObject({ valid: false, reason: expect.any(String) });
      expect(run.stderr).toMatch(/^lethe: certificate does not verify: /);
    }
    // keeping the vault's key id: the key it carries is not the vault's
    for (const run of runs.slice(0, 3)) expect(run.stderr).toMatch(/the public key it carries is not the trusted key csk_/);
    // naming its own key: not one of the vault's
    for (const run of runs.slice(3, 6)) expect(run.stderr).toMatch(/signed by key csk_\S+, which is not one of the \d trusted key\(s\)/);
    expect(runs[6]!.stderr).toMatch(/the signature does not match the payload under trusted key/);
  });

  it('exits 2 with a plain message for an unreadable certificate or unusable trusted keys', { timeout: TIMEOUT }, async () => {
    const garbage = path.join(dataDir, 'garbage.json');
    writeFileSync(garbage, '{ not json');
    const runs = await Promise.all([
      verify(path.join(dataDir, 'nope.json'), '--url', service.url),
      verify(garbage, '--public-key', honest.publicKey),
      verify(honestFile, '--public-key', 'not-a-key'),
      verify(honestFile, '--public-key-file', path.join(dataDir, 'no-keys.json')),
      verify(honestFile, '--url', 'http://127.0.0.1:9'),
      verify(honestFile, '--url', 'ftp://example.org'),
      verify(honestFile, '--url', `${service.url}/nothing-here`),
    ]);
    for (const run of runs) {
      expect(run.code, run.stderr).toBe(2);
      expect(run.stdout).toBe('');
    }
    expect(runs[0]!.stderr).toContain('cannot read a JSON certificate');
    expect(runs[1]!.stderr).toContain('cannot read a JSON certificate');
    expect(runs[2]!.stderr).toMatch(/--public-key is not an Ed25519 public key/);
    expect(runs[3]!.stderr).toMatch(/cannot read --public-key-file/);
    expect(runs[4]!.stderr).toMatch(/cannot fetch the vault's certificate keys from http:\/\/127\.0\.0\.1:9/);
    expect(runs[5]!.stderr).toMatch(/--url must be an http\(s\):\/\/ URL/);
    expect(runs[6]!.stderr).toMatch(/answered 404/);
  });
});

describe('lethe certificate verify: retired keys and plain HTTP (issue 29)', () => {
  it('exits 1 for a certificate issued after its signing key was retired (a retired key signs nothing later); one issued before still verifies', {
    timeout: TIMEOUT,
  }, async () => {
    const { body } = await call<{ keys: Array<{ keyId: string; publicKey: string; origin: string; retiredAt: string | null }> }>(
      'GET',
      '/v1/certificates/keys',
      'none',
    );
    const retired = body.keys.find((k) => k.origin === 'root-derived')!;
    expect(retired.retiredAt).toMatch(/^\d{4}-/);
    // whoever holds a retired key's private part (here the root-derived one, which the root key derives again) signs as the vault did
    const rootDerived = deriveSubkey(Buffer.from(localEnv.LETHE_ROOT_KEY!, 'base64'), 'certificate-signing');
    expect(certificateKeyId(certificatePublicKey(rootDerived))).toBe(retired.keyId);
    const sign = (issuedAt: string) => signCertificate({ ...honest.payload, signingKeyId: retired.keyId, issuedAt }, rootDerived);
    const lateFile = path.join(dataDir, 'after-retirement.json');
    const earlyFile = path.join(dataDir, 'before-retirement.json');
    writeFileSync(lateFile, JSON.stringify(sign(new Date(Date.parse(retired.retiredAt!) + 60_000).toISOString())));
    writeFileSync(earlyFile, JSON.stringify(sign(new Date(Date.parse(retired.retiredAt!) - 60_000).toISOString())));
    writeFileSync(keysFile, JSON.stringify(body));
    const [lateUrl, lateFileKeys, early] = await Promise.all([
      verify(lateFile, '--url', service.url),
      verify(lateFile, '--public-key-file', keysFile),
      verify(earlyFile, '--url', service.url),
    ]);
    for (const run of [lateUrl, lateFileKeys]) {
      expect(run.code, run.stdout).toBe(1);
      expect(run.stderr).toMatch(
        new RegExp(`^lethe: certificate does not verify: issued at \\S+, after its signing key ${retired.keyId} was retired at ${retired.retiredAt}`),
      );
    }
    expect(early.code, early.stderr).toBe(0);
    expect(JSON.parse(early.stdout)).toEqual({ valid: true, keyId: retired.keyId, keyState: 'retired' });
  });

  it('exits 2 for --url over plain http:// to a host that is not loopback, before any request; https://, and http:// to loopback, are asked', {
    timeout: TIMEOUT,
  }, async () => {
    const runs = await Promise.all(['http://lethe.example', 'http://10.0.0.1:8080', 'http://[2001:db8::1]'].map((url) => verify(honestFile, '--url', url)));
    for (const run of runs) {
      expect(run.code, run.stderr).toBe(2);
      expect(run.stdout).toBe('');
      expect(run.stderr).toMatch(/^lethe: --url http:\/\/\S+: the vault's keys decide what verifies, so they are fetched over https:\/\/ only/);
      expect(run.stderr).not.toContain('cannot fetch');
    }
    const local = await verify(honestFile, '--url', service.url.replace('127.0.0.1', 'localhost'));
    expect(local.code, local.stderr).toBe(0);
    const https = await verify(honestFile, '--url', 'https://127.0.0.1:9');
    expect(https.code).toBe(2);
    expect(https.stderr).toMatch(/cannot fetch the vault's certificate keys from https:\/\/127\.0\.0\.1:9/);
  });
});

describe('lethe certificate rotate-key', () => {
  it('retires the key: a certificate from before still verifies against the retired key the vault lists, and the next one names the new key', {
    timeout: TIMEOUT,
  }, async () => {
    const rotated = await runCli(['certificate', 'rotate-key'], localEnv);
    expect(rotated.code, rotated.stderr).toBe(0);
    const { current, retired } = JSON.parse(rotated.stdout) as {
      current: { keyId: string; publicKey: string; state: string };
      retired: { keyId: string; state: string };
    };
    expect(retired).toMatchObject({ keyId: honest.payload.signingKeyId, state: 'retired' });
    expect(current.state).toBe('current');
    expect(current.keyId).not.toBe(retired.keyId);
    // the running service lists and serves the new key at once
    expect((await call<{ keyId: string }>('GET', '/v1/certificates/public-key', 'none')).body.keyId).toBe(current.keyId);

    const s = `user:cli-cert-after-${tag()}`;
    await append(s, words(6));
    const { erasureId, status } = await erase(s);
    expect(status).toBe('completed');
    const newFile = path.join(dataDir, 'after-rotation.json');
    const written = await runCli(['erasure', 'certificate', erasureId, '-o', newFile], clientEnv);
    expect(written.code, written.stderr).toBe(0);
    const fresh = JSON.parse(readFileSync(newFile, 'utf8')) as Certificate;
    expect(fresh.payload.signingKeyId).toBe(current.keyId);

    const [old, now, oldAgainstNewKey, forged] = await Promise.all([
      verify(honestFile, '--url', service.url),
      verify(newFile, '--url', service.url),
      verify(honestFile, '--public-key', current.publicKey),
      verify(forgedFile, '--url', service.url),
    ]);
    expect(old.code, old.stderr).toBe(0);
    expect(JSON.parse(old.stdout)).toEqual({ valid: true, keyId: retired.keyId, keyState: 'retired' });
    expect(now.code, now.stderr).toBe(0);
    expect(JSON.parse(now.stdout)).toEqual({ valid: true, keyId: current.keyId, keyState: 'current' });
    expect(oldAgainstNewKey.code).toBe(1);
    expect(forged.code).toBe(1);
  });
});
