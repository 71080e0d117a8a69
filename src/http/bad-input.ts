/**
 * Input no route may see, refused once for every route before routing: a JSON body
 * nested deeper than MAX_JSON_DEPTH (measured on the raw text, before JSON.parse
 * builds anything), and a string holding NUL (U+0000) or an unpaired UTF-16 surrogate
 * — as a value or as an object key anywhere in a JSON body, or in the query string.
 * PostgreSQL refuses both in text, and a deep body overflows whatever walks it
 * recursively. Path parameters are covered by their id patterns (src/ids.ts), which
 * admit neither.
 *
 * Both checks are iterative: nothing here recurses on untrusted input.
 */
import type { Context, MiddlewareHandler } from 'hono';
import { problem } from './problem.js';

/** The deepest nesting of arrays and objects a JSON body may have (the body itself is level 1). */
export const MAX_JSON_DEPTH = 32;

/** A field path segment is cut to this many characters in a problem detail. */
const SEGMENT_SHOWN = 64;

const JSON_MEDIA_TYPE = /^application\/([\w.-]+\+)?json$/i;

/** NUL, a high surrogate not followed by a low one, or a low surrogate not preceded by a high one. */
const BAD_CHARACTER = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** What is wrong with a string, or undefined when it may pass. */
export function badCharacter(s: string): string | undefined {
  const m = BAD_CHARACTER.exec(s);
  if (!m) return undefined;
  return m[0] === '\u0000' ? 'must not contain NUL (U+0000)' : 'must not contain an unpaired UTF-16 surrogate';
}

/**
 * Whether raw JSON text nests arrays and objects deeper than `limit`: brackets are
 * counted outside strings, in one pass, stopping as soon as the limit is passed. Exact
 * for valid JSON; for invalid text the answer does not matter (the parser refuses it).
 */
export function jsonDepthExceeds(text: string, limit: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    if (inString) {
      if (ch === 0x5c) i++; // a backslash escapes the next character
      else if (ch === 0x22) inString = false;
    } else if (ch === 0x22) inString = true;
    else if (ch === 0x5b || ch === 0x7b) {
      if (++depth > limit) return true;
    } else if (ch === 0x5d || ch === 0x7d) depth--;
  }
  return false;
}

/** A bad string in a parsed JSON value: its dotted path under `root` and what is wrong. */
export interface BadString {
  readonly field: string;
  readonly problem: string;
}

const shown = (segment: string): string => {
  const safe = segment.replace(BAD_CHARACTER, '?');
  return safe.length > SEGMENT_SHOWN ? `${safe.slice(0, SEGMENT_SHOWN)}…` : safe;
};

/** The first string (value or key) in `value` that `badCharacter` refuses, walking with an explicit stack. */
export function findBadString(value: unknown, root: string): BadString | undefined {
  const stack: Array<{ value: unknown; field: string }> = [{ value, field: root }];
  while (stack.length > 0) {
    const { value: v, field } = stack.pop()!;
    if (typeof v === 'string') {
      const why = badCharacter(v);
      if (why) return { field, problem: why };
    } else if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i--) stack.push({ value: v[i], field: `${field}.${i}` });
    } else if (typeof v === 'object' && v !== null) {
      const entries = Object.entries(v);
      for (const [key] of entries) {
        const why = badCharacter(key);
        if (why) return { field, problem: `a key ${why}` };
      }
      for (let i = entries.length - 1; i >= 0; i--) stack.push({ value: entries[i]![1], field: `${field}.${shown(entries[i]![0])}` });
    }
  }
  return undefined;
}

const refuse = (c: Context, bad: BadString) => problem(c, 'validation_failed', `${bad.field}: ${bad.problem}`);

/**
 * The middleware: checks the query string, then a JSON body (read once; the parsed
 * value is handed to the route's validator through Hono's body cache). Malformed JSON
 * is left to the validator, which names it. Runs after the body limit, so the text
 * read here is bounded.
 */
export function rejectBadInput(): MiddlewareHandler {
  return async (c, next) => {
    for (const [key, values] of Object.entries(c.req.queries())) {
      const keyWhy = badCharacter(key);
      if (keyWhy) return refuse(c, { field: 'query', problem: `a parameter name ${keyWhy}` });
      const bad = findBadString(values, `query.${key}`);
      if (bad) return refuse(c, { field: `query.${key}`, problem: bad.problem });
    }
    const method = c.req.method;
    if (method === 'GET' || method === 'HEAD' || !c.req.raw.body) return next();
    const mediaType = (c.req.header('content-type') ?? '').split(';')[0]!.trim();
    if (!JSON_MEDIA_TYPE.test(mediaType)) return next();
    const text = await c.req.text();
    if (jsonDepthExceeds(text, MAX_JSON_DEPTH)) {
      return problem(c, 'validation_failed', `body: JSON nested deeper than ${MAX_JSON_DEPTH} levels`);
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      return next();
    }
    const bad = findBadString(parsed, 'body');
    if (bad) return refuse(c, bad);
    c.req.bodyCache.json = Promise.resolve(parsed);
    return next();
  };
}
