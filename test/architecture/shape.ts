/**
 * The shape of src/: no file over MAX_FILE_LINES lines, no function over
 * MAX_FUNCTION_LINES lines, no import cycle between files (inside a module too; an
 * `import type` counts: it is erased at run time, but the two files still lean on each
 * other).
 *
 * The offenders of today are listed in test/architecture/rules.ts (ALLOWED_*): they are
 * reported as warnings, a new one is a violation. Shrink a file and take it off the
 * list; an empty list makes the rule strict.
 */
import { importsOf, lex, lineAt, resolveSpecifier, type Violation } from './source.js';

export const MAX_FILE_LINES = 400;
export const MAX_FUNCTION_LINES = 120;

export interface ShapeAllowances {
  /** Files allowed over MAX_FILE_LINES. */
  readonly longFiles: readonly string[];
  /** `file#function` allowed over MAX_FUNCTION_LINES. */
  readonly longFunctions: readonly string[];
  /** Import cycles allowed, each as the files it joins; a cycle within one of these sets is allowed. */
  readonly cycles: readonly (readonly string[])[];
}

export interface ShapeReport {
  /** New offenders: not on the lists. */
  readonly violations: Violation[];
  /** Offenders on the lists, reported. */
  readonly warnings: Violation[];
  /** List entries that no longer offend: take them off. */
  readonly stale: string[];
}

const sourceFiles = (files: Readonly<Record<string, string>>) =>
  Object.keys(files)
    .filter((f) => f.startsWith('src/') && f.endsWith('.ts'))
    .sort();

/** The number of lines of a text (a final newline ends the last line; it does not start another). */
export function lineCount(text: string): number {
  if (text === '') return 0;
  return text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
}

// ---------------------------------------------------------------------------------
// Functions: a head (function, method, arrow) and its braced body, found in the masked text.

export interface FunctionSpan {
  readonly name: string;
  readonly line: number;
  readonly lines: number;
}

const NOT_METHODS = new Set(['if', 'for', 'while', 'switch', 'catch', 'with', 'return', 'function', 'else', 'do', 'try', 'await', 'typeof', 'new', 'super']);

/** The index of the bracket closing the one at `open` (same kind), or -1. */
function closing(text: string, open: number): number {
  const pairs: Record<string, string> = { '(': ')', '{': '}', '[': ']' };
  const stack: string[] = [];
  for (let k = open; k < text.length; k++) {
    const c = text[k]!;
    if (c in pairs) stack.push(pairs[c]!);
    else if (c === ')' || c === '}' || c === ']') {
      if (stack.pop() !== c) return -1;
      if (stack.length === 0) return k;
    }
  }
  return -1;
}

/** After a parameter list closing at `close`: the body's `{` when a return type (or nothing) and then `{` follow; else -1. */
function bodyAfter(text: string, close: number): number {
  let k = close + 1;
  while (/\s/.test(text[k] ?? '')) k++;
  if (text[k] === '{') return k;
  if (text[k] !== ':') return -1;
  // a return type: up to the first `{` at bracket depth 0 that is not part of the type (`=> {` is an arrow, not ours)
  let depth = 0;
  for (k++; k < text.length; k++) {
    const c = text[k]!;
    if (c === '=' && text[k + 1] === '>')
      k++; // a function type's arrow
    else if (c === '(' || c === '[' || c === '<' || (c === '{' && depth > 0)) depth++;
    else if (c === ')' || c === ']' || c === '>' || (c === '}' && depth > 0)) depth--;
    else if (c === '{') {
      const before = text.slice(Math.max(0, k - 40), k).trimEnd();
      if (/[:|&<,]$/.test(before)) {
        const end = closing(text, k); // an object type: `: { a: number } {`
        if (end < 0) return -1;
        k = end;
        continue;
      }
      return k;
    } else if (c === ';' || c === '=' || c === '}') return -1;
  }
  return -1;
}

/** Every function, method and arrow with a braced body in `src`, with its length in lines (head to closing brace). */
export function functionsOf(src: string): FunctionSpan[] {
  const { masked } = lex(src);
  const spans: FunctionSpan[] = [];
  const add = (name: string, head: number, body: number) => {
    const end = closing(masked, body);
    if (end < 0) return;
    const line = lineAt(masked, head);
    spans.push({ name, line, lines: lineAt(masked, end) - line + 1 });
  };
  // function declarations and expressions
  for (const m of masked.matchAll(/\bfunction\b\s*\*?\s*([\w$]*)\s*(?:<[^(]*?>)?\s*\(/g)) {
    const open = m.index + m[0].length - 1;
    const body = bodyAfter(masked, closing(masked, open));
    if (body >= 0) add(m[1] || '(anonymous function)', m.index, body);
  }
  // methods, getters, setters, constructors: a name at the start of a line, then parameters, then a body
  for (const m of masked.matchAll(
    /^[ \t]*(?:(?:public|private|protected|static|async|override|readonly|get|set)\s+)*\*?\s*(#?[\w$]+)\s*(?:<[^(]*?>)?\s*\(/gm,
  )) {
    if (NOT_METHODS.has(m[1]!)) continue;
    const open = m.index + m[0].length - 1;
    const close = closing(masked, open);
    if (close < 0) continue;
    const body = bodyAfter(masked, close);
    if (body >= 0) add(m[1]!, m.index + m[0].length - m[0].trimStart().length, body);
  }
  // arrows with a braced body, named after what they are assigned to or the call they are passed to
  for (const m of masked.matchAll(/=>\s*\{/g)) {
    const body = m.index + m[0].length - 1;
    const before = masked.slice(Math.max(0, m.index - 400), m.index);
    const assigned =
      /(?:\b(?:const|let|var)\s+|^\s*|[{,]\s*)(#?[\w$]+)\s*(?::[^=;]*)?=\s*(?:async\s*)?(?:\([^()]*(?:\([^()]*\)[^()]*)*\)|[\w$]+)\s*(?::[^=;]*)?$/m.exec(
        before,
      );
    const property = /(?:^|[{,]\s*)(#?[\w$]+)\s*:\s*(?:async\s*)?(?:\([^()]*(?:\([^()]*\)[^()]*)*\)|[\w$]+)\s*(?::[^=;]*)?$/m.exec(before);
    const call = /([\w$]+)\s*\((?:[^()]|\([^()]*\))*$/.exec(before);
    const name = assigned?.[1] ?? property?.[1] ?? (call ? `${call[1]}(…) callback` : '(arrow)');
    add(name, m.index, body);
  }
  // one span per body: a method head and an arrow can meet the same brace
  const seen = new Set<string>();
  return spans
    .sort((a, b) => a.line - b.line || b.lines - a.lines)
    .filter((s) => {
      const key = `${s.line}:${s.lines}`;
      if (seen.has(key)) return false;
      seen.add(key);
      return true;
    });
}

// ---------------------------------------------------------------------------------
// Import cycles: strongly connected components of the import graph (Tarjan).

/** Every import cycle among src/ files, type imports included: each as the sorted files of one strongly connected component. */
export function importCycles(files: Readonly<Record<string, string>>): string[][] {
  const nodes = sourceFiles(files);
  const edges = new Map<string, string[]>();
  for (const file of nodes) {
    const targets = importsOf(files[file]!)
      .filter((i) => i.specifier.startsWith('./') || i.specifier.startsWith('../'))
      .map((i) => resolveSpecifier(file, i.specifier, files))
      .filter((t) => t in files);
    edges.set(file, [...new Set(targets)]);
  }
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const components: string[][] = [];
  let next = 0;
  const visit = (v: string) => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of edges.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1 || edges.get(v)?.includes(v)) components.push(component.sort());
    }
  };
  for (const v of nodes) if (!index.has(v)) visit(v);
  return components.sort((a, b) => (a[0]! < b[0]! ? -1 : 1));
}

// ---------------------------------------------------------------------------------

/** Long files, long functions and import cycles in src/: new ones as violations, allowed ones as warnings. */
export function checkShape(files: Readonly<Record<string, string>>, allowed: ShapeAllowances): ShapeReport {
  const violations: Violation[] = [];
  const warnings: Violation[] = [];
  const put = (ok: boolean, v: Violation) => (ok ? warnings : violations).push(v);
  const offending = new Set<string>();
  for (const file of sourceFiles(files)) {
    const src = files[file]!;
    const lines = lineCount(src);
    if (lines > MAX_FILE_LINES) {
      offending.add(file);
      put(allowed.longFiles.includes(file), { file, line: 1, rule: 'file-length', message: `${lines} lines (at most ${MAX_FILE_LINES})` });
    }
    for (const f of functionsOf(src)) {
      if (f.lines <= MAX_FUNCTION_LINES) continue;
      const key = `${file}#${f.name}`;
      offending.add(key);
      put(allowed.longFunctions.includes(key), {
        file,
        line: f.line,
        rule: 'function-length',
        message: `${f.name}: ${f.lines} lines (at most ${MAX_FUNCTION_LINES})`,
      });
    }
  }
  for (const cycle of importCycles(files)) {
    const within = allowed.cycles.find((set) => cycle.every((f) => set.includes(f)));
    if (within) offending.add(within.join(' '));
    put(within !== undefined, { file: cycle[0]!, line: 1, rule: 'cycle', message: `import cycle among ${cycle.join(', ')}` });
  }
  const stale = [...allowed.longFiles, ...allowed.longFunctions, ...allowed.cycles.map((c) => c.join(' '))].filter((k) => !offending.has(k));
  return { violations, warnings, stale };
}
