/**
 * Every route of the OpenAPI document, fed arbitrary input: bodies that are arbitrary
 * JSON, raw text (10,000-deep nesting, numbers beyond any float, NUL and lone
 * surrogates as escapes, malformed JSON) or objects with the route's own field names
 * holding the wrong types and hostile strings; path parameters that are arbitrary
 * strings (lone surrogates percent-encoded as their WTF-8 bytes) or real ids; an
 * arbitrary query string; each role's token and none. Over the real app on the
 * embedded database: never a 5xx, and every 4xx is a complete problem+json document.
 *
 * Routes with side effects (rotate, destroy, erasures, backups) run for real on this
 * throwaway vault. The SSE route is included: a stream that opens is cancelled after
 * its first bytes, and every request has a deadline, so the test cannot hang.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestApp, type TestApp, type TestRole } from '../support/vault.js';

/** Runs per route: ~30 routes × 40 is about 15 s on the embedded database (200 each passed too, in 110 s). */
const RUNS_PER_ROUTE = 40;
const REQUEST_DEADLINE_MS = 15_000;

type Schema = {
  $ref?: string;
  type?: string | string[];
  properties?: Record<string, Schema>;
  items?: Schema;
  anyOf?: Schema[];
  oneOf?: Schema[];
  allOf?: Schema[];
};
interface Operation {
  readonly method: string;
  readonly template: string;
  readonly pathParams: readonly string[];
  /** The property names and declared types of the JSON body, when it has one. */
  readonly body: Map<string, string> | undefined;
}
interface OpenApiDoc {
  paths: Record<string, Record<string, { parameters?: Array<{ in: string; name: string }>; requestBody?: { content?: Record<string, { schema?: Schema }> } }>>;
  components?: { schemas?: Record<string, Schema> };
}

let t: TestApp;
let operations: Operation[] = [];
/** Real ids of each kind in this vault, so some requests get past validation to the handlers. */
const real: Record<string, string[]> = { key: [], entry: [], art: [], bak: [], ers: [] };

function resolve(doc: OpenApiDoc, schema: Schema | undefined, depth = 0): Schema | undefined {
  if (!schema || depth > 5) return schema;
  if (schema.$ref) return resolve(doc, doc.components?.schemas?.[schema.$ref.replace('#/components/schemas/', '')], depth + 1);
  const union = schema.allOf ?? schema.anyOf ?? schema.oneOf;
  if (union) {
    const properties: Record<string, Schema> = {};
    for (const s of union) Object.assign(properties, resolve(doc, s, depth + 1)?.properties);
    return { type: 'object', properties };
  }
  return schema;
}

function operationsOf(doc: OpenApiDoc): Operation[] {
  const out: Operation[] = [];
  for (const [template, ops] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(ops)) {
      const pathParams = (op.parameters ?? []).filter((p) => p.in === 'path').map((p) => p.name);
      const schema = resolve(doc, op.requestBody?.content?.['application/json']?.schema);
      const body = op.requestBody
        ? new Map(
            Object.entries(schema?.properties ?? {}).map(([name, s]) => {
              const r = resolve(doc, s);
              return [name, String(Array.isArray(r?.type) ? r.type[0] : (r?.type ?? 'unknown'))];
            }),
          )
        : undefined;
      out.push({ method: method.toUpperCase(), template, pathParams, body });
    }
  }
  return out;
}

/** Percent-encodes a string as WTF-8: a lone surrogate becomes its three bytes, which no UTF-8 decoder accepts. */
function encodeSegment(s: string): string {
  let out = '';
  for (let i = 0; i < s.length; i++) {
    const unit = s.charCodeAt(i);
    const next = s.charCodeAt(i + 1);
    if (unit >= 0xd800 && unit <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) {
      out += encodeURIComponent(s.slice(i, i + 2));
      i++;
    } else if (unit >= 0xd800 && unit <= 0xdfff) {
      out += [0xe0 | (unit >> 12), 0x80 | ((unit >> 6) & 0x3f), 0x80 | (unit & 0x3f)].map((b) => `%${b.toString(16).toUpperCase()}`).join('');
    } else out += encodeURIComponent(s[i]!);
  }
  return out;
}

/** Plausible strings: ids of every kind (real ones too), subjects, words. */
const plausibleString = fc.oneof(
  fc.constantFrom('key', 'entry', 'art', 'bak', 'ers', 'seg', 'exp').map((p) => `${p}_${'A'.repeat(22)}`),
  fc.constant(null).chain(() => fc.constantFrom('user:fuzz', 'log/seg_AAAAAAAAAAAAAAAAAAAAAA', 'summary', 'fact', 'gdpr-art17', ...Object.values(real).flat())),
  fc.string({ maxLength: 20 }),
);

/** A plausible string with NUL or a lone surrogate put somewhere in it: what PostgreSQL refuses in text. */
const poisonedString = fc.tuple(plausibleString, fc.constantFrom('\u0000', '\uD800', '\uDBFF', '\uDC00', '\uDFFF'), fc.nat()).map(([base, bad, at]) => {
  const i = base.length === 0 ? 0 : at % (base.length + 1);
  return `${base.slice(0, i)}${bad}${base.slice(i)}`;
});

/** Strings built to hurt: NUL, lone surrogates, huge, id-shaped, SQL- and path-shaped. */
const hostileString = fc.oneof(
  { weight: 4, arbitrary: poisonedString },
  { weight: 2, arbitrary: plausibleString },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 40 }) },
  { weight: 1, arbitrary: fc.constantFrom('😀', "'; drop table subject_keys; --", '../../etc/passwd', '%00', '{}', '', ' ', '\\u0000') },
  { weight: 1, arbitrary: fc.nat({ max: 3 }).map((n) => 'x'.repeat([256, 8193, 70_000, 300_000][n]!)) },
);
const hostileNumber = fc.oneof(fc.double(), fc.integer(), fc.constantFrom(0, -1, 1e308, -1e308, 2 ** 53 + 2, 2 ** 31, -(2 ** 31) - 1, 0.5, 1e-320));
const hostileValue: fc.Arbitrary<unknown> = fc.oneof(
  hostileString,
  hostileNumber,
  fc.boolean(),
  fc.constant(null),
  fc.array(hostileString, { maxLength: 5 }),
  fc.dictionary(hostileString, hostileString, { maxKeys: 4 }),
  fc.jsonValue({ maxDepth: 3 }),
);

/** A value for a declared field type: usually the type with hostile content, sometimes anything. */
function fieldValue(type: string): fc.Arbitrary<unknown> {
  const typed =
    type === 'string'
      ? hostileString
      : type === 'number' || type === 'integer'
        ? hostileNumber
        : type === 'array'
          ? fc.array(fc.oneof(hostileString, fc.dictionary(hostileString, hostileString, { maxKeys: 3 })), { minLength: 1, maxLength: 4 })
          : type === 'object'
            ? fc.dictionary(hostileString, hostileValue, { maxKeys: 4 })
            : hostileValue;
  return fc.oneof({ weight: 3, arbitrary: typed }, { weight: 1, arbitrary: hostileValue });
}

/** Raw body text: malformed, deep, huge numbers, escapes of NUL and surrogates. */
const rawBody = fc.oneof(
  fc.constantFrom(
    '',
    '{',
    'null',
    '[]',
    '"\\u0000"',
    '{"a":"\\ud800"}',
    '{"\\u0000":1}',
    '{"x":1e400,"k":-1e400,"count":123456789012345678901234567890}',
    '{"count":1e400,"k":1e309}',
    '{"a":1,"a":2}',
    '{"__proto__":{"admin":true}}',
  ),
  fc.nat({ max: 2 }).map((n) => {
    const depth = [33, 10_000, 100_000][n]!;
    return `{"metadata":${'{"a":'.repeat(depth)}1${'}'.repeat(depth)},"text":"x"}`;
  }),
  fc.nat({ max: 1 }).map((n) => (n === 0 ? `${'['.repeat(10_000)}${']'.repeat(10_000)}` : `{"keyIds":${'['.repeat(5000)}`)),
);

function bodyFor(op: Operation): fc.Arbitrary<string | undefined> {
  if (op.method === 'GET' || op.method === 'HEAD') return fc.constant(undefined); // fetch allows no body
  const fromFields =
    op.body && op.body.size > 0
      ? fc
          .tuple(...[...op.body].map(([name, type]) => fc.option(fieldValue(type), { nil: undefined }).map((v) => [name, v] as const)))
          .map((pairs) => JSON.stringify(Object.fromEntries(pairs.filter(([, v]) => v !== undefined))))
      : fc.constant('{}');
  return fc.oneof(
    { weight: 4, arbitrary: fromFields },
    { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 4 }).map((v) => JSON.stringify(v)) },
    { weight: 2, arbitrary: rawBody },
    { weight: 1, arbitrary: fc.constant(undefined) },
  );
}

const PREFIX_OF: Record<string, string> = { keyId: 'key', entryId: 'entry', artifactId: 'art', backupId: 'bak', erasureId: 'ers' };

function paramFor(name: string): fc.Arbitrary<string> {
  const ids = real[PREFIX_OF[name] ?? ''] ?? [];
  const good =
    name === 'subject' ? fc.constantFrom('user:fuzz', 'user:fuzz-erased', 'user:never-seen') : ids.length > 0 ? fc.constantFrom(...ids) : hostileString;
  return fc.oneof(
    { weight: 2, arbitrary: good.map(encodeSegment) },
    { weight: 3, arbitrary: fc.string({ unit: 'binary', minLength: 1, maxLength: 40 }).map(encodeSegment) },
    { weight: 1, arbitrary: fc.constantFrom('%00', '%ED%A0%80', '%2F', '%25', '..', 'x'.repeat(300), '%C0%80', '%FF') },
  );
}

const query = fc.oneof(
  { weight: 3, arbitrary: fc.constant('') },
  {
    weight: 1,
    arbitrary: fc
      .tuple(fc.string({ unit: 'binary', maxLength: 10 }), fc.string({ unit: 'binary', maxLength: 10 }))
      .map(([k, v]) => `?${encodeSegment(k)}=${encodeSegment(v)}`),
  },
  { weight: 1, arbitrary: fc.constantFrom('?after=%00', '?limit=-1', '?%00=1', '?a=%ED%A0%80', '?limit=1e400&limit=2') },
);

/** admin may call nearly every route: weighted so most requests get past authorization. */
const role = fc.oneof(
  { weight: 4, arbitrary: fc.constant<TestRole | 'none'>('admin') },
  { weight: 3, arbitrary: fc.constantFrom<TestRole | 'none'>('writer', 'backup', 'eraser', 'none') },
);

async function withDeadline<T>(what: string, work: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      work,
      new Promise<never>(
        (_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: no answer within ${REQUEST_DEADLINE_MS} ms`)), REQUEST_DEADLINE_MS)),
      ),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

beforeAll(async () => {
  t = await openTestApp({ embedded: true });
  const lease = (await (await t.call('POST', '/v1/subjects/user:fuzz/key/lease', { role: 'writer' })).json()) as { keyId: string };
  real.key!.push(lease.keyId);
  for (const subject of ['user:fuzz', 'user:fuzz-erased']) {
    const res = await t.call('POST', `/v1/subjects/${subject}/entries`, { role: 'writer', body: { text: `${subject} likes fuzzing`, metadata: { n: 1 } } });
    real.entry!.push(((await res.json()) as { entryId: string }).entryId);
  }
  const art = await t.call('POST', '/v1/artifacts', { role: 'writer', body: { kind: 'fact', text: 'a fact', sources: [real.entry![0]] } });
  real.art!.push(((await art.json()) as { artifactId: string }).artifactId);
  const erasure = await t.app.erasures.request({ subject: 'user:fuzz-erased' }, 'eraser');
  await t.app.erasures.settle(erasure.erasureId);
  real.ers!.push(erasure.erasureId);
  const backup = await t.call('POST', '/v1/backups', { role: 'backup' });
  const text = await backup.text();
  const id = /bak_[A-Za-z0-9_-]{22}/.exec(text)?.[0];
  if (id) real.bak!.push(id);
  const docRes = await t.call('GET', '/openapi.json', { role: 'none' });
  expect(docRes.status, await docRes.clone().text()).toBe(200);
  operations = operationsOf((await docRes.json()) as OpenApiDoc);
}, 120_000);

afterAll(async () => {
  await t?.close();
});

describe('arbitrary input on every route of the OpenAPI document', () => {
  it('the document lists the routes (the enumeration is not empty)', () => {
    expect(operations.length).toBeGreaterThan(25);
    expect(Object.values(real).every((ids) => ids.length > 0)).toBe(true);
  });

  it('never a 5xx; every refusal is a problem+json document', { timeout: 120_000 }, async () => {
    for (const op of operations) {
      const params = fc.tuple(...op.pathParams.map((name) => paramFor(name).map((v) => [name, v] as const)));
      await fc.assert(
        fc.asyncProperty(params, bodyFor(op), query, role, async (values, body, q, who) => {
          let path = op.template;
          for (const [name, value] of values) path = path.replace(`{${name}}`, value);
          path += q;
          const what = `${op.method} ${op.template} as ${who}: ${path.slice(0, 200)} ${body?.slice(0, 200) ?? '(no body)'}`;
          const res = await withDeadline(what, t.call(op.method, path, { role: who, ...(body !== undefined ? { rawBody: body } : {}) }));
          const type = res.headers.get('content-type') ?? '';
          if (type.startsWith('text/event-stream')) {
            await res.body?.cancel(); // an open stream: its first bytes are enough
            expect(res.status, what).toBe(200);
            return;
          }
          const text = await withDeadline(what, res.text());
          expect(res.status, `${what} → ${text.slice(0, 300)}`).toBeLessThan(500);
          if (res.status >= 400) {
            expect(type, what).toMatch(/^application\/problem\+json/);
            const problem = JSON.parse(text) as Record<string, unknown>;
            expect(problem, what).toMatchObject({
              type: expect.any(String),
              title: expect.any(String),
              status: res.status,
              detail: expect.any(String),
              code: expect.any(String),
            });
          }
        }),
        { numRuns: RUNS_PER_ROUTE, endOnFailure: true },
      );
    }
  });
});
