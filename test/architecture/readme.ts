/**
 * A module's README says what it may import ("May import: …"); the check holds that
 * line to the imports its files make, both ways: a module imported but not listed, and
 * one listed but not imported, are violations. So the README is the map a reader can
 * trust, and it changes in the same commit as the imports.
 *
 * The line's forms:
 *   May import: crypto, errors, config.            the modules, exactly
 *   May import: nothing of lethe's.                no module
 *   May import: every module except `cli` and `client`.   the rules' `allExcept` list, exactly
 * The list ends at the first full stop, em dash or parenthesis; module names may be in
 * backticks; other words are ignored.
 */
import { importsOf, lineAt, moduleOf, resolveSpecifier, type Violation } from './source.js';
import type { ModuleRule } from './rules.js';

/** `src/<module>/README.md` → module; any other path → undefined. */
export function readmeModule(file: string): string | undefined {
  const m = /^src\/([^/]+)\/README\.md$/.exec(file);
  return m?.[1];
}

export type MayImport = { readonly line: number } & ({ readonly only: ReadonlySet<string> } | { readonly allExcept: ReadonlySet<string> });

/** The README's "May import" line, read against the known module names; undefined when it has none. */
export function parseMayImport(readme: string, modules: readonly string[]): MayImport | undefined {
  const at = readme.search(/May import:/);
  if (at < 0) return undefined;
  const after = readme.slice(at + 'May import:'.length);
  const list = after.split(/\.(?:\s|$)|—|\(/)[0]!;
  const names = new Set([...list.matchAll(/[\w-]+/g)].map((m) => m[0]).filter((w) => modules.includes(w)));
  const line = lineAt(readme, at);
  return /\bevery module except\b/.test(list) ? { line, allExcept: names } : { line, only: names };
}

const listed = (names: Iterable<string>) => [...names].sort().join(', ') || 'none';

/** Each module README's "May import" line against the imports its module's files make. */
export function checkReadmes(files: Readonly<Record<string, string>>, modules: Readonly<Record<string, ModuleRule>>): Violation[] {
  const names = Object.keys(modules);
  const imported = new Map<string, Set<string>>();
  for (const [file, src] of Object.entries(files)) {
    const own = moduleOf(file);
    if (!file.endsWith('.ts') || own === undefined) continue;
    const theirs = imported.get(own) ?? new Set<string>();
    imported.set(own, theirs);
    for (const { specifier } of importsOf(src)) {
      if (!specifier.startsWith('./') && !specifier.startsWith('../')) continue;
      const target = moduleOf(resolveSpecifier(file, specifier, files));
      if (target !== undefined && target !== own) theirs.add(target);
    }
  }
  const violations: Violation[] = [];
  for (const [file, text] of Object.entries(files)) {
    const own = readmeModule(file);
    if (own === undefined) continue;
    const may = parseMayImport(text, names);
    if (!may) {
      violations.push({
        file,
        line: 1,
        rule: 'readme-imports',
        message: `no "May import:" line (the modules ${own} imports: ${listed(imported.get(own) ?? [])})`,
      });
      continue;
    }
    const actual = imported.get(own) ?? new Set<string>();
    if ('allExcept' in may) {
      const rule = modules[own]?.imports;
      const ruled = rule && !Array.isArray(rule) ? new Set((rule as { allExcept: readonly string[] }).allExcept) : undefined;
      if (!ruled || listed(ruled) !== listed(may.allExcept)) {
        const says = ruled ? `every module except ${listed(ruled)}` : `only ${listed((rule as readonly string[] | undefined) ?? [])}`;
        violations.push({
          file,
          line: may.line,
          rule: 'readme-imports',
          message: `says every module except ${listed(may.allExcept)}; test/architecture/rules.ts says ${says}`,
        });
      }
      const forbidden = [...actual].filter((m) => may.allExcept.has(m));
      if (forbidden.length)
        violations.push({ file, line: may.line, rule: 'readme-imports', message: `${own} imports ${listed(forbidden)}, which its "May import" line excepts` });
      continue;
    }
    const unlisted = [...actual].filter((m) => !may.only.has(m));
    const unused = [...may.only].filter((m) => !actual.has(m));
    if (unlisted.length)
      violations.push({ file, line: may.line, rule: 'readme-imports', message: `${own} imports ${listed(unlisted)}, not in its "May import" line` });
    if (unused.length)
      violations.push({ file, line: may.line, rule: 'readme-imports', message: `"May import" lists ${listed(unused)}, which ${own} does not import` });
  }
  return violations;
}
