/**
 * What every architecture rule reads a source file with: comments and literals blanked
 * by a small lexer (no parser), the module a file belongs to, and its imports.
 */
import path from 'node:path';

export interface Violation {
  readonly file: string;
  readonly line: number;
  readonly rule: 'import' | 'table-write' | 'table-read' | 'readme-imports' | 'cycle' | 'file-length' | 'function-length' | 'route-services';
  readonly message: string;
}

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

/** The 1-based line of `index` in `text`. */
export const lineAt = (text: string, index: number) => {
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

export interface Import {
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
