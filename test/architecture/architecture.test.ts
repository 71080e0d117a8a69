import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { check, format, README, readTree, REPO, SCHEMA, SCHEMA_DIR, SERVICES, type Violation, warnings } from './check.js';
import { ALLOWED_CYCLES, ALLOWED_LONG_FILES, ALLOWED_LONG_FUNCTIONS, MODULES } from './rules.js';
import type { ShapeAllowances } from './shape.js';

// The real ownership table and schema (and db's client, the import its README's "May import" line names);
// each test adds the files it needs.
const DB_CLIENT = 'src/db/client.ts';
const base = {
  [README]: readFileSync(path.join(REPO, README), 'utf8'),
  [SCHEMA]: readFileSync(path.join(REPO, SCHEMA), 'utf8'),
  // the tables schema.ts gathers, one file per owning module
  ...Object.fromEntries(readdirSync(path.join(REPO, SCHEMA_DIR)).map((f) => [`${SCHEMA_DIR}${f}`, readFileSync(path.join(REPO, SCHEMA_DIR, f), 'utf8')])),
  [DB_CLIENT]: readFileSync(path.join(REPO, DB_CLIENT), 'utf8'),
  [SERVICES]: readFileSync(path.join(REPO, SERVICES), 'utf8'),
};
const ALLOWED: ShapeAllowances = { longFiles: ALLOWED_LONG_FILES, longFunctions: ALLOWED_LONG_FUNCTIONS, cycles: ALLOWED_CYCLES };
const violations = (files: Record<string, string>, exceptions = {}, allowed = ALLOWED) =>
  check({ ...base, ...files }, { modules: MODULES, exceptions, allowed });
const importViolation = (file: string, line: number, message: string): Violation => ({ file, line, rule: 'import', message });
const writeViolation = (file: string, line: number, message: string): Violation => ({ file, line, rule: 'table-write', message });
const readViolation = (file: string, module: string, line: number, table: string, how: string, owner: string): Violation => ({
  file,
  line,
  rule: 'table-read',
  message: `${module} reads ${table} (${how}), which ${owner} owns, and ${README} does not list it under "Reads across a wall": ask the owner's service, or list the read with its reason`,
});
const readmeViolation = (file: string, line: number, message: string): Violation => ({ file, line, rule: 'readme-imports', message });

describe('the source tree', () => {
  it('has no architecture violations', () => {
    // Fails until the restructure lands: the list is the to-do list.
    expect(check(readTree()).map(format)).toEqual([]);
  });
});

describe('imports', () => {
  it('the base (README and schema alone) is clean', () => {
    expect(violations({})).toEqual([]);
  });

  it('flags an upward import', () => {
    const keys = `import { LetheError } from '../errors.js';\nimport { openApp } from '../app/open.js';\n`;
    expect(violations({ 'src/vault/keys.ts': keys })).toEqual([
      importViolation('src/vault/keys.ts', 2, "vault may not import app: '../app/open.js' (src/app/open.ts)"),
    ]);
  });

  it("flags an engine file importing a module's erasable (its queries); the composition root may", () => {
    const step = "import { logErasable } from '../../log/erasable.js';\n";
    const root = "import { logErasable } from '../log/erasable.js';\n";
    expect(violations({ 'src/erasure/steps/destroy.ts': step, 'src/app/wire.ts': root })).toEqual([
      importViolation(
        'src/erasure/steps/destroy.ts',
        1,
        "erasure may not import log's erasable (src/log/erasable.ts): the composition root (src/app) hands erasables to the engine",
      ),
    ]);
  });

  it('flags a route importing the database, across a multi-line import with comments', () => {
    const route = [
      "import { Hono } from 'hono';",
      'import {',
      '  // the handle',
      '  type Db, /* and a helper */',
      '  queryRows,',
      "} from '../../db/client.js';",
      "import { openVault } from '../../vault/vault.js';",
    ].join('\n');
    expect(violations({ 'src/http/routes/keys.ts': route })).toEqual([
      importViolation('src/http/routes/keys.ts', 2, "http may not import db: '../../db/client.js' (src/db/client.ts)"),
    ]);
  });

  it('flags dynamic imports and typeof import() types', () => {
    const src = [
      "type Vault = typeof import('../vault/vault.js').Vault;",
      'export async function load() {',
      "  return (await import(\n    '../vault/vault.js'\n  )).openVault;",
      '}',
    ].join('\n');
    expect(violations({ 'src/crypto/lazy.ts': src })).toEqual([
      importViolation('src/crypto/lazy.ts', 1, "crypto may not import vault: '../vault/vault.js' (src/vault/vault.ts)"),
      importViolation('src/crypto/lazy.ts', 3, "crypto may not import vault: '../vault/vault.js' (src/vault/vault.ts)"),
    ]);
  });

  it('flags re-exports and side-effect imports', () => {
    const src = ["export { openVault } from '../vault/vault.js';", "export * as frames from '../log/frame.js';", "import '../app/boot.js';"].join('\n');
    expect(violations({ 'src/storage/index.ts': src })).toEqual([
      importViolation('src/storage/index.ts', 1, "storage may not import vault: '../vault/vault.js' (src/vault/vault.ts)"),
      importViolation('src/storage/index.ts', 2, "storage may not import log: '../log/frame.js' (src/log/frame.ts)"),
      importViolation('src/storage/index.ts', 3, "storage may not import app: '../app/boot.js' (src/app/boot.ts)"),
    ]);
  });

  it('lets the client import only its listed files from other modules', () => {
    const src = [
      "import { encodeFrame } from '../log/frame.js';",
      "import type { ErasureView } from '../erasure/view.js';",
      "import { LogService } from '../log/service.js';",
      "import { sealed } from '../crypto/envelope.js';",
    ].join('\n');
    expect(violations({ 'src/client/index.ts': src })).toEqual([
      importViolation(
        'src/client/index.ts',
        3,
        "client may not import log: '../log/service.js' (src/log/service.ts) (nor is src/log/service.ts one of its allowed files)",
      ),
    ]);
  });

  it('only cli imports app, and cli never imports db', () => {
    const cli = "import { openApp } from '../app/open.js';\nimport { openDb } from '../db/client.js';\n";
    const app = "import { openDb } from '../db/client.js';\nimport { main } from '../cli/main.js';\n";
    expect(violations({ 'src/cli/main.ts': cli, 'src/app/open.ts': app })).toEqual([
      { file: 'src/app/open.ts', line: 1, rule: 'cycle', message: 'import cycle among src/app/open.ts, src/cli/main.ts' },
      importViolation('src/app/open.ts', 2, "app may not import cli: '../cli/main.js' (src/cli/main.ts)"),
      importViolation('src/cli/main.ts', 2, "cli may not import db: '../db/client.js' (src/db/client.ts)"),
    ]);
  });

  it('flags a module missing from the rules and an import from outside src/', () => {
    expect(violations({ 'src/vectors2/index.ts': 'export const x = 1;\n', 'src/util.ts': "import { x } from '../test/support/db.js';\n" })).toEqual([
      importViolation('src/util.ts', 1, 'module util is not in the rules (test/architecture/rules.ts): place it before using it'),
      importViolation('src/vectors2/index.ts', 1, 'module vectors2 is not in the rules (test/architecture/rules.ts): place it before using it'),
    ]);
    expect(violations({ 'src/vault/x.ts': "import data from '../../package.json' with { type: 'json' };\n" })).toEqual([
      importViolation('src/vault/x.ts', 1, "'../../package.json' resolves outside src/ (package.json)"),
    ]);
  });

  it('does not flag packages, built-ins, allowed type imports, the own module, or text that only looks like an import', () => {
    const src = [
      "import { readFile } from 'node:fs/promises';",
      "import { eq } from 'drizzle-orm';",
      "import type { Db } from '../db/client.js';",
      "import { LetheError } from '../errors.js';",
      "import { SubjectCache } from './cache.js';",
      "import { newId } from '../ids.js';",
      "// import { openApp } from '../app/open.js';",
      "/* export * from '../http/app.js'; */",
      'const hint = "import(\'../app/open.js\')";',
      "const doc = `export { x } from '../cli/main.js'`;",
      "const re = /'|\\/\\*/; // a regex holding a quote and a comment opener",
      'const later = \'import x from "../app/open.js"\';',
    ].join('\n');
    expect(violations({ 'src/vault/keys.ts': src })).toEqual([]);
  });
});

describe('table writes', () => {
  it('flags a raw-SQL update of another module’s table, with its line', () => {
    const src = [
      "import { sql } from 'drizzle-orm';",
      'export async function reserve(tx: any, keyId: string, count: number) {',
      '  await tx.execute(',
      '    sql`update subject_keys set next_seq = next_seq + ${count}, updated_at = now()',
      '        where key_id = ${keyId}`,',
      '  );',
      '}',
    ].join('\n');
    expect(violations({ 'src/log/service.ts': src })).toEqual([
      writeViolation('src/log/service.ts', 4, "log writes subject_keys (SQL update), which vault owns: call the owner's service"),
    ]);
  });

  it('flags drizzle builder writes of other modules’ tables', () => {
    const src = [
      'export async function meddle(tx: any, schema: any) {',
      "  await tx.insert(subjectKeys).values({ keyId: 'k' });",
      '  await tx',
      '    .update(embeddings)',
      "    .set({ model: 'm' });",
      '  await tx.delete( schema.artifactKeys ).where(1);',
      '}',
    ].join('\n');
    expect(violations({ 'src/search/meddle.ts': src })).toEqual([
      writeViolation('src/search/meddle.ts', 2, "search writes subject_keys (drizzle .insert(subjectKeys)), which vault owns: call the owner's service"),
      writeViolation('src/search/meddle.ts', 4, "search writes embeddings (drizzle .update(embeddings)), which vectors owns: call the owner's service"),
      writeViolation('src/search/meddle.ts', 6, "search writes artifact_keys (drizzle .delete(artifactKeys)), which vault owns: call the owner's service"),
    ]);
  });

  it('flags an insert inside a CTE, an interpolated drizzle table and a truncate list', () => {
    const src = [
      'const q = sql`with entry as (',
      '    insert into log_entries (entry_id) values (${id}) returning entry_id',
      '  )',
      '  INSERT INTO "embeddings" (record_id) select entry_id from entry`;',
      'const r = sql`update ${subjectKeys} as sk set state = ${s}`;',
      'const t = sql`truncate table audit_log, public.audit_head restart identity`;',
    ].join('\n');
    expect(violations({ 'src/log/service.ts': src })).toEqual([
      writeViolation('src/log/service.ts', 4, "log writes embeddings (SQL insert into), which vectors owns: call the owner's service"),
      writeViolation('src/log/service.ts', 5, "log writes subject_keys (SQL update), which vault owns: call the owner's service"),
      writeViolation('src/log/service.ts', 6, "log writes audit_head (SQL truncate), which vault owns: call the owner's service"),
      writeViolation('src/log/service.ts', 6, "log writes audit_log (SQL truncate), which vault owns: call the owner's service"),
    ]);
  });

  it('does not flag reads, row locks, upserts of the own table, owners, comments or other .update() calls', () => {
    const log = [
      '/** Appends entries: update the manifest, then insert into embeddings via the vectors service. */',
      'const a = sql`select key_id, next_seq from subject_keys where key_id = ${k} for update`;',
      'const b = sql`select * from subject_keys sk where sk.epoch = ${e} for no key update skip locked`;',
      'const c = sql`select 1 from subject_keys for update of subject_keys`;',
      "const d = await tx.select().from(subjectKeys).where(eq(subjectKeys.keyId, k)).for('update');",
      'const e = sql`insert into log_entries (entry_id) values (${id})',
      '  on conflict (entry_id) do update set segment = excluded.segment`;',
      "const f = createHash('sha256').update(bytes).digest();",
      'cache.delete(keyId); seen.delete(embeddingId);',
      '// delete from subject_keys where … (the vault does this)',
      "const msg = 'could not update the manifest';",
    ].join('\n');
    const vault = 'await tx.insert(subjectKeys).values(row);\nawait tx.execute(sql`delete from destruction_ledger where key_id = ${k}`);\n';
    const vectors =
      'await exec.execute(sql`insert into embeddings (record_id) values (${id}) on conflict (record_id) do update set sealed = excluded.sealed`);\n';
    const schema = base[SCHEMA] + '\n// a writer-looking line in schema.ts is not a write: update subject_keys set x = 1\n';
    expect(violations({ 'src/log/service.ts': log, 'src/vault/keys.ts': vault, 'src/vectors/store.ts': vectors, [SCHEMA]: schema })).toEqual([]);
  });

  it('allows a write listed in the exceptions', () => {
    const src = 'await tx.execute(sql`delete from audit_log`);\nawait tx.execute(sql`delete from epochs`);\n';
    const exceptions = { 'src/backups/service.ts': { tables: ['audit_log'], reason: 'restore replaces the audit chain' } };
    expect(violations({ 'src/backups/service.ts': src }, exceptions)).toEqual([
      writeViolation('src/backups/service.ts', 2, "backups writes epochs (SQL delete from), which vault owns: call the owner's service"),
    ]);
  });
});

describe('the ownership table', () => {
  const schema = "export const subjectKeys = pgTable(\n  'subject_keys',\n  {},\n);\nexport const orphans = pgTable('orphans', {});\n";
  const readme = [
    '| table | owner | what it holds |',
    '|---|---|---|',
    '| `subject_keys` | vault | keys |',
    '| `ghosts` | vault | nothing |',
    '| `subject_keys_extra` | nobody | x |',
    '',
    "May import: nothing of lethe's.",
  ].join('\n');

  it('flags a README table schema.ts lacks, a schema table the README lacks, and an owner that is no module', () => {
    expect(check({ [README]: readme, [SCHEMA]: schema })).toEqual([
      writeViolation(README, 4, `table ghosts is not defined in ${SCHEMA}`),
      writeViolation(README, 5, `table subject_keys_extra is not defined in ${SCHEMA}`),
      writeViolation(README, 5, 'table subject_keys_extra: owner nobody is not a module in the rules'),
      writeViolation(SCHEMA, 5, `table orphans has no owner in ${README}`),
    ]);
  });

  it('flags a write to a table nobody owns', () => {
    expect(check({ [README]: readme, [SCHEMA]: schema, 'src/vault/x.ts': 'await tx.insert(orphans).values({});\n' })).toContainEqual(
      writeViolation('src/vault/x.ts', 1, `vault writes orphans (drizzle .insert(orphans)), which has no owner in ${README}: call the owner's service`),
    );
  });
});

describe('table reads across a wall', () => {
  it('flags a read of another module’s table that src/db/README.md does not list: raw SQL and drizzle', () => {
    const src = [
      "import { sql } from 'drizzle-orm';",
      'const a = sql`select key_id from destruction_ledger where key_id = ${k}`;',
      'const b = await tx.select().from(subjectKeys).where(eq(subjectKeys.keyId, k));',
      'const c = await tx.select().from(artifacts).innerJoin(logEntries, eq(artifacts.id, logEntries.entryId));',
      'const d = sql`select e.entry_id from ${logEntries} e join "provenance" p on p.source_id = e.entry_id`;',
    ].join('\n');
    expect(violations({ 'src/search/meddle.ts': src })).toEqual([
      readViolation('src/search/meddle.ts', 'search', 2, 'destruction_ledger', 'SQL from', 'vault'),
      readViolation('src/search/meddle.ts', 'search', 3, 'subject_keys', 'drizzle .from(subjectKeys)', 'vault'),
      readViolation('src/search/meddle.ts', 'search', 4, 'artifacts', 'drizzle .from(artifacts)', 'artifacts'),
      readViolation('src/search/meddle.ts', 'search', 4, 'log_entries', 'drizzle .innerJoin(logEntries)', 'log'),
      readViolation('src/search/meddle.ts', 'search', 5, 'log_entries', 'SQL from', 'log'),
      readViolation('src/search/meddle.ts', 'search', 5, 'provenance', 'SQL join', 'artifacts'),
    ]);
  });

  it('a read the README lists, the owner’s own reads, deletes and prose are not flagged; an unlisted read is', () => {
    const vectors = 'const a = sql`select 1 from embeddings e where not exists (select 1 from destruction_ledger d where d.key_id = e.key_id)`;\n';
    const vault = 'const b = sql`select key_id from destruction_ledger`;\nconst c = sql`delete from subject_keys where key_id = ${k}`;\n';
    const prose = "const d = `${n} candidates from provenance; ${m} from the index`;\nconst e = 'read from artifacts';\n";
    expect(violations({ 'src/vectors/store.ts': vectors, 'src/vault/keys.ts': vault, 'src/erasure/report.ts': prose })).toEqual([]);
    // the same read, unlisted: the README without its `log` → `destruction_ledger` bullet
    const readme = base[README].replace(/^- `log` reads `destruction_ledger`[\s\S]*?(?=^- )/m, '');
    expect(readme).not.toEqual(base[README]);
    const log = 'const moved = sql`select key_id from destruction_ledger where key_id in (${ids})`;\n';
    expect(violations({ [README]: readme, 'src/log/registration.ts': log })).toEqual([
      readViolation('src/log/registration.ts', 'log', 1, 'destruction_ledger', 'SQL from', 'vault'),
    ]);
    expect(violations({ 'src/log/registration.ts': log })).toEqual([]);
  });
});

describe('the modules’ READMEs', () => {
  it('flags a module imported but not in the "May import" line, and one listed but not imported', () => {
    const storageReadme = '# src/storage\n\nThe object store.\n\nMay import: errors.\n';
    const storage = "import { LetheError } from '../errors.js';\nimport { createLogger } from '../observability/logger.js';\n";
    const vaultReadme = '# src/vault\n\nMay import: crypto, db, errors,\nids (and nothing else).\n';
    const vault = "import { LetheError } from '../errors.js';\nimport { newId } from '../ids.js';\nimport type { Db } from '../db/client.js';\n";
    expect(
      violations({ 'src/storage/README.md': storageReadme, 'src/storage/fs.ts': storage, 'src/vault/README.md': vaultReadme, 'src/vault/keys.ts': vault }),
    ).toEqual([
      readmeViolation('src/storage/README.md', 5, 'storage imports observability, not in its "May import" line'),
      readmeViolation('src/vault/README.md', 3, '"May import" lists crypto, which vault does not import'),
    ]);
  });

  it('flags a README without the line, and an "every module except" line that differs from the rules', () => {
    const app = "import { openVault } from '../vault/vault.js';\n";
    expect(
      violations({
        'src/app/README.md': '# src/app\n\nMay import: every module except `cli`.\n',
        'src/app/open.ts': app,
        'src/search/README.md': '# src/search\n\nNo word on imports.\n',
        'src/search/index.ts': "import { LetheError } from '../errors.js';\n",
      }),
    ).toEqual([
      readmeViolation('src/app/README.md', 3, 'says every module except cli; test/architecture/rules.ts says every module except cli, client'),
      readmeViolation('src/search/README.md', 1, 'no "May import:" line (the modules search imports: errors)'),
    ]);
    expect(violations({ 'src/app/README.md': '# src/app\n\nMay import: every module except `cli` and `client`.\n', 'src/app/open.ts': app })).toEqual([]);
    expect(
      violations({ 'src/observability/README.md': "May import: nothing of lethe's.\n", 'src/observability/log.ts': "import pino from 'pino';\n" }),
    ).toEqual([]);
  });
});

describe('the shape of src/', () => {
  const lines = (n: number, text = (k: number) => `export const x${k} = ${k};`) => `${Array.from({ length: n }, (_, k) => text(k)).join('\n')}\n`;
  // a function of `total` lines, head and closing brace included
  const fn = (name: string, total: number) => `export function ${name}(): number {\n${lines(total - 3, (k) => `  const y${k} = ${k};`)}  return 0;\n}\n`;

  it('flags a file over 400 lines, and not one of 400', () => {
    expect(violations({ 'src/vault/long.ts': lines(401), 'src/vault/full.ts': lines(400) })).toEqual([
      { file: 'src/vault/long.ts', line: 1, rule: 'file-length', message: '401 lines (at most 400)' },
    ]);
  });

  it('flags a function over 120 lines — declarations, methods and arrows — and not one of 120', () => {
    const method = `export class Big {\n  async grow(n: number): Promise<{ a: number }> {\n${lines(120, (k) => `    n += ${k};`)}    return { a: n };\n  }\n}\n`;
    const arrow = `export const handler = async (c: { json: (x: unknown) => void }) => {\n${lines(119, (k) => `  c.json(${k});`)}};\n`;
    expect(
      violations({ 'src/vault/a.ts': fn('tooLong', 121), 'src/vault/b.ts': fn('justRight', 120), 'src/vault/c.ts': method, 'src/vault/d.ts': arrow }),
    ).toEqual([
      { file: 'src/vault/a.ts', line: 1, rule: 'function-length', message: 'tooLong: 121 lines (at most 120)' },
      { file: 'src/vault/c.ts', line: 2, rule: 'function-length', message: 'grow: 123 lines (at most 120)' },
      { file: 'src/vault/d.ts', line: 1, rule: 'function-length', message: 'handler: 121 lines (at most 120)' },
    ]);
  });

  it('flags an import cycle inside a module, type imports included', () => {
    const files = {
      'src/log/a.ts': "import { b } from './b.js';\nexport const a = 1;\n",
      'src/log/b.ts': "import type { C } from './c.js';\nexport const b = 2;\n",
      'src/log/c.ts': "import { a } from './a.js';\nexport type C = number;\n",
      'src/log/d.ts': "import { a } from './a.js';\n",
    };
    expect(violations(files)).toEqual([
      { file: 'src/log/a.ts', line: 1, rule: 'cycle', message: 'import cycle among src/log/a.ts, src/log/b.ts, src/log/c.ts' },
    ]);
  });

  it('reports the allowed offenders as warnings, and a new one as a violation', () => {
    const allowed: ShapeAllowances = {
      longFiles: [SCHEMA, 'src/vault/long.ts'],
      longFunctions: ['src/vault/a.ts#tooLong'],
      cycles: [['src/log/a.ts', 'src/log/b.ts', 'src/log/z.ts']],
    };
    const files = {
      'src/vault/long.ts': lines(401),
      'src/vault/a.ts': fn('tooLong', 121),
      'src/vault/e.ts': fn('alsoLong', 130),
      'src/log/a.ts': "import { b } from './b.js';\n",
      'src/log/b.ts': "import { a } from './a.js';\n",
    };
    expect(violations(files, {}, allowed)).toEqual([
      { file: 'src/vault/e.ts', line: 1, rule: 'function-length', message: 'alsoLong: 130 lines (at most 120)' },
    ]);
    expect(warnings({ ...base, ...files }, { allowed }).map(format)).toEqual([
      'src/log/a.ts:1 [cycle] import cycle among src/log/a.ts, src/log/b.ts',
      'src/vault/a.ts:1 [function-length] tooLong: 121 lines (at most 120)',
      'src/vault/long.ts:1 [file-length] 401 lines (at most 400)',
    ]);
  });
});

describe('route files', () => {
  const routeViolation = (file: string, line: number, message: string): Violation => ({ file, line, rule: 'route-services', message });
  const FILE = 'src/http/routes/erasures/forget-entry.ts';
  /** A route file in the house style, with `uses` as its Uses body and `body` as its handler. */
  const route = (uses: string, body: string, extraImports = '') =>
    [
      "import { createRoute, type OpenAPIHono } from '@hono/zod-openapi';",
      "import type { Services } from '../../services.js';",
      ...(extraImports ? [extraImports] : []),
      'export interface Uses {',
      uses,
      '}',
      "export const route = createRoute({ operationId: 'forgetEntry', method: 'delete', path: '/v1/entries/{entryId}', responses: {} });",
      'export function register(app: OpenAPIHono, services: Uses): void {',
      `  app.openapi(route, async (c) => ${body});`,
      '}',
    ].join('\n');

  it('the house style is clean: what it uses, it declares', () => {
    const uses = "  readonly erasures: Pick<Services['erasures'], 'forgetEntry'>;\n  readonly principals: Pick<Services['principals'], 'name'>;";
    const src = route(
      uses,
      "c.json(await services.erasures.forgetEntry(c.req.param('entryId'), services.principals.name(c)))",
      "import type { ErasureEngine } from '../../../erasure/engine.js';",
    );
    expect(violations({ [FILE]: src })).toEqual([]);
  });

  it('flags a planted use of a service the route does not declare', () => {
    const uses = "  readonly erasures: Pick<Services['erasures'], 'forgetEntry'>;";
    const src = route(uses, "c.json(await services.keys.destroy(c.req.param('entryId')))");
    expect(violations({ [FILE]: src })).toEqual([routeViolation(FILE, 8, 'uses services.keys without declaring keys in Uses')]);
  });

  it('flags a planted import of an undeclared service, a destructured one, the whole Services object and a name that is no service', () => {
    const uses = "  readonly erasures: Pick<Services['erasures'], 'forgetEntry'>;\n  readonly vault: Services;";
    const src = route(
      uses,
      '{ const { erasures, backups } = services; return c.json(await erasures.forgetEntry(backups)); }',
      "import { KeyService } from '../../../vault/keys.js';",
    );
    expect(violations({ [FILE]: src })).toEqual([
      routeViolation(FILE, 3, 'imports src/vault/keys.ts, the keys service, without declaring it in Uses'),
      routeViolation(FILE, 4, `Uses declares vault, which is not a service of ${SERVICES}`),
      routeViolation(FILE, 6, "takes the whole Services object: declare only what it uses (Services['<name>'] or a Pick of it)"),
      routeViolation(FILE, 10, 'uses services.backups without declaring backups in Uses'),
    ]);
  });

  it('flags a route file that declares no Uses; files without createRoute (indexes, shared schemas) are not route files', () => {
    const bare = [
      "import { createRoute } from '@hono/zod-openapi';",
      "export const route = createRoute({ operationId: 'getX', method: 'get', path: '/x', responses: {} });",
    ].join('\n');
    const index =
      "import * as forgetEntry from './forget-entry.js';\nexport function registerAll(app, services) { forgetEntry.register(app, services); services.anything; }\n";
    expect(violations({ [FILE]: bare, 'src/http/routes/erasures/index.ts': index })).toEqual([
      routeViolation(FILE, 2, 'a route file declares the services it uses: export interface Uses { readonly <service>: … }'),
    ]);
  });
});
