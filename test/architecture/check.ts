/**
 * The architecture check: no module imports "upward" (test/architecture/rules.ts); each
 * module README's "May import" line is what its files import (readme.ts); no module
 * writes a table it does not own, nor reads one unless src/db/README.md lists the read
 * ("Reads across a wall"); and no new long file, long function or import cycle in src/
 * (shape.ts; today's are listed in rules.ts and reported as warnings); a route file uses only
 * the services it declares (its `Uses` type; the services are src/http/services.ts's).
 *
 * `check()` is pure: it takes every .ts file and README.md under src/ as repo-relative
 * path → text and returns the violations (`warnings()`: the allowed offenders).
 * `readTree()` reads that map from disk. Run directly, it prints the warnings and the
 * violations, and exits 1 if there are violations:
 *
 *   node --import tsx test/architecture/check.ts
 *
 * No parser: comments are blanked (outside strings) and careful regexes do the rest.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { checkReadmes } from './readme.js';
import { ALLOWED_CYCLES, ALLOWED_LONG_FILES, ALLOWED_LONG_FUNCTIONS, MODULES, type ModuleRule, WRITE_EXCEPTIONS } from './rules.js';
import { checkShape, type ShapeAllowances } from './shape.js';
import { importsOf, lex, lineAt, moduleOf, resolveSpecifier, type Violation } from './source.js';

export { importsOf, lex, moduleOf, resolveSpecifier, type Violation } from './source.js';

export interface Rules {
  readonly modules: Readonly<Record<string, ModuleRule>>;
  readonly exceptions: Readonly<Record<string, { readonly tables: readonly string[]; readonly reason: string }>>;
  /** Today's long files, long functions and import cycles (rules.ts); default: those lists. */
  readonly allowed?: ShapeAllowances;
}

const ALLOWED: ShapeAllowances = { longFiles: ALLOWED_LONG_FILES, longFunctions: ALLOWED_LONG_FUNCTIONS, cycles: ALLOWED_CYCLES };

export const README = 'src/db/README.md';
export const SCHEMA = 'src/db/schema.ts';
/** The folder of the tables schema.ts gathers, one file per owning module. */
export const SCHEMA_DIR = 'src/db/schema/';

const isSchemaFile = (file: string): boolean => file === SCHEMA || (file.startsWith(SCHEMA_DIR) && file.endsWith('.ts'));
export const SERVICES = 'src/http/services.ts';
export const ROUTES = 'src/http/routes/';

function checkImports(file: string, src: string, files: Readonly<Record<string, string>>, rules: Rules): Violation[] {
  const own = moduleOf(file);
  if (own === undefined) return [];
  const rule = rules.modules[own];
  if (!rule) return [{ file, line: 1, rule: 'import', message: `module ${own} is not in the rules (test/architecture/rules.ts): place it before using it` }];
  const allowed = Array.isArray(rule.imports)
    ? new Set<string>(rule.imports)
    : new Set(Object.keys(rules.modules).filter((m) => !(rule.imports as { allExcept: readonly string[] }).allExcept.includes(m)));
  const violations: Violation[] = [];
  for (const { specifier, line } of importsOf(src)) {
    if (!specifier.startsWith('./') && !specifier.startsWith('../')) continue; // npm packages, node: built-ins
    const target = resolveSpecifier(file, specifier, files);
    const theirs = moduleOf(target);
    if (theirs === undefined) {
      violations.push({ file, line, rule: 'import', message: `'${specifier}' resolves outside src/ (${target})` });
    } else if (theirs !== own && !allowed.has(theirs) && !rule.files?.includes(target)) {
      const also = rule.files?.length ? ` (nor is ${target} one of its allowed files)` : '';
      violations.push({ file, line, rule: 'import', message: `${own} may not import ${theirs}: '${specifier}' (${target})${also}` });
    } else if (theirs !== own && own !== 'app' && /^src\/[^/]+\/erasable\.ts$/.test(target)) {
      // each module's part of an erasure reaches the engine through the composition root: nothing else knows its queries
      violations.push({
        file,
        line,
        rule: 'import',
        message: `${own} may not import ${theirs}'s erasable (${target}): the composition root (src/app) hands erasables to the engine`,
      });
    }
  }
  return violations;
}

// ---------------------------------------------------------------------------------
// Tables: schema.ts and src/db/schema/ name them, the README says who owns them, writers must be owners.

/** Drizzle identifier → table name, with the line of each definition. */
export function parseSchema(src: string): Map<string, { table: string; line: number }> {
  const tables = new Map<string, { table: string; line: number }>();
  for (const m of lex(src).code.matchAll(/\bexport\s+const\s+([\w$]+)\s*=\s*pgTable\s*\(\s*(['"`])(\w+)\2/g)) {
    tables.set(m[1]!, { table: m[3]!, line: lineAt(src, m.index) });
  }
  return tables;
}

/** Table → owning module, from the README's rows: | `table` | owner | what it holds | */
export function parseOwnership(readme: string): Map<string, { owner: string; line: number }> {
  const owners = new Map<string, { owner: string; line: number }>();
  readme.split('\n').forEach((text, k) => {
    const m = /^\s*\|\s*`(\w+)`\s*\|\s*`?([\w-]+)`?\s*\|/.exec(text);
    if (m && !owners.has(m[1]!)) owners.set(m[1]!, { owner: m[2]!, line: k + 1 });
  });
  return owners;
}

interface Write {
  readonly table: string;
  readonly line: number;
  readonly how: string;
}

// A table as SQL names it: t, "t", public.t, or a drizzle table interpolated as ${t} / ${schema.t}.
const NAME = String.raw`(?:\$\{[\s\w$.]*\}|(?:"?\w+"?\s*\.\s*)?"?\w+"?)`;
const RAW_WRITES = [
  new RegExp(String.raw`\b(insert\s+into)\s+(${NAME})`, 'gi'),
  new RegExp(String.raw`\b(delete\s+from)\s+(?:only\s+)?(${NAME})`, 'gi'),
  // `update t [[as] alias] set`; never `for update`, `for no key update`, `do update set`
  new RegExp(String.raw`(?<!\b(?:for|key|do)\s+)\b(update)\s+(?:only\s+)?(${NAME})(?=(?:\s+(?:as\s+)?\w+)?\s+set\b)`, 'gi'),
  new RegExp(String.raw`\b(truncate)\s+(?:table\s+)?(?:only\s+)?(${NAME}(?:\s*,\s*${NAME})*)`, 'gi'),
];
const DRIZZLE_WRITE = /\.\s*(insert|update|delete)\s*\(\s*(?:[\w$]+\s*\.\s*)*([\w$]+)\s*\)/g; // .insert(t), .delete(schema.t)

/** The table a SQL name means: `${t}` / `${schema.t}` through the drizzle identifiers, else the last word. */
function tableOf(name: string, identifiers: ReadonlyMap<string, string>): string | undefined {
  const last = /([\w$]+)"?\s*\}?$/.exec(name.trim())?.[1] ?? '';
  return name.trim().startsWith('${') ? identifiers.get(last) : last.toLowerCase();
}

/** The table writes in a file's code (comments ignored); `identifiers` maps drizzle names to tables. */
export function writesOf(src: string, identifiers: ReadonlyMap<string, string>): Write[] {
  const { code } = lex(src);
  const tables = new Set(identifiers.values());
  const writes: Write[] = [];
  for (const pattern of RAW_WRITES) {
    for (const m of code.matchAll(pattern)) {
      for (const name of m[2]!.split(',')) {
        const table = tableOf(name, identifiers);
        if (table && tables.has(table)) writes.push({ table, line: lineAt(src, m.index), how: `SQL ${m[1]!.toLowerCase().replace(/\s+/g, ' ')}` });
      }
    }
  }
  for (const m of code.matchAll(DRIZZLE_WRITE)) {
    const table = identifiers.get(m[2]!);
    if (table) writes.push({ table, line: lineAt(src, m.index), how: `drizzle .${m[1]}(${m[2]})` });
  }
  return writes.sort((a, b) => a.line - b.line);
}

// Reads: `from t` / `join t` in SQL (never `delete from`), drizzle .from(t) and .innerJoin(t, …) and the like.
const RAW_READ = new RegExp(String.raw`(?<!\bdelete\s+)\b(from|join)\s+(?:only\s+)?(${NAME})`, 'gi');
const DRIZZLE_READ = /\.\s*(from|(?:inner|left|right|full)Join)\s*\(\s*(?:[\w$]+\s*\.\s*)*([\w$]+)\s*[,)]/g;

/** The table reads in a file's code (comments ignored), as writesOf finds writes. */
export function readsOf(src: string, identifiers: ReadonlyMap<string, string>): Write[] {
  const { code } = lex(src);
  const tables = new Set(identifiers.values());
  const reads: Write[] = [];
  for (const m of code.matchAll(RAW_READ)) {
    // SQL, not prose ("… from provenance"): a select before it, and after the name an alias, a clause, a `)`, `,` or the end of the text
    if (!/\bselect\b/i.test(code.slice(Math.max(0, m.index - 800), m.index))) continue;
    if (!/^(?:\s+\w|\s*(?:[)`,'"]|$))/.test(code.slice(m.index + m[0].length, m.index + m[0].length + 2))) continue;
    const table = tableOf(m[2]!, identifiers);
    if (table && tables.has(table)) reads.push({ table, line: lineAt(src, m.index), how: `SQL ${m[1]!.toLowerCase()}` });
  }
  for (const m of code.matchAll(DRIZZLE_READ)) {
    const table = identifiers.get(m[2]!);
    if (table) reads.push({ table, line: lineAt(src, m.index), how: `drizzle .${m[1]}(${m[2]})` });
  }
  return reads.sort((a, b) => a.line - b.line);
}

/**
 * The reads src/db/README.md allows across a wall: under "## Reads across a wall", each
 * bullet names a module (its first backticked word) and the tables it reads (the other
 * backticked words that are table names).
 */
export function parseReadsList(readme: string, tables: ReadonlySet<string>): Map<string, Set<string>> {
  const allowed = new Map<string, Set<string>>();
  const section = /^## Reads across a wall\s*$([\s\S]*?)(?=^## |(?![\s\S]))/m.exec(readme)?.[1] ?? '';
  for (const bullet of section.split(/^- /m).slice(1)) {
    const words = [...bullet.matchAll(/`([\w.-]+)`/g)].map((m) => m[1]!);
    const module = words[0];
    if (module === undefined) continue;
    const set = allowed.get(module) ?? new Set<string>();
    allowed.set(module, set);
    for (const w of words.slice(1)) if (tables.has(w)) set.add(w);
  }
  return allowed;
}

function checkTables(files: Readonly<Record<string, string>>, rules: Rules): Violation[] {
  const violations: Violation[] = [];
  // schema.ts and the files it gathers under schema/
  const schema = new Map<string, { table: string; line: number; file: string }>();
  for (const [file, src] of Object.entries(files)) {
    if (!isSchemaFile(file)) continue;
    for (const [ident, t] of parseSchema(src)) schema.set(ident, { ...t, file });
  }
  const owners = parseOwnership(files[README] ?? '');
  const defined = new Set([...schema.values()].map((t) => t.table));
  for (const [table, { owner, line }] of owners) {
    if (!defined.has(table)) violations.push({ file: README, line, rule: 'table-write', message: `table ${table} is not defined in ${SCHEMA}` });
    if (!rules.modules[owner])
      violations.push({ file: README, line, rule: 'table-write', message: `table ${table}: owner ${owner} is not a module in the rules` });
  }
  for (const { table, line, file } of schema.values()) {
    if (!owners.has(table)) violations.push({ file, line, rule: 'table-write', message: `table ${table} has no owner in ${README}` });
  }
  const identifiers = new Map([...schema].map(([ident, { table }]) => [ident, table]));
  const reads = parseReadsList(files[README] ?? '', defined);
  for (const [file, src] of Object.entries(files)) {
    if (!file.endsWith('.ts') || isSchemaFile(file)) continue;
    const module = moduleOf(file);
    for (const { table, line, how } of writesOf(src, identifiers)) {
      const owner = owners.get(table)?.owner;
      if (owner === module || rules.exceptions[file]?.tables.includes(table)) continue;
      const whose = owner ? `which ${owner} owns` : `which has no owner in ${README}`;
      violations.push({ file, line, rule: 'table-write', message: `${module} writes ${table} (${how}), ${whose}: call the owner's service` });
    }
    for (const { table, line, how } of readsOf(src, identifiers)) {
      const owner = owners.get(table)?.owner;
      if (module === undefined || owner === undefined || owner === module || reads.get(module)?.has(table)) continue;
      violations.push({
        file,
        line,
        rule: 'table-read',
        message: `${module} reads ${table} (${how}), which ${owner} owns, and ${README} does not list it under "Reads across a wall": ask the owner's service, or list the read with its reason`,
      });
    }
  }
  return violations;
}

// ---------------------------------------------------------------------------------
// Routes: one file per operation, each declaring the services it uses (src/http/README.md).
//
// A route file is a file under src/http/routes/ that calls createRoute(. It declares
// `export interface Uses { readonly <service>: …; }` (or `export type Uses = Pick<Services, '…'>`),
// naming services of src/http/services.ts's `Services`; then
//   - every `services.<name>` in it is a declared name,
//   - importing the module a service comes from (src/erasure/engine.ts for `erasures`)
//     needs that service declared,
//   - the whole `Services` object is never taken: only `Services['<name>']` or a Pick.

/** Service name → the file its type is imported from, parsed from src/http/services.ts. */
export function parseServices(src: string, files: Readonly<Record<string, string>>): Map<string, string | undefined> {
  const { code } = lex(src);
  const typeFile = new Map<string, string>();
  for (const m of code.matchAll(/\bimport\s+type\s*\{([^}]*)\}\s*from\s*(['"])([^'"]+)\2/g)) {
    for (const name of m[1]!
      .split(',')
      .map(
        (n) =>
          n
            .trim()
            .split(/\s+as\s+/)
            .pop()!,
      )
      .filter(Boolean))
      typeFile.set(name, resolveSpecifier(SERVICES, m[3]!, files));
  }
  const services = new Map<string, string | undefined>();
  const body = /\binterface\s+Services\s*\{([\s\S]*?)\n\}/.exec(code)?.[1] ?? '';
  for (const m of body.matchAll(/^\s*(?:readonly\s+)?([\w$]+)\??\s*:\s*([\w$]+)?/gm)) services.set(m[1]!, m[2] ? typeFile.get(m[2]) : undefined);
  return services;
}

/** The names a route file's `Uses` declares, or undefined when it declares none. */
export function declaredUses(src: string): Set<string> | undefined {
  const { code } = lex(src);
  const iface = /\bexport\s+interface\s+Uses\s*\{/.exec(code);
  if (iface) {
    let depth = 1;
    let k = iface.index + iface[0].length;
    const start = k;
    for (; k < code.length && depth > 0; k++) depth += code[k] === '{' ? 1 : code[k] === '}' ? -1 : 0;
    const names = new Set<string>();
    // top-level members only: blank nested braces first
    let body = code.slice(start, k - 1);
    while (/\{[^{}]*\}/.test(body)) body = body.replace(/\{[^{}]*\}/g, (b) => ' '.repeat(b.length));
    for (const m of body.matchAll(/(?:^|[;,\n])\s*(?:readonly\s+)?([\w$]+)\??\s*:/g)) names.add(m[1]!);
    return names;
  }
  const alias = /\bexport\s+type\s+Uses\s*=([^;]*);/.exec(code);
  if (alias)
    return new Set([...alias[1]!.matchAll(/Pick\s*<\s*Services\s*,([^>]*)>/g)].flatMap((m) => [...m[1]!.matchAll(/['"]([\w$]+)['"]/g)].map((n) => n[1]!)));
  return undefined;
}

function checkRoute(file: string, src: string, files: Readonly<Record<string, string>>, services: ReadonlyMap<string, string | undefined>): Violation[] {
  const { code, masked } = lex(src);
  if (!/\bcreateRoute\s*\(/.test(masked)) return [];
  const violation = (index: number, message: string): Violation => ({ file, line: lineAt(src, index), rule: 'route-services', message });
  const declared = declaredUses(src);
  if (!declared)
    return [violation(masked.search(/\bcreateRoute\s*\(/), 'a route file declares the services it uses: export interface Uses { readonly <service>: … }')];
  const violations: Violation[] = [];
  for (const name of declared) {
    if (services.size > 0 && !services.has(name))
      violations.push(violation(masked.search(/\bUses\b/), `Uses declares ${name}, which is not a service of ${SERVICES}`));
  }
  for (const m of masked.matchAll(/\bservices\s*\??\.\s*([\w$]+)/g)) {
    if (!declared.has(m[1]!)) violations.push(violation(m.index, `uses services.${m[1]} without declaring ${m[1]} in Uses`));
  }
  for (const m of masked.matchAll(/\{([^{}]*)\}\s*=\s*services\b/g)) {
    for (const name of m[1]!
      .split(',')
      .map((n) => n.trim().split(/\s*:/)[0]!.trim())
      .filter(Boolean)) {
      if (!declared.has(name)) violations.push(violation(m.index, `uses services.${name} without declaring ${name} in Uses`));
    }
  }
  for (const m of masked.matchAll(/\bServices\b(?!\s*\[)/g)) {
    if (/Pick\s*<\s*$/.test(masked.slice(Math.max(0, m.index - 40), m.index)) && /\bexport\s+type\s+Uses\b/.test(code)) continue;
    if (/\bimport\s+type\s*\{[^}]*$/.test(masked.slice(Math.max(0, m.index - 200), m.index))) continue; // the import of the type itself
    violations.push(violation(m.index, "takes the whole Services object: declare only what it uses (Services['<name>'] or a Pick of it)"));
  }
  for (const { specifier, line } of importsOf(src)) {
    if (!specifier.startsWith('.')) continue;
    const target = resolveSpecifier(file, specifier, files);
    const provides = [...services].filter(([, from]) => from === target).map(([name]) => name);
    if (provides.length > 0 && !provides.some((name) => declared.has(name))) {
      violations.push({ file, line, rule: 'route-services', message: `imports ${target}, the ${provides.join(' / ')} service, without declaring it in Uses` });
    }
  }
  return violations;
}

function checkRoutes(files: Readonly<Record<string, string>>): Violation[] {
  const services = files[SERVICES] ? parseServices(files[SERVICES], files) : new Map<string, string | undefined>();
  return Object.entries(files)
    .filter(([file]) => file.startsWith(ROUTES) && file.endsWith('.ts'))
    .flatMap(([file, src]) => checkRoute(file, src, files, services));
}

// ---------------------------------------------------------------------------------

const order = (x: string, y: string) => (x < y ? -1 : x > y ? 1 : 0);
const sorted = (vs: Violation[]) => vs.sort((a, b) => order(a.file, b.file) || a.line - b.line || order(a.message, b.message));

/** Every violation in the tree `files` (repo-relative path → text). Pure. */
export function check(files: Readonly<Record<string, string>>, rules: Rules = { modules: MODULES, exceptions: WRITE_EXCEPTIONS }): Violation[] {
  const violations = Object.entries(files)
    .filter(([file]) => file.endsWith('.ts'))
    .flatMap(([file, src]) => checkImports(file, src, files, rules));
  violations.push(...checkTables(files, rules));
  violations.push(...checkReadmes(files, rules.modules));
  violations.push(...checkRoutes(files));
  violations.push(...checkShape(files, rules.allowed ?? ALLOWED).violations);
  return sorted(violations);
}

/** The allowed offenders (rules.ts ALLOWED_*): long files, long functions and import cycles of today, reported only. */
export function warnings(files: Readonly<Record<string, string>>, rules: Pick<Rules, 'allowed'> = {}): Violation[] {
  return sorted(checkShape(files, rules.allowed ?? ALLOWED).warnings);
}

/** Entries of the ALLOWED_* lists that no longer offend (take them off). */
export function staleAllowances(files: Readonly<Record<string, string>>, rules: Pick<Rules, 'allowed'> = {}): string[] {
  return checkShape(files, rules.allowed ?? ALLOWED).stale;
}

export const REPO = fileURLToPath(new URL('../..', import.meta.url));

/** Every .ts file and README.md under src/, read from the repository at `root`. */
export function readTree(root: string = REPO): Record<string, string> {
  const files: Record<string, string> = {};
  const walk = (dir: string) => {
    for (const entry of readdirSync(path.join(root, dir), { withFileTypes: true })) {
      const rel = `${dir}/${entry.name}`;
      if (entry.isDirectory()) walk(rel);
      else if (entry.name.endsWith('.ts') || entry.name === 'README.md') files[rel] = readFileSync(path.join(root, rel), 'utf8');
    }
  };
  walk('src');
  return files;
}

export const format = (v: Violation) => `${v.file}:${v.line} [${v.rule}] ${v.message}`;

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  const tree = readTree();
  const allowed = warnings(tree);
  if (allowed.length) {
    console.log(`${allowed.length} allowed offender(s), listed in test/architecture/rules.ts (ALLOWED_*): shrink them and take them off the list`);
    for (const w of allowed) console.log(`  warning: ${format(w)}`);
  }
  for (const entry of staleAllowances(tree)) console.log(`no longer offends, take it off its ALLOWED_* list in test/architecture/rules.ts: ${entry}`);
  const violations = check(tree);
  for (const v of violations) console.log(format(v));
  if (violations.length) console.error(`${violations.length} architecture violation(s)`);
  process.exitCode = violations.length ? 1 : 0;
}
