/**
 * `@lethe/client` as a user gets it: `npm pack` of clients/typescript (its prepack
 * compiles src/client and what it imports into dist), installed from the tarball into
 * an empty project, imported by plain node ESM. Its dependency tree is @noble/* and
 * zod alone — no server package (PGlite, drizzle, hono, minio, pino, postgres …) —
 * and the LangGraph store loads once its optional peer is installed.
 */
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signCertificate } from '../../src/crypto/certificate.js';
import { installInto, NPM_FLAGS, npm, pack, type Packed, run } from '../support/npm.js';
import { tempDir } from '../support/vault.js';

const PACKAGE_DIR = path.resolve('clients/typescript');
const ROOT = JSON.parse(readFileSync('package.json', 'utf8')) as { dependencies: Record<string, string>; devDependencies: Record<string, string> };
const PACKAGE = JSON.parse(readFileSync(path.join(PACKAGE_DIR, 'package.json'), 'utf8')) as {
  dependencies: Record<string, string>;
  peerDependencies: Record<string, string>;
};

/** What the service runs on: none of it may reach a client install. */
const SERVER_PACKAGES = [
  '@electric-sql/pglite',
  'drizzle-orm',
  'hono',
  '@hono/node-server',
  '@hono/zod-openapi',
  'swagger-ui-dist',
  'minio',
  'pino',
  'postgres',
  'prom-client',
  'commander',
  '@dagrejs/dagre',
];

let dir = '';
let app = '';
let tarball = '';
let packed: Packed | undefined;

interface LsTree {
  readonly version?: string;
  readonly dependencies?: Record<string, LsTree>;
}

/** Every installed package in `npm ls --all --json`'s tree (an optional peer not installed is listed as `{}`: not counted). */
function names(tree: LsTree, into = new Set<string>()): Set<string> {
  for (const [name, sub] of Object.entries(tree.dependencies ?? {})) {
    if (sub.version !== undefined) into.add(name);
    names(sub, into);
  }
  return into;
}

/** The package folders under node_modules, `@scope/name` for scoped ones: what is on disk, whatever npm ls says. */
function onDisk(modules: string): string[] {
  return readdirSync(modules)
    .filter((n) => !n.startsWith('.'))
    .flatMap((n) => (n.startsWith('@') ? readdirSync(path.join(modules, n)).map((m) => `${n}/${m}`) : [n]));
}

/** Runs an ES module in the app project (plain node, no loader) and answers its JSON output. */
async function esm(source: string, env: Record<string, string> = {}): Promise<Record<string, unknown>> {
  const file = path.join(app, `check-${Math.random().toString(36).slice(2)}.mjs`);
  writeFileSync(file, source);
  const { stdout } = await run(process.execPath, [file], { cwd: app, env: { PATH: process.env.PATH ?? '', ...env } });
  return JSON.parse(stdout) as Record<string, unknown>;
}

describe('the @lethe/client package', () => {
  beforeAll(async () => {
    dir = tempDir('lethe-pack-');
    ({ tarball, packed } = await pack(PACKAGE_DIR, dir));
    app = path.join(dir, 'app');
    await installInto(app, 'lethe-client-consumer', tarball);
  }, 600_000);

  afterAll(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('ships the compiled client alone: dist (JavaScript and declarations), its package.json, README and LICENSE', () => {
    const files = packed!.files.map((f) => f.path);
    expect(files).toContain('dist/client/index.js');
    expect(files).toContain('dist/client/index.d.ts');
    expect(files).toContain('dist/client/langgraph.js');
    expect(files).toContain('LICENSE');
    expect(
      files.every((f) => f.startsWith('dist/') || ['package.json', 'README.md', 'LICENSE'].includes(f)),
      files.join(', '),
    ).toBe(true);
    // nothing of the service was compiled into it
    for (const server of ['dist/http/', 'dist/db/', 'dist/vault/', 'dist/app/', 'dist/observability/'])
      expect(
        files.some((f) => f.startsWith(server)),
        server,
      ).toBe(false);
  });

  it('depends on @noble/* and zod alone, at the versions the repository uses; minio and LangGraph are optional peers', async () => {
    for (const [name, range] of Object.entries(PACKAGE.dependencies)) expect(range, name).toBe(ROOT.dependencies[name]);
    expect(Object.keys(PACKAGE.dependencies).sort()).toEqual(['@noble/ciphers', '@noble/curves', '@noble/hashes', 'zod']);
    expect(PACKAGE.peerDependencies.minio).toBe(ROOT.dependencies.minio);
    expect(PACKAGE.peerDependencies['@langchain/langgraph-checkpoint']).toBe(ROOT.devDependencies['@langchain/langgraph-checkpoint']);
    const installed = names(JSON.parse(await npm(['ls', '--all', '--json'], app)) as LsTree);
    for (const server of SERVER_PACKAGES) expect(installed.has(server), server).toBe(false);
    const expected = ['@lethe/client', '@noble/ciphers', '@noble/curves', '@noble/hashes', 'zod'];
    expect([...installed].sort()).toEqual(expected);
    expect(onDisk(path.join(app, 'node_modules')).sort()).toEqual(expected);
  });

  it('imports with plain node ESM: the facade, the writer, the errors, and certificate verification that works', async () => {
    const secret = new Uint8Array(32).fill(7);
    const certificate = signCertificate({ erasureId: 'ers_AAAAAAAAAAAAAAAAAAAAAA', status: 'completed' }, secret);
    const result = await esm(
      `import * as client from '@lethe/client';
const lethe = new client.Lethe({ baseUrl: 'http://127.0.0.1:1', token: 'some-token-123' });
const certificate = JSON.parse(process.env.CERT);
const forged = { ...certificate, payload: { ...certificate.payload, status: 'failed' } };
let refused = '';
try { new client.Lethe({ baseUrl: 'ftp://x', token: 'some-token-123' }); } catch (e) { refused = e.code; }
let unreachable = '';
try { await lethe.entries.get('entry_AAAAAAAAAAAAAAAAAAAAAA'); } catch (e) { unreachable = e.name + ':' + e.code; }
console.log(JSON.stringify({
  exports: Object.keys(client).sort(),
  parts: ['entries', 'artifacts', 'erasures', 'certificates', 'subjects', 'backups'].filter((k) => typeof lethe[k] === 'object'),
  valid: client.verifyCertificate(certificate, certificate.publicKey).valid,
  forged: client.verifyCertificate(forged, certificate.publicKey).valid,
  refused,
  unreachable,
}));`,
      { CERT: JSON.stringify(certificate) },
    );
    expect(result.exports).toEqual(
      expect.arrayContaining(['Lethe', 'LetheWriter', 'ServiceClient', 'LetheError', 'verifyCertificate', 'followErasure', 'FsObjectStore', 'zeroize']),
    );
    expect(result.exports).not.toContain('S3ObjectStore');
    expect(result.parts).toEqual(['entries', 'artifacts', 'erasures', 'certificates', 'subjects', 'backups']);
    expect(result).toMatchObject({ valid: true, forged: false, refused: 'validation_failed', unreachable: 'UnreachableError:unavailable' });
  });

  it('@lethe/client/langgraph needs its optional peer, and with it is a LangGraph BaseStore', async () => {
    const without = await esm(
      `try { await import('@lethe/client/langgraph'); console.log(JSON.stringify({ loaded: true })); } catch (e) { console.log(JSON.stringify({ loaded: false, message: String(e.message) })); }`,
    );
    expect(without.loaded).toBe(false);
    expect(String(without.message)).toContain('@langchain/langgraph-checkpoint');
    await npm(
      [
        'install',
        `@langchain/langgraph-checkpoint@${ROOT.devDependencies['@langchain/langgraph-checkpoint']}`,
        `@langchain/core@${ROOT.devDependencies['@langchain/core']}`,
        ...NPM_FLAGS,
      ],
      app,
    );
    const tree = names(JSON.parse(await npm(['ls', '--all', '--json'], app)) as LsTree);
    for (const server of SERVER_PACKAGES) expect(tree.has(server), server).toBe(false);
    const withPeer = await esm(
      `import { BaseStore } from '@langchain/langgraph-checkpoint';
import { Lethe } from '@lethe/client';
import { LetheStore } from '@lethe/client/langgraph';
const store = new LetheStore({ lethe: new Lethe({ baseUrl: 'http://127.0.0.1:1', token: 'some-token-123' }), subjectLabel: 0, subjects: ['alice'] });
console.log(JSON.stringify({ isStore: store instanceof BaseStore, known: store.knownSubjects }));`,
    );
    expect(withPeer).toEqual({ isStore: true, known: ['alice'] });
  });
});
