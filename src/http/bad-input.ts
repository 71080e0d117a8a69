/**
 * Input no route may see, refused once for every route before routing: a JSON body
 * nested deeper than MAX_JSON_DEPTH (measured on the raw text, before JSON.parse
 * builds anything), and a string holding NUL (U+0000) or an unpaired UTF-16 surrogate
 * — as a value or as an object key anywhere in a JSON body, or in the query string.
 * PostgreSQL refuses both in text, and a deep body overflows whatever walks it
 * recursively. Path parameters are covered by their id patterns (src/ids.ts), which
 * admit neither.
 *
 * Both checks are iterative: nothing here recurses on untrusted input. The depth limit
 * and the string check are the entry schema's (src/log/payload.ts, which holds a
 * writer-sealed frame to the same rules); only the scan of raw text, which has to run
 * before JSON.parse, is the middleware's own.
 */
import type { IncomingMessage } from 'node:http';
import type { Context, MiddlewareHandler } from 'hono';
import { type BadString, MAX_JSON_DEPTH, badCharacter, findBadString } from '../log/payload.js';
import { problem } from './problem.js';

export { type BadString, MAX_JSON_DEPTH, badCharacter, findBadString };

const JSON_MEDIA_TYPE = /^application\/([\w.-]+\+)?json$/i;

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
      if (ch === 0x5c)
        i++; // a backslash escapes the next character
      else if (ch === 0x22) inString = false;
    } else if (ch === 0x22) inString = true;
    else if (ch === 0x5b || ch === 0x7b) {
      if (++depth > limit) return true;
    } else if (ch === 0x5d || ch === 0x7d) depth--;
  }
  return false;
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
    if (method === 'GET' || method === 'HEAD') return next();
    // On the Node server, tell a request without a body from its raw headers: asking the
    // Fetch Request for its body would make the adapter build one (with an AbortController)
    // for every call: about a tenth of a warm lease's CPU in the profile (docs/performance.md).
    const incoming = (c.env as { incoming?: IncomingMessage } | undefined)?.incoming;
    const headers = incoming?.headers;
    if (headers ? headers['transfer-encoding'] === undefined && Number(headers['content-length'] ?? 0) === 0 : !c.req.raw.body) return next();
    const mediaType = (c.req.header('content-type') ?? '').split(';')[0]!.trim();
    if (!JSON_MEDIA_TYPE.test(mediaType)) return next();
    const text = incoming && headers?.['transfer-encoding'] === undefined ? await readIncoming(incoming) : await c.req.text();
    (c.req.bodyCache as Record<string, unknown>).text = Promise.resolve(text);
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

/**
 * The body of a Node request whose length its headers gave (the body limit checked it),
 * read straight from the socket: through the Fetch Request the adapter would build one,
 * with its streams and abort signal, for every POST (about 0.3 ms a call on the 2-core
 * machine). Kept as the adapter's `rawBody`, so a Request built later still has it.
 */
async function readIncoming(incoming: IncomingMessage & { rawBody?: Buffer }): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of incoming) chunks.push(chunk as Buffer);
  incoming.rawBody = Buffer.concat(chunks);
  return incoming.rawBody.toString('utf8');
}
