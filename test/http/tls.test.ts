/**
 * Native TLS, against real `lethe serve` processes on PostgreSQL with certificates made
 * by `openssl` for this run: a throwaway CA, a server certificate for 127.0.0.1 and
 * localhost (subjectAltName), a client certificate, and a second, untrusted CA.
 *
 * - served over HTTPS (LETHE_TLS_CERT / LETHE_TLS_KEY): the startup line says https, the
 *   facade and the writer with the CA lease a key and append, answers carry HSTS; a client
 *   without the CA, or with another CA, is refused with a certificate error; the CLI with
 *   LETHE_CA_FILE works, without it exits non-zero with a plain message;
 * - with LETHE_TLS_CLIENT_CA: no client certificate, or one of another CA, is refused;
 *   one signed by the CA works (facade and CLI);
 * - production: plain HTTP on a non-loopback host refuses to start (exit 2, saying why and
 *   the two ways out); LETHE_BEHIND_TLS_PROXY=true lets it start; loopback plain HTTP is fine;
 * - the TLS files: a missing or mismatched key, or only one of the pair, exit 2 naming the variable;
 * - the cipher suites: TLS 1.2 only with ECDHE and AES-GCM / ChaCha20-Poly1305 (a client offering
 *   only `AES128-SHA`, RSA key exchange, is refused by a server with an RSA certificate, and one
 *   offering only a CBC suite by the ECDSA one); TLS 1.3 as before.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { connect, type SecureVersion } from 'node:tls';
import { Agent, fetch as undiciFetch } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Lethe, LetheWriter, UnreachableError } from '../../src/client/index.js';
import { checkPlainHttp, isLoopbackHost } from '../../src/config/tls.js';
import { ConfigError, loadConfig } from '../../src/config/index.js';
import { FsObjectStore } from '../../src/storage/fs.js';
import { createTestDatabase, type TestDatabase } from '../support/pg.js';
import { CLI, type RunningService, runCli, startService } from '../support/process.js';
import { tempDir, testEnv, TOKENS } from '../support/vault.js';

const TIMEOUT = 120_000;

let db: TestDatabase;
let dir = '';
let dataDir = '';
let env: Record<string, string> = {};
/** The PEM files, by name (ca, server, client, rogue-ca, rogue-client: .crt and .key). */
const file = (name: string) => path.join(dir, name);
const pem = (name: string) => readFileSync(file(name));
let tlsService: RunningService;
let mtlsService: RunningService;
let tlsUrl = '';
let mtlsUrl = '';

function openssl(args: string[]): void {
  try {
    execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
  } catch (e) {
    const err = e as NodeJS.ErrnoException & { stderr?: Buffer };
    if (err.code === 'ENOENT') throw new Error('openssl is not installed: these tests make their certificates with it');
    throw new Error(`openssl ${args.join(' ')} failed: ${err.stderr?.toString() ?? err.message}`);
  }
}

/** A CA certificate and key (P-256), `<name>.crt` / `<name>.key`. */
function makeCa(name: string): void {
  openssl([
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:P-256',
    '-nodes',
    '-keyout',
    `${name}.key`,
    '-out',
    `${name}.crt`,
    '-days',
    '2',
    '-subj',
    `/CN=${name}`,
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign',
  ]);
}

/** A leaf certificate signed by `ca`, with these extensions (subjectAltName, extendedKeyUsage). */
function makeLeaf(name: string, ca: string, extensions: string): void {
  openssl(['req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=${name}`]);
  writeFileSync(file(`${name}.ext`), `basicConstraints=CA:FALSE\n${extensions}\n`);
  openssl([
    'x509',
    '-req',
    '-in',
    `${name}.csr`,
    '-CA',
    `${ca}.crt`,
    '-CAkey',
    `${ca}.key`,
    '-CAcreateserial',
    '-out',
    `${name}.crt`,
    '-days',
    '2',
    '-extfile',
    `${name}.ext`,
  ]);
}

/** An RSA (2048) leaf signed by `ca`: the certificate kind under which `AES128-SHA` (RSA key exchange) can be negotiated. */
function makeRsaLeaf(name: string, ca: string, extensions: string): void {
  openssl(['req', '-newkey', 'rsa:2048', '-nodes', '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=${name}`]);
  writeFileSync(file(`${name}.ext`), `basicConstraints=CA:FALSE\n${extensions}\n`);
  openssl([
    'x509',
    '-req',
    '-in',
    `${name}.csr`,
    '-CA',
    `${ca}.crt`,
    '-CAkey',
    `${ca}.key`,
    '-CAcreateserial',
    '-out',
    `${name}.crt`,
    '-days',
    '2',
    '-extfile',
    `${name}.ext`,
  ]);
}

/** A TLS handshake with the service offering only `ciphers` at `version`: the suite it agreed on, or the error that ended it. */
function handshake(port: number, version: SecureVersion, ciphers: string): Promise<{ cipher: string; protocol: string | null } | { error: string }> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port, ca: pem('ca.crt'), minVersion: version, maxVersion: version, ciphers, servername: 'localhost' }, () => {
      const agreed = { cipher: socket.getCipher().standardName, protocol: socket.getProtocol() };
      socket.end();
      resolve(agreed);
    });
    socket.on('error', (e: NodeJS.ErrnoException) => resolve({ error: e.code ?? e.message }));
  });
}

/** The url the "lethe listening" line names. */
function listeningUrl(s: RunningService): string {
  const line = s
    .stderr()
    .split('\n')
    .find((l) => l.includes('lethe listening'));
  return (JSON.parse(line!) as { url: string }).url;
}

function serve(extra: Record<string, string>): Promise<RunningService> {
  return startService(process.execPath, [...CLI, 'serve'], { ...env, HOST: '127.0.0.1', ...extra });
}

beforeAll(async () => {
  dir = tempDir('lethe-tls-');
  makeCa('ca');
  makeLeaf('server', 'ca', 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth');
  makeLeaf('client', 'ca', 'extendedKeyUsage=clientAuth');
  makeCa('rogue-ca');
  makeLeaf('rogue-client', 'rogue-ca', 'extendedKeyUsage=clientAuth');
  db = await createTestDatabase();
  dataDir = tempDir('lethe-tls-data-');
  env = testEnv({ databaseUrl: db.url, dataDir });
  tlsService = await serve({ LETHE_TLS_CERT: file('server.crt'), LETHE_TLS_KEY: file('server.key') });
  tlsUrl = `https://127.0.0.1:${tlsService.port}`;
  mtlsService = await serve({ LETHE_TLS_CERT: file('server.crt'), LETHE_TLS_KEY: file('server.key'), LETHE_TLS_CLIENT_CA: file('ca.crt') });
  mtlsUrl = `https://127.0.0.1:${mtlsService.port}`;
}, TIMEOUT);

afterAll(async () => {
  await tlsService?.stop();
  await mtlsService?.stop();
  await db?.drop();
  for (const d of [dir, dataDir]) if (d) rmSync(d, { recursive: true, force: true });
});

describe('served over HTTPS', () => {
  it('prints the https URL in its startup line', () => {
    expect(listeningUrl(tlsService)).toBe(tlsUrl);
    expect(tlsService.stderr()).toContain('"tls":"HTTPS"');
  });

  it('the facade with the CA leases a key and appends; the writer with the CA appends', { timeout: TIMEOUT }, async () => {
    const lethe = new Lethe({ baseUrl: tlsUrl, tokens: { writer: TOKENS.writer }, tls: { ca: pem('ca.crt') } });
    const lease = await lethe.subjects.lease('user:tls-1');
    expect(lease.leaseId).toMatch(/\S/);
    const { entryId } = await lethe.entries.append('user:tls-1', { text: 'sent over TLS' });
    expect((await lethe.entries.get(entryId)).text).toBe('sent over TLS');

    const writer = new LetheWriter({
      baseUrl: `https://localhost:${tlsService.port}`, // the certificate names localhost too
      token: TOKENS.writer,
      tls: { ca: pem('ca.crt').toString('utf8') },
      store: new FsObjectStore(path.join(dataDir, 'objects'), 'lethe'),
      segmentMaxAgeMs: 10,
    });
    const appended = await writer.append('user:tls-2', { text: 'sealed locally, registered over TLS' });
    await writer.close();
    expect((await lethe.entries.get(appended.entryId)).text).toBe('sealed locally, registered over TLS');
  });

  it('answers with Strict-Transport-Security', async () => {
    const res = await undiciFetch(`${tlsUrl}/healthz`, { dispatcher: new Agent({ connect: { ca: pem('ca.crt') } }) });
    expect(res.status).toBe(200);
    expect(res.headers.get('strict-transport-security')).toBe('max-age=31536000');
  });

  it('a client without the CA, or with another CA, refuses the server with a certificate error', { timeout: TIMEOUT }, async () => {
    for (const tls of [undefined, { ca: pem('rogue-ca.crt') }]) {
      const lethe = new Lethe({ baseUrl: tlsUrl, token: TOKENS.writer, ...(tls ? { tls } : {}) });
      const e = await lethe.subjects.lease('user:tls-3').catch((err: unknown) => err);
      expect(e).toBeInstanceOf(UnreachableError);
      expect((e as UnreachableError).reason).toMatch(/^its TLS certificate was not accepted: .*(certificate|CERT)/);
    }
  });

  it('the CLI verifies it with LETHE_CA_FILE; without it, a plain message and a non-zero exit', { timeout: TIMEOUT }, async () => {
    const cliEnv = { LETHE_URL: tlsUrl, LETHE_TOKENS: `eraser=${TOKENS.eraser}`, LETHE_DATA_DIR: dataDir };
    const ok = await runCli(['erasure', 'list'], { ...cliEnv, LETHE_CA_FILE: file('ca.crt') }, { timeoutMs: 60_000 });
    expect(ok.code, ok.stderr).toBe(0);
    expect(JSON.parse(ok.stdout)).toHaveProperty('erasures');

    for (const extra of [{}, { LETHE_CA_FILE: file('rogue-ca.crt') }] as Array<Record<string, string>>) {
      const refused = await runCli(['erasure', 'list'], { ...cliEnv, ...extra }, { timeoutMs: 60_000 });
      expect(refused.code).not.toBe(0);
      expect(refused.stderr).toMatch(/^lethe: the service at https:\/\/127\.0\.0\.1:\d+ was refused: its TLS certificate was not accepted/);
      expect(refused.stderr).not.toMatch(/\n\s+at /); // no stack
    }

    const unreadable = await runCli(['erasure', 'list'], { ...cliEnv, LETHE_CA_FILE: file('no-such.crt') }, { timeoutMs: 60_000 });
    expect(unreadable.code).toBe(2);
    expect(unreadable.stderr).toContain('LETHE_CA_FILE: cannot read');
  });
});

describe('client certificates required (LETHE_TLS_CLIENT_CA)', () => {
  it('refuses a client without a certificate or with one of another CA; takes one signed by the CA', { timeout: TIMEOUT }, async () => {
    for (const tls of [{ ca: pem('ca.crt') }, { ca: pem('ca.crt'), cert: pem('rogue-client.crt'), key: pem('rogue-client.key') }]) {
      const lethe = new Lethe({ baseUrl: mtlsUrl, token: TOKENS.writer, tls });
      const e = await lethe.subjects.lease('user:mtls-1').catch((err: unknown) => err);
      expect(e).toBeInstanceOf(UnreachableError);
    }
    const lethe = new Lethe({ baseUrl: mtlsUrl, token: TOKENS.writer, tls: { ca: pem('ca.crt'), cert: pem('client.crt'), key: pem('client.key') } });
    const { entryId } = await lethe.entries.append('user:mtls-1', { text: 'mutual TLS' });
    expect((await lethe.entries.get(entryId)).text).toBe('mutual TLS');
    expect(mtlsService.stderr()).toContain('client certificates required');
  });

  it('the CLI presents LETHE_CLIENT_CERT / LETHE_CLIENT_KEY', { timeout: TIMEOUT }, async () => {
    const cliEnv = { LETHE_URL: mtlsUrl, LETHE_TOKENS: `eraser=${TOKENS.eraser}`, LETHE_DATA_DIR: dataDir, LETHE_CA_FILE: file('ca.crt') };
    const without = await runCli(['erasure', 'list'], cliEnv, { timeoutMs: 60_000 });
    expect(without.code).not.toBe(0);
    expect(without.stderr).toMatch(/^lethe: the service at https:/);
    const ok = await runCli(
      ['erasure', 'list'],
      { ...cliEnv, LETHE_CLIENT_CERT: file('client.crt'), LETHE_CLIENT_KEY: file('client.key') },
      { timeoutMs: 60_000 },
    );
    expect(ok.code, ok.stderr).toBe(0);
    expect(JSON.parse(ok.stdout)).toHaveProperty('erasures');
    const half = await runCli(['erasure', 'list'], { ...cliEnv, LETHE_CLIENT_CERT: file('client.crt') }, { timeoutMs: 60_000 });
    expect(half.code).toBe(2);
    expect(half.stderr).toContain('set both LETHE_CLIENT_CERT and LETHE_CLIENT_KEY');
  });
});

describe('production and plain HTTP', () => {
  it('which hosts are loopback', () => {
    for (const h of ['127.0.0.1', '127.8.9.10', 'localhost', 'LOCALHOST', '::1', '[::1]', '0:0:0:0:0:0:0:1', '::ffff:127.0.0.1'])
      expect(isLoopbackHost(h), h).toBe(true);
    for (const h of ['0.0.0.0', '::', '10.0.0.1', '128.0.0.1', 'lethe.example', 'localhost.example']) expect(isLoopbackHost(h), h).toBe(false);
  });

  it('refuses plain HTTP on a non-loopback host in production only, without TLS and without a proxy', () => {
    const base = { production: true, tls: undefined, host: '0.0.0.0', behindTlsProxy: false };
    expect(() => checkPlainHttp(base)).toThrow(ConfigError);
    expect(() => checkPlainHttp({ ...base, production: false })).not.toThrow();
    expect(() => checkPlainHttp({ ...base, behindTlsProxy: true })).not.toThrow();
    expect(() => checkPlainHttp({ ...base, host: '127.0.0.1' })).not.toThrow();
    expect(() => checkPlainHttp({ ...base, tls: { certFile: 'c', keyFile: 'k', clientCaFile: undefined } })).not.toThrow();
  });

  it('LETHE_BEHIND_TLS_PROXY takes true/false, 1/0, yes/no; LETHE_TLS_CLIENT_CA needs a certificate', () => {
    const variables = (extra: Record<string, string>) => {
      try {
        loadConfig({ ...env, ...extra });
        return [];
      } catch (e) {
        return (e as ConfigError).problems.map((p) => p.variable);
      }
    };
    expect(loadConfig({ ...env, LETHE_BEHIND_TLS_PROXY: ' TRUE ' }).behindTlsProxy).toBe(true);
    expect(loadConfig({ ...env, LETHE_BEHIND_TLS_PROXY: 'no' }).behindTlsProxy).toBe(false);
    expect(loadConfig(env).behindTlsProxy).toBe(false);
    expect(loadConfig(env).tls).toBeUndefined();
    expect(variables({ LETHE_BEHIND_TLS_PROXY: 'maybe' })).toEqual(['LETHE_BEHIND_TLS_PROXY']);
    expect(variables({ LETHE_TLS_CLIENT_CA: file('ca.crt') })).toEqual(['LETHE_TLS_CLIENT_CA']);
    expect(variables({ LETHE_TLS_KEY: file('server.key') })).toEqual(['LETHE_TLS_CERT']);
  });

  it('`lethe serve` exits 2 saying why and the two ways out; LETHE_BEHIND_TLS_PROXY=true starts it; loopback plain HTTP starts', {
    timeout: TIMEOUT,
  }, async () => {
    const production = { ...env, NODE_ENV: 'production', PORT: '0' };
    const refused = await runCli(['serve'], { ...production, HOST: '0.0.0.0' }, { timeoutMs: 60_000 });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('HOST: NODE_ENV is production and HOST 0.0.0.0 is not a loopback address');
    expect(refused.stderr).toContain('set LETHE_TLS_CERT and LETHE_TLS_KEY');
    expect(refused.stderr).toContain('LETHE_BEHIND_TLS_PROXY=true');

    const proxied = await startService(process.execPath, [...CLI, 'serve'], { ...production, HOST: '0.0.0.0', LETHE_BEHIND_TLS_PROXY: 'true' });
    try {
      expect(proxied.stderr()).toContain('plain HTTP behind a TLS proxy');
      expect((await fetch(`http://127.0.0.1:${proxied.port}/healthz`)).status).toBe(200);
    } finally {
      await proxied.stop();
    }

    const loopback = await startService(process.execPath, [...CLI, 'serve'], { ...production, HOST: '127.0.0.1' });
    try {
      expect(listeningUrl(loopback)).toBe(`http://127.0.0.1:${loopback.port}`);
      const res = await fetch(`${listeningUrl(loopback)}/healthz`);
      expect(res.status).toBe(200);
      expect(res.headers.get('strict-transport-security')).toBeNull();
    } finally {
      await loopback.stop();
    }
  });
});

describe('the cipher suites', () => {
  let rsaService: RunningService | undefined;
  afterAll(async () => {
    await rsaService?.stop();
  });

  it('with an RSA certificate, a client offering only AES128-SHA (no forward secrecy) is refused; ECDHE-RSA with AES-GCM or ChaCha20 and TLS 1.3 are taken', {
    timeout: TIMEOUT,
  }, async () => {
    makeRsaLeaf('rsa-server', 'ca', 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth');
    rsaService = await serve({ LETHE_TLS_CERT: file('rsa-server.crt'), LETHE_TLS_KEY: file('rsa-server.key') });
    for (const weak of ['AES128-SHA', 'AES256-GCM-SHA384', 'ECDHE-RSA-AES128-SHA', 'ECDHE-RSA-AES128-SHA256']) {
      expect(await handshake(rsaService.port, 'TLSv1.2', weak), weak).toHaveProperty('error');
    }
    for (const strong of ['ECDHE-RSA-AES128-GCM-SHA256', 'ECDHE-RSA-AES256-GCM-SHA384', 'ECDHE-RSA-CHACHA20-POLY1305']) {
      expect(await handshake(rsaService.port, 'TLSv1.2', strong), strong).toMatchObject({ protocol: 'TLSv1.2' });
    }
    expect(await handshake(rsaService.port, 'TLSv1.3', 'TLS_AES_128_GCM_SHA256')).toMatchObject({ protocol: 'TLSv1.3', cipher: 'TLS_AES_128_GCM_SHA256' });
  });

  it('with an ECDSA certificate, a client offering only CBC suites is refused; ECDHE-ECDSA with AES-GCM is taken', { timeout: TIMEOUT }, async () => {
    for (const weak of ['ECDHE-ECDSA-AES128-SHA', 'ECDHE-ECDSA-AES256-SHA384']) {
      expect(await handshake(tlsService.port, 'TLSv1.2', weak), weak).toHaveProperty('error');
    }
    expect(await handshake(tlsService.port, 'TLSv1.2', 'ECDHE-ECDSA-AES128-GCM-SHA256')).toMatchObject({
      protocol: 'TLSv1.2',
      cipher: 'TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256',
    });
    expect(await handshake(tlsService.port, 'TLSv1.3', 'TLS_CHACHA20_POLY1305_SHA256')).toMatchObject({ protocol: 'TLSv1.3' });
  });
});

describe('the TLS files', () => {
  const cases: ReadonlyArray<{ name: string; extra: () => Record<string, string>; says: RegExp }> = [
    {
      name: 'a missing key file',
      extra: () => ({ LETHE_TLS_CERT: file('server.crt'), LETHE_TLS_KEY: file('missing.key') }),
      says: /LETHE_TLS_KEY: cannot read .*missing\.key \(ENOENT\)/,
    },
    {
      name: 'a key of another certificate',
      extra: () => ({ LETHE_TLS_CERT: file('server.crt'), LETHE_TLS_KEY: file('client.key') }),
      says: /LETHE_TLS_KEY: .*client\.key is not the private key of the certificate in LETHE_TLS_CERT/,
    },
    {
      name: 'a certificate file that holds a key',
      extra: () => ({ LETHE_TLS_CERT: file('server.key'), LETHE_TLS_KEY: file('server.key') }),
      says: /LETHE_TLS_CERT: .*server\.key does not hold a PEM certificate/,
    },
    {
      name: 'a certificate without its key',
      extra: () => ({ LETHE_TLS_CERT: file('server.crt') }),
      says: /LETHE_TLS_KEY: set both LETHE_TLS_CERT and LETHE_TLS_KEY, or neither/,
    },
    {
      name: 'an unreadable client CA',
      extra: () => ({ LETHE_TLS_CERT: file('server.crt'), LETHE_TLS_KEY: file('server.key'), LETHE_TLS_CLIENT_CA: file('missing-ca.crt') }),
      says: /LETHE_TLS_CLIENT_CA: cannot read/,
    },
  ];
  for (const c of cases) {
    it.concurrent(`${c.name}: exit 2 naming the variable, never the key`, { timeout: TIMEOUT }, async () => {
      const run = await runCli(['serve'], { ...env, PORT: '0', HOST: '127.0.0.1', ...c.extra() }, { timeoutMs: 60_000 });
      expect(run.code).toBe(2);
      expect(run.stderr).toMatch(c.says);
      expect(run.stderr).not.toContain('PRIVATE KEY');
      expect(run.stderr).not.toMatch(/\n\s+at /);
    });
  }
});
