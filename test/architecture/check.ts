/**
 * The architecture check: no module imports "upward" (test/architecture/rules.ts), no
 * module writes a table it does not own (src/db/README.md), and a route file uses only
 * the services it declares (its `Uses` type; the services are src/http/services.ts's).
 *
 * `check()` is pure: it takes every .ts file under src/ (plus src/db/README.md) as
 * repo-relative path → text and returns the violations. `readTree()` reads that map
 * from disk. Run directly, it prints the violations and exits 1 if there are any:
 *
 *   node --import tsx test/architecture/check.ts
 *
 * No parser: comments are blanked (outside strings) and careful regexes do the rest.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { MODULES, type ModuleRule, WRITE_EXCEPTIONS } from './rules.js';

export interface Violation {
  readonly file: string;
  readonly line: number;
  readonly rule: 'import' | 'table-write' | 'route-services';
  readonly message: string;
}

export interface Rules {
  readonly modules: Readonly<Record<string, ModuleRule>>;
  readonly exceptions: Readonly<Record<string, { readonly tables: readonly string[]; readonly reason: string }>>;
}

export const README = 'src/db/README.md';
export const SCHEMA = 'src/db/schema.ts';
export const SERVICES = 'src/http/services.ts';
export const ROUTES = 'src/http/routes/';

// ---------------------------------------------------------------------------------
// Lexing: blank comments, and (for the masked copy) the contents of strings, template
// literals and regex literals. Offsets and newlines are kept, so line numbers hold.

const REGEX_AFTER_WORD = new Set(['return', 'typeof', 'case', 'do', 'else', 'in', 'of', 'new', 'delete', 'void', 'throw', 'instanceof', 'yield', 'await']);

/** `code`: comments blanked. `masked`: comments and literal contents blanked (delimiters kept). */
export function lex(src: string): { code: string; masked: string } {
  const code = src.split('');
  const masked = src.split('');
  const blank = (arr: string[], from: number, to: number) => {
    for (let k = from; k < to; k++) if (arr[k] !== '\n') arr[k] = ' ';
  };
  const interpolations: number[] = []; // brace depth at each open `${`
  let depth = 0;
  let prev = ''; // the last significant token: a punctuator char or a word
  let i = 0;
  // Scans template text from i up to its closing backtick or the next `${`.
  const template = () => {
    const start = i;
    while (i < src.length && src[i] !== '`' && !(src[i] === '$' && src[i + 1] === '{')) i += src[i] === '\\' ? 2 : 1;
    blank(masked, start, Math.min(i, src.length));
    if (src[i] === '$') {
      interpolations.push(depth);
      i += 2;
      prev = '{';
    } else {
      i++;
      prev = '`';
    }
  };
  while (i < src.length) {
    const c = src[i]!;
    const next = src[i + 1];
    if (c === '/' && next === '/') {
      const end = src.indexOf('\n', i);
      const stop = end < 0 ? src.length : end;
      blank(code, i, stop);
      blank(masked, i, stop);
      i = stop;
    } else if (c === '/' && next === '*') {
      const end = src.indexOf('*/', i + 2);
      const stop = end < 0 ? src.length : end + 2;
      blank(code, i, stop);
      blank(masked, i, stop);
      i = stop;
    } else if (c === '"' || c === "'") {
      const start = ++i;
      while (i < src.length && src[i] !== c && src[i] !== '\n') i += src[i] === '\\' ? 2 : 1;
      blank(masked, start, i);
      i++;
      prev = c;
    } else if (c === '`') {
      i++;
      template();
    } else if (c === '}' && interpolations.at(-1) === depth) {
      interpolations.pop();
      i++;
      template();
    } else if (c === '/' && (prev === '' || /^[(,=:[!&|?{};+\-*%<>~^]$/.test(prev) || REGEX_AFTER_WORD.has(prev))) {
      const start = ++i;
      let inClass = false;
      while (i < src.length && src[i] !== '\n' && (inClass || src[i] !== '/')) {
        if (src[i] === '[') inClass = true;
        else if (src[i] === ']') inClass = false;
        i += src[i] === '\\' ? 2 : 1;
      }
      blank(masked, start, i);
      i++;
      prev = '/re/';
    } else if (/[\w$]/.test(c)) {
      const word = /^[\w$]+/.exec(src.slice(i, i + 64))![0];
      i += word.length;
      prev = word;
    } else {
      if (c === '{') depth++;
      else if (c === '}') depth--;
      if (!/\s/.test(c)) prev = c;
      i++;
    }
  }
  return { code: code.join(''), masked: masked.join('') };
}

const lineAt = (text: string, index: number) => {
  let line = 1;
  for (let k = 0; k < index; k++) if (text.charCodeAt(k) === 10) line++;
  return line;
};

// ---------------------------------------------------------------------------------
// Modules and imports

/** `src/vault/keys.ts` → vault; `src/errors.ts` → errors; outside src/ → undefined. */
export function moduleOf(file: string): string | undefined {
  const parts = file.split('/');
  if (parts[0] !== 'src' || parts.length < 2) return undefined;
  return parts.length === 2 ? parts[1]!.replace(/\.(d\.)?ts$/, '') : parts[1];
}

interface Import {
  readonly specifier: string;
  readonly line: number;
}

// Each pattern ends on the opening quote of the specifier, in the masked text.
const IMPORT_PATTERNS = [
  /(?<![\w$.])(?:import|export)\s+[\w$\s{},*]*?\bfrom\s*(['"])/g, // import … from, export … from
  /(?<![\w$.])import\s*(['"])/g, // import './side-effect.js'
  /(?<![\w$.])(?:import|require)\s*\(\s*(['"])/g, // import('…'), typeof import('…'), require('…')
];

export function importsOf(src: string): Import[] {
  const { masked } = lex(src);
  const found: Import[] = [];
  for (const pattern of IMPORT_PATTERNS) {
    for (const m of masked.matchAll(pattern)) {
      const open = m.index + m[0].length; // just after the quote
      const close = masked.indexOf(m[1]!, open);
      if (close < 0) continue;
      found.push({ specifier: src.slice(open, close), line: lineAt(src, m.index) });
    }
  }
  return found.sort((a, b) => a.line - b.line);
}

/** The repo-relative file a relative specifier names (`.js` names `.ts`). */
export function resolveSpecifier(from: string, specifier: string, files: Readonly<Record<string, string>>): string {
  const target = path.posix.normalize(path.posix.join(path.posix.dirname(from), specifier));
  if (/\.(m|c)?js$/.test(target)) return target.replace(/js$/, 'ts');
  if (path.posix.extname(target)) return target; // .ts, .json, …
  for (const candidate of [`${target}.ts`, `${target}/index.ts`]) if (candidate in files) return candidate;
  return `${target}.ts`;
}

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
    }
  }
  return violations;
}

// ---------------------------------------------------------------------------------
// Tables: schema.ts names them, the README says who owns them, writers must be owners.

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

/** The table writes in a file's code (comments ignored); `identifiers` maps drizzle names to tables. */
export function writesOf(src: string, identifiers: ReadonlyMap<string, string>): Write[] {
  const { code } = lex(src);
  const tables = new Set(identifiers.values());
  const tableOf = (name: string) => {
    const last = /([\w$]+)"?\s*\}?$/.exec(name.trim())?.[1] ?? '';
    return name.trim().startsWith('${') ? identifiers.get(last) : last.toLowerCase();
  };
  const writes: Write[] = [];
  for (const pattern of RAW_WRITES) {
    for (const m of code.matchAll(pattern)) {
      for (const name of m[2]!.split(',')) {
        const table = tableOf(name);
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

function checkTables(files: Readonly<Record<string, string>>, rules: Rules): Violation[] {
  const violations: Violation[] = [];
  const schema = parseSchema(files[SCHEMA] ?? '');
  const owners = parseOwnership(files[README] ?? '');
  const defined = new Set([...schema.values()].map((t) => t.table));
  for (const [table, { owner, line }] of owners) {
    if (!defined.has(table)) violations.push({ file: README, line, rule: 'table-write', message: `table ${table} is not defined in ${SCHEMA}` });
    if (!rules.modules[owner]) violations.push({ file: README, line, rule: 'table-write', message: `table ${table}: owner ${owner} is not a module in the rules` });
  }
  for (const { table, line } of schema.values()) {
    if (!owners.has(table)) violations.push({ file: SCHEMA, line, rule: 'table-write', message: `table ${table} has no owner in ${README}` });
  }
  const identifiers = new Map([...schema].map(([ident, { table }]) => [ident, table]));
  for (const [file, src] of Object.entries(files)) {
    if (!file.endsWith('.ts') || file === SCHEMA) continue;
    const module = moduleOf(file);
    for (const { table, line, how } of writesOf(src, identifiers)) {
      const owner = owners.get(table)?.owner;
      if (owner === module || rules.exceptions[file]?.tables.includes(table)) continue;
      const whose = owner ? `which ${owner} owns` : `which has no owner in ${README}`;
      violations.push({ file, line, rule: 'table-write', message: `${module} writes ${table} (${how}), ${whose}: call the owner's service` });
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
    for (const name of m[1]!.split(',').map((n) => n.trim().split(/\s+as\s+/).pop()!).filter(Boolean)) typeFile.set(name, resolveSpecifier(SERVICES, m[3]!, files));
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
  if (alias) return new Set([...alias[1]!.matchAll(/Pick\s*<\s*Services\s*,([^>]*)>/g)].flatMap((m) => [...m[1]!.matchAll(/['"]([\w$]+)['"]/g)].map((n) => n[1]!)));
  return undefined;
}

function checkRoute(file: string, src: string, files: Readonly<Record<string, string>>, services: ReadonlyMap<string, string | undefined>): Violation[] {
  const { code, masked } = lex(src);
  if (!/\bcreateRoute\s*\(/.test(masked)) return [];
  const violation = (index: number, message: string): Violation => ({ file, line: lineAt(src, index), rule: 'route-services', message });
  const declared = declaredUses(src);
  if (!declared) return [violation(masked.search(/\bcreateRoute\s*\(/), 'a route file declares the services it uses: export interface Uses { readonly <service>: … }')];
  const violations: Violation[] = [];
  for (const name of declared) {
    if (services.size > 0 && !services.has(name)) violations.push(violation(masked.search(/\bUses\b/), `Uses declares ${name}, which is not a service of ${SERVICES}`));
  }
  for (const m of masked.matchAll(/\bservices\s*\??\.\s*([\w$]+)/g)) {
    if (!declared.has(m[1]!)) violations.push(violation(m.index, `uses services.${m[1]} without declaring ${m[1]} in Uses`));
  }
  for (const m of masked.matchAll(/\{([^{}]*)\}\s*=\s*services\b/g)) {
    for (const name of m[1]!.split(',').map((n) => n.trim().split(/\s*:/)[0]!.trim()).filter(Boolean)) {
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

/** Every violation in the tree `files` (repo-relative path → text). Pure. */
export function check(files: Readonly<Record<string, string>>, rules: Rules = { modules: MODULES, exceptions: WRITE_EXCEPTIONS }): Violation[] {
  const violations = Object.entries(files)
    .filter(([file]) => file.endsWith('.ts'))
    .flatMap(([file, src]) => checkImports(file, src, files, rules));
  violations.push(...checkTables(files, rules));
  violations.push(...checkRoutes(files));
  const order = (x: string, y: string) => (x < y ? -1 : x > y ? 1 : 0);
  return violations.sort((a, b) => order(a.file, b.file) || a.line - b.line || order(a.message, b.message));
}

export const REPO = fileURLToPath(new URL('../..', import.meta.url));

/** Every .ts file under src/, plus src/db/README.md, read from the repository at `root`. */
export function readTree(root: string = REPO): Record<string, string> {
  const files: Record<string, string> = {};
  const walk = (dir: string) => {
    for (const entry of readdirSync(path.join(root, dir), { withFileTypes: true })) {
      const rel = `${dir}/${entry.name}`;
      if (entry.isDirectory()) walk(rel);
      else if (entry.name.endsWith('.ts') || rel === README) files[rel] = readFileSync(path.join(root, rel), 'utf8');
    }
  };
  walk('src');
  return files;
}

export const format = (v: Violation) => `${v.file}:${v.line} [${v.rule}] ${v.message}`;

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  const violations = check(readTree());
  for (const v of violations) console.log(format(v));
  if (violations.length) console.error(`${violations.length} architecture violation(s)`);
  process.exitCode = violations.length ? 1 : 0;
}
