/**
 * `@lethe/client` as a user gets it: `npm pack` of clients/typescript (its prepack
 * compiles src/client and what it imports twice: dist/esm and dist/cjs), installed from
 * the tarball into empty projects. Its dependency tree is @noble/* and zod alone — no
 * server package (PGlite, drizzle, hono, minio, pino, postgres …) — and the LangGraph
 * store loads once its optional peer is installed. In an ES module project (`import`)
 * and a CommonJS one (`require`) the store is a `BaseStore` of the project's own
 * @langchain/langgraph-checkpoint, the types check under moduleResolution node16,
 * nodenext, bundler and node10, and a put / get / search goes through a real `lethe serve`.
 */
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Lethe } from '../../src/client/index.js';
import { signCertificate } from '../../src/crypto/certificate.js';
import { installInto, npm, pack, type Packed, run } from '../support/npm.js';
import { createTestDatabase, type TestDatabase } from '../support/pg.js';
import { CLI, type RunningService, startService } from '../support/process.js';
import { TOKENS, tempDir, testEnv } from '../support/vault.js';

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

/** The TypeScript compiler of this checkout: what checks a consumer's types (not installed into the projects). */
const TSC = path.resolve('node_modules/typescript/bin/tsc');

let dir = '';
/** An ES module project with the tarball alone installed. */
let app = '';
/** Projects with the tarball, the LangGraph peer and @types/node: one of ES modules, one CommonJS. */
const full = { esm: '', cjs: '' };
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

/** Runs a program in one of the full projects (`.mjs` in the ES module one, `.cjs` in the CommonJS one): its JSON output, and its stderr. */
async function script(project: 'esm' | 'cjs', source: string, env: Record<string, string> = {}): Promise<Record<string, unknown>> {
  const file = path.join(full[project], `run-${Math.random().toString(36).slice(2)}.${project === 'esm' ? 'mjs' : 'cjs'}`);
  writeFileSync(file, source);
  const { stdout, stderr } = await run(process.execPath, [file], { cwd: full[project], env: { PATH: process.env.PATH ?? '', ...env } });
  return { ...(JSON.parse(stdout) as Record<string, unknown>), stderr };
}

interface TypeSetting {
  readonly project: 'esm' | 'cjs';
  readonly module: string;
  readonly moduleResolution: string;
  /** The build whose declarations that setting must resolve. */
  readonly declarations: 'esm' | 'cjs';
  /** skipLibCheck off: the package's declarations are checked too. */
  readonly libCheck: boolean;
}

/** Every moduleResolution a consumer may use, in the project types it applies to (bundler: ES modules). */
const TYPE_SETTINGS: readonly TypeSetting[] = [
  { project: 'esm', module: 'node16', moduleResolution: 'node16', declarations: 'esm', libCheck: false },
  { project: 'esm', module: 'nodenext', moduleResolution: 'nodenext', declarations: 'esm', libCheck: false },
  { project: 'esm', module: 'esnext', moduleResolution: 'bundler', declarations: 'esm', libCheck: false },
  { project: 'esm', module: 'esnext', moduleResolution: 'node10', declarations: 'cjs', libCheck: false },
  { project: 'cjs', module: 'node16', moduleResolution: 'node16', declarations: 'cjs', libCheck: false },
  { project: 'cjs', module: 'nodenext', moduleResolution: 'nodenext', declarations: 'cjs', libCheck: false },
  { project: 'cjs', module: 'commonjs', moduleResolution: 'node10', declarations: 'cjs', libCheck: false },
  // the strictest for the package's own declarations: a CommonJS program's types may not import an ES-module-only package
  { project: 'cjs', module: 'node16', moduleResolution: 'node16', declarations: 'cjs', libCheck: true },
];

/** A consumer's file: the facade, the store typed as LangGraph's BaseStore, an error class and a function. */
const CONSUMER = `import { BaseStore } from '@langchain/langgraph-checkpoint';
import { Lethe, LetheError, verifyCertificate } from '@lethe/client';
import { LetheStore } from '@lethe/client/langgraph';

const lethe = new Lethe({ baseUrl: 'http://127.0.0.1:1', token: 'some-token-123' });
const store: BaseStore = new LetheStore({ lethe, subjectLabel: 0, subjects: ['alice'] });
export const checks: [boolean, boolean, typeof verifyCertificate] = [store instanceof BaseStore, new Error() instanceof LetheError, verifyCertificate];
`;

/**
 * `tsc --noEmit` of CONSUMER under one setting (what `tsc --init` writes: strict,
 * esModuleInterop, skipLibCheck): its errors, and which of the package's declarations it
 * read. With `libCheck`, skipLibCheck is off and the errors are those in the consumer or in
 * @lethe/client's declarations — not those inside other packages' own (@langchain/core's
 * under CommonJS node16, for one), which are theirs.
 */
async function typecheck(setting: TypeSetting): Promise<{ errors: string[]; declarations: string[] }> {
  const cwd = full[setting.project];
  const name = `consumer-${setting.moduleResolution}${setting.libCheck ? '-libcheck' : ''}`;
  writeFileSync(path.join(cwd, `${name}.ts`), CONSUMER);
  const compilerOptions = {
    module: setting.module,
    moduleResolution: setting.moduleResolution,
    target: 'es2022',
    strict: true,
    esModuleInterop: true,
    skipLibCheck: !setting.libCheck,
    types: ['node'],
    noEmit: true,
  };
  writeFileSync(path.join(cwd, `tsconfig.${name}.json`), JSON.stringify({ compilerOptions, files: [`${name}.ts`] }));
  let output: string;
  try {
    // --listFiles: every file the program read, the package's declarations among them (errors, if any, on stdout too)
    ({ stdout: output } = await run(process.execPath, [TSC, '-p', `tsconfig.${name}.json`, '--listFiles'], { cwd }));
  } catch (e) {
    output = (e as { stdout?: string }).stdout ?? String(e);
  }
  const prefix = path.join(cwd, 'node_modules/@lethe/client/');
  return {
    errors: output
      .split('\n')
      .filter((l) => /error TS\d+/.test(l))
      .filter((l) => !setting.libCheck || !l.startsWith('node_modules/') || l.startsWith('node_modules/@lethe/client/')),
    declarations: output
      .split('\n')
      .filter((l) => l.startsWith(prefix))
      .map((l) => l.slice(prefix.length)),
  };
}

describe('the @lethe/client package', () => {
  beforeAll(async () => {
    dir = tempDir('lethe-pack-');
    ({ tarball, packed } = await pack(PACKAGE_DIR, dir));
    app = path.join(dir, 'app');
    full.esm = path.join(dir, 'esm');
    full.cjs = path.join(dir, 'cjs');
    const withPeer = [
      tarball,
      `@langchain/langgraph-checkpoint@${ROOT.devDependencies['@langchain/langgraph-checkpoint']}`,
      `@langchain/core@${ROOT.devDependencies['@langchain/core']}`,
      `@types/node@${ROOT.devDependencies['@types/node']}`,
    ];
    await Promise.all([
      installInto(app, 'lethe-client-consumer', tarball),
      installInto(full.esm, 'lethe-client-esm', withPeer, 'module'),
      installInto(full.cjs, 'lethe-client-cjs', withPeer, 'commonjs'),
    ]);
  }, 600_000);

  afterAll(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('ships the compiled client alone: dist/esm and dist/cjs (JavaScript and declarations), its package.json, README and LICENSE', () => {
    const files = packed!.files.map((f) => f.path);
    for (const build of ['esm', 'cjs'])
      for (const entry of ['index', 'langgraph', 'mem0', 's3'])
        for (const ext of ['js', 'd.ts']) expect(files).toContain(`dist/${build}/client/${entry}.${ext}`);
    expect(files).toContain('dist/cjs/package.json');
    expect(files).toContain('LICENSE');
    expect(
      files.every((f) => f.startsWith('dist/') || ['package.json', 'README.md', 'LICENSE'].includes(f)),
      files.join(', '),
    ).toBe(true);
    // nothing of the service was compiled into it
    for (const build of ['esm', 'cjs'])
      for (const server of ['http/', 'db/', 'vault/', 'app/', 'observability/'])
        expect(
          files.some((f) => f.startsWith(`dist/${build}/${server}`)),
          server,
        ).toBe(false);
    // the CommonJS build says so, whatever the package's type
    expect(JSON.parse(readFileSync(path.join(full.cjs, 'node_modules/@lethe/client/dist/cjs/package.json'), 'utf8'))).toEqual({ type: 'commonjs' });
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

  it('@lethe/client/langgraph needs its optional peer, and adding it adds nothing of the server', async () => {
    const without = await esm(
      `try { await import('@lethe/client/langgraph'); console.log(JSON.stringify({ loaded: true })); } catch (e) { console.log(JSON.stringify({ loaded: false, message: String(e.message) })); }`,
    );
    expect(without.loaded).toBe(false);
    expect(String(without.message)).toContain('@langchain/langgraph-checkpoint');
    const tree = names(JSON.parse(await npm(['ls', '--all', '--json'], full.cjs)) as LsTree);
    expect(tree.has('@langchain/langgraph-checkpoint')).toBe(true);
    for (const server of SERVER_PACKAGES) expect(tree.has(server), server).toBe(false);
  });

  it("ES modules import the ES module build, CommonJS requires the CommonJS one: either way the store is a BaseStore of the project's own @langchain/langgraph-checkpoint", async () => {
    const construct = `const store = new LetheStore({ lethe: new Lethe({ baseUrl: 'http://127.0.0.1:1', token: 'some-token-123' }), subjectLabel: 0, subjects: ['alice'] });`;
    const imported = await script(
      'esm',
      `import { BaseStore } from '@langchain/langgraph-checkpoint';
import { Lethe } from '@lethe/client';
import { LetheStore } from '@lethe/client/langgraph';
${construct}
console.log(JSON.stringify({ isStore: store instanceof BaseStore, known: store.knownSubjects, from: import.meta.resolve('@lethe/client/langgraph'), base: import.meta.resolve('@langchain/langgraph-checkpoint') }));`,
    );
    const required = await script(
      'cjs',
      `const { BaseStore } = require('@langchain/langgraph-checkpoint');
const { Lethe } = require('@lethe/client');
const { LetheStore } = require('@lethe/client/langgraph');
${construct}
console.log(JSON.stringify({ isStore: store instanceof BaseStore, known: store.knownSubjects, from: require.resolve('@lethe/client/langgraph'), base: require.resolve('@langchain/langgraph-checkpoint') }));`,
    );
    expect(imported).toMatchObject({ isStore: true, known: ['alice'], stderr: '' });
    expect(String(imported.from)).toMatch(/\/node_modules\/@lethe\/client\/dist\/esm\/client\/langgraph\.js$/);
    expect(String(imported.base)).toMatch(/\/@langchain\/langgraph-checkpoint\/dist\/index\.js$/);
    // the CommonJS build loads the ES-module-only @noble/* with require(): no warning on the way
    expect(required).toMatchObject({ isStore: true, known: ['alice'], stderr: '' });
    expect(String(required.from)).toMatch(/\/node_modules\/@lethe\/client\/dist\/cjs\/client\/langgraph\.js$/);
    expect(String(required.base)).toMatch(/\/@langchain\/langgraph-checkpoint\/dist\/index\.cjs$/);
  });

  it.for(TYPE_SETTINGS)(
    'types check with moduleResolution $moduleResolution (module $module) in the $project project, from dist/$declarations (its declarations checked too: $libCheck)',
    async (setting) => {
      const { errors, declarations } = await typecheck(setting);
      expect(errors).toEqual([]);
      // the declarations of the build that project loads at run time (node10 has no exports: typesVersions sends it to dist/cjs)
      expect(declarations).toEqual(
        expect.arrayContaining([`dist/${setting.declarations}/client/index.d.ts`, `dist/${setting.declarations}/client/langgraph.d.ts`]),
      );
      expect(declarations.filter((d) => !d.startsWith(`dist/${setting.declarations}/`))).toEqual([]);
    },
  );

  describe('against a real lethe serve', () => {
    let db: TestDatabase | undefined;
    let service: RunningService | undefined;
    const dataDir = tempDir('lethe-pack-serve-');

    beforeAll(async () => {
      db = await createTestDatabase('lethe_pkg');
      service = await startService(process.execPath, [...CLI, 'serve'], { ...testEnv({ databaseUrl: db.url, dataDir }), HOST: '127.0.0.1' });
    }, 180_000);
    afterAll(async () => {
      await service?.stop();
      await db?.drop();
      rmSync(dataDir, { recursive: true, force: true });
    });

    it.for(['esm', 'cjs'] as const)(
      'from the %s project: one put, get and search through LetheStore round-trip the item, sealed in the vault',
      async (project) => {
        const subject = `pkg-${project}`;
        const head =
          project === 'esm'
            ? `import { BaseStore } from '@langchain/langgraph-checkpoint';
import { Lethe } from '@lethe/client';
import { LetheStore } from '@lethe/client/langgraph';`
            : `const { BaseStore } = require('@langchain/langgraph-checkpoint');
const { Lethe } = require('@lethe/client');
const { LetheStore } = require('@lethe/client/langgraph');`;
        const result = await script(
          project,
          `${head}
(async () => {
  const lethe = new Lethe({ baseUrl: process.env.LETHE_URL, tokens: { writer: process.env.WRITER_TOKEN, eraser: process.env.ERASER_TOKEN } });
  const store = new LetheStore({ lethe, subjectLabel: 0 });
  const namespace = [process.env.SUBJECT, 'memories'];
  await store.put(namespace, 'seat', { text: 'prefers the window seat on long flights', rank: 2 });
  const got = await store.get(namespace, 'seat');
  const hits = await store.search([process.env.SUBJECT], { query: 'window seat' });
  console.log(JSON.stringify({
    isStore: store instanceof BaseStore,
    got: got && { namespace: got.namespace, key: got.key, value: got.value },
    hits: hits.map((h) => ({ namespace: h.namespace, key: h.key, value: h.value, score: typeof h.score })),
  }));
})().catch((e) => { console.error(e); process.exit(1); });`,
          { LETHE_URL: service!.url, WRITER_TOKEN: TOKENS.writer, ERASER_TOKEN: TOKENS.eraser, SUBJECT: subject },
        );
        const item = { namespace: [subject, 'memories'], key: 'seat', value: { text: 'prefers the window seat on long flights', rank: 2 } };
        expect(result).toMatchObject({ isStore: true, got: item, hits: [{ ...item, score: 'number' }], stderr: '' });
        // the vault holds it: one entry of the subject, the item inside its sealed metadata
        const entries = [];
        for await (const e of new Lethe({ baseUrl: service!.url, token: TOKENS.admin }).entries.list(subject)) entries.push(e);
        expect(entries).toHaveLength(1);
        expect(entries[0]!.metadata).toMatchObject({ langgraph: { key: 'seat', namespace: item.namespace, value: item.value } });
      },
    );
  });
});
