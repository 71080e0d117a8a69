/** The built-in hashing embedder, and the OpenAI-compatible adapter against a fake local endpoint. */
import fc from 'fast-check';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { isLetheError, LetheError } from '../../src/errors.js';
import { HashingEmbedder, normalize, stem, tokenize } from '../../src/vectors/embedder.js';
import { OpenAiEmbedder } from '../../src/vectors/openai-embedder.js';
import { allMessages, type FakeServer, startFakeServer, thrown } from './fake-server.js';

function dot(a: Float32Array, b: Float32Array): number {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i]! * b[i]!;
  return s;
}

function norm(a: Float32Array): number {
  return Math.sqrt(dot(a, a));
}

describe('tokenize and stem', () => {
  it('tokenize lowercases, drops accents and punctuation, and keeps letters and digits of any script', () => {
    expect(tokenize('Moved to 22 Harbour-Street, Leith!')).toEqual(['moved', 'to', '22', 'harbour', 'street', 'leith']);
    expect(tokenize('Café in Münster — São Paulo')).toEqual(['cafe', 'in', 'munster', 'sao', 'paulo']);
    // other scripts keep their words; letters that look like Latin ones fold to them (src/vectors/fold.ts)
    expect(tokenize('東京 ΑΘΗΝΑ')).toEqual(['東京', 'aohna']);
    expect(tokenize(' ...?! ')).toEqual([]);
  });

  it("stem is Porter's: inflections of a word meet at one stem", () => {
    expect(stem('moving')).toBe(stem('moved'));
    expect(stem('relocation')).toBe(stem('relocating'));
    expect(stem('parties')).toBe(stem('party'));
    expect(stem('cats')).toBe('cat');
    expect(stem('happiness')).toBe('happi');
    expect(stem('lisbon')).toBe('lisbon');
    // different words keep different stems
    expect(stem('live')).not.toBe(stem('like'));
  });

  it('stem never grows a word and never empties one', () => {
    fc.assert(
      fc.property(fc.stringMatching(/^[a-z]{1,12}$/), (word) => {
        const s = stem(word);
        expect(s.length).toBeGreaterThan(0);
        expect(s.length).toBeLessThanOrEqual(word.length);
      }),
    );
  });
});

describe('HashingEmbedder', () => {
  it('has the configured dimensions and names its model by them (512 by default)', async () => {
    const small = new HashingEmbedder(64);
    expect(small.dimensions).toBe(64);
    expect(small.model).toBe('lethe-hash-v3-64');
    const [v] = await small.embed(['prefers window seats']);
    expect(v).toBeInstanceOf(Float32Array);
    expect(v!.length).toBe(64);
    const standard = new HashingEmbedder();
    expect(standard.dimensions).toBe(512);
    expect(standard.model).toBe('lethe-hash-v3-512');
    expect(standard.embedOne('prefers window seats').length).toBe(512);
  });

  it('refuses dimensions that are not an integer from 16 to 4096', () => {
    for (const bad of [0, -1, 15, 4097, 100.5, Number.NaN, Number.POSITIVE_INFINITY]) {
      let error: unknown;
      try {
        new HashingEmbedder(bad);
      } catch (e) {
        error = e;
      }
      expect(isLetheError(error, 'validation_failed'), `dimensions ${bad}`).toBe(true);
    }
    expect(new HashingEmbedder(16).dimensions).toBe(16);
    expect(new HashingEmbedder(4096).dimensions).toBe(4096);
  });

  it('is deterministic: the same text gives the same vector in every call and every instance', async () => {
    const text = 'Moved to Lisbon in March; works as a translator.';
    const a = new HashingEmbedder();
    const b = new HashingEmbedder();
    const [first] = await a.embed([text]);
    const [second] = await a.embed([text]);
    expect(Array.from(second!)).toEqual(Array.from(first!));
    expect(Array.from(b.embedOne(text))).toEqual(Array.from(first!));
    fc.assert(
      fc.property(fc.string({ maxLength: 200 }), (t) => {
        expect(Array.from(b.embedOne(t))).toEqual(Array.from(a.embedOne(t)));
      }),
      { numRuns: 200 },
    );
  });

  it('embeds a batch as one vector per text, in order', async () => {
    const e = new HashingEmbedder(128);
    const texts = ['allergic to peanuts', 'plays bass in a jazz trio', 'allergic to peanuts', ''];
    const vectors = await e.embed(texts);
    expect(vectors.length).toBe(4);
    texts.forEach((t, i) => {
      expect(Array.from(vectors[i]!)).toEqual(Array.from(e.embedOne(t)));
    });
    expect(await e.embed([])).toEqual([]);
  });

  it('gives unit-length vectors for any text with a word in it', () => {
    const e = new HashingEmbedder(96);
    fc.assert(
      fc.property(fc.string({ maxLength: 300 }), fc.constantFrom('zebra', 'Lisbon', 'café', '42', '東京'), (text, word) => {
        const v = e.embedOne(`${text} ${word}`);
        expect(Math.abs(norm(v) - 1)).toBeLessThan(1e-5);
        expect(v.every(Number.isFinite)).toBe(true);
      }),
      { numRuns: 300 },
    );
  });

  it('gives the zero vector, not NaN, for a text with no content words', () => {
    const e = new HashingEmbedder();
    for (const t of ['', '   ', '?!...', 'the and of to it']) {
      const v = e.embedOne(t);
      expect(
        v.every((x) => x === 0),
        JSON.stringify(t),
      ).toBe(true);
    }
  });

  it('scores a text against itself at 1', () => {
    const e = new HashingEmbedder();
    const v = e.embedOne('keeps a saltwater aquarium with clownfish');
    expect(dot(v, v)).toBeCloseTo(1, 5);
  });

  it('scores texts sharing words and stems higher than unrelated ones', () => {
    const e = new HashingEmbedder();
    const pairs: Array<[string, string, string]> = [
      ['Moved to Lisbon last spring', 'relocating to lisbon', 'allergic to shellfish'],
      ['Plays bass guitar in a jazz trio', 'she played guitar in jazz bands', 'renewing a passport next month'],
      ['Allergic to peanuts and tree nuts', 'peanut allergy', 'drives a blue Toyota Corolla'],
      ['Training for the Berlin marathon', 'runs marathons; trained in Berlin', 'vegetarian, no fish or eggs'],
    ];
    for (const [anchor, similar, unrelated] of pairs) {
      const a = e.embedOne(anchor);
      const near = dot(a, e.embedOne(similar));
      const far = dot(a, e.embedOne(unrelated));
      expect(near, `${anchor} ~ ${similar}`).toBeGreaterThan(far);
      expect(near).toBeGreaterThan(0.2);
    }
  });

  it('ignores case, accents and stop words', () => {
    const e = new HashingEmbedder();
    expect(Array.from(e.embedOne('Moved to the CAFÉ in Lisbon'))).toEqual(Array.from(e.embedOne('moved cafe lisbon')));
  });
});

describe('normalize', () => {
  it('scales a vector to unit length in place and leaves the zero vector alone', () => {
    const v = Float32Array.from([3, 4, 0]);
    const out = normalize(v);
    expect(out).toBe(v);
    expect(Array.from(out)).toEqual([0.6000000238418579, 0.800000011920929, 0]);
    expect(Array.from(normalize(new Float32Array(3)))).toEqual([0, 0, 0]);
  });
});

describe('OpenAiEmbedder against a local OpenAI-compatible endpoint', () => {
  let server: FakeServer;
  const DIMS = 4;

  /** An answer with one vector per input, each [i+1, 0, 0, 0] scaled. */
  function vectorsFor(input: unknown): Array<{ index: number; embedding: number[] }> {
    return (input as string[]).map((_, i) => ({ index: i, embedding: [3 * (i + 1), 4 * (i + 1), 0, 0] }));
  }

  beforeAll(async () => {
    server = await startFakeServer();
  });
  afterAll(async () => {
    await server?.close();
  });
  beforeEach(() => {
    server.requests.length = 0;
    server.answer((r) => ({ status: 200, body: { object: 'list', data: vectorsFor((r.body as { input: unknown }).input), model: 'm' } }));
  });

  function embedder(options: Partial<ConstructorParameters<typeof OpenAiEmbedder>[0]> = {}): OpenAiEmbedder {
    return new OpenAiEmbedder({ url: server.url, model: 'text-embed-small', apiKey: 'sk-test-key-123', dimensions: DIMS, timeoutMs: 5_000, ...options });
  }

  it('POSTs {model, input} to /v1/embeddings with the bearer key, and names its vector space by the model', async () => {
    const e = embedder({ url: `${server.url}//` });
    expect(e.model).toBe('openai:text-embed-small');
    expect(e.dimensions).toBe(DIMS);
    await e.embed(['first text', 'second text']);
    expect(server.requests.length).toBe(1);
    const [req] = server.requests;
    expect(req!.method).toBe('POST');
    expect(req!.url).toBe('/v1/embeddings');
    expect(req!.headers.authorization).toBe('Bearer sk-test-key-123');
    expect(req!.headers['content-type']).toBe('application/json');
    expect(req!.body).toEqual({ model: 'text-embed-small', input: ['first text', 'second text'] });
  });

  it('sends each text with its disguises undone (zero-width characters dropped, look-alike letters as the Latin they imitate), case and accents kept', async () => {
    await embedder().embed(['Wаl\u200bter\u00ad kеeps the café key']);
    expect(server.requests[0]!.body).toEqual({ model: 'text-embed-small', input: ['Walter keeps the café key'] });
  });

  it('sends no authorization header when it has no key', async () => {
    await embedder({ apiKey: undefined }).embed(['x']);
    expect(server.requests[0]!.headers.authorization).toBeUndefined();
  });

  it('answers unit-length vectors, one per input, placed by the index the endpoint gives', async () => {
    server.answer(() => ({
      status: 200,
      body: {
        data: [
          { index: 1, embedding: [0, 0, 5, 0] },
          { index: 0, embedding: [3, 4, 0, 0] },
        ],
      },
    }));
    const [a, b] = await embedder().embed(['zero', 'one']);
    expect(Array.from(a!)).toEqual([0.6000000238418579, 0.800000011920929, 0, 0]);
    expect(Array.from(b!)).toEqual([0, 0, 1, 0]);
  });

  it('asks nothing for no texts', async () => {
    expect(await embedder().embed([])).toEqual([]);
    expect(server.requests.length).toBe(0);
  });

  const failures: Array<[string, () => void]> = [
    ['a 500', () => server.answer(() => ({ status: 500, body: { error: 'boom' } }))],
    ['a 401', () => server.answer(() => ({ status: 401, body: { error: { message: 'bad key' } } }))],
    ['a body that is not JSON', () => server.answer(() => ({ status: 200, body: 'not json', raw: true }))],
    ['no data', () => server.answer(() => ({ status: 200, body: { object: 'list' } }))],
    ['fewer vectors than inputs', () => server.answer((r) => ({ status: 200, body: { data: vectorsFor((r.body as { input: unknown[] }).input).slice(1) } }))],
    [
      'more vectors than inputs',
      () =>
        server.answer((r) => ({ status: 200, body: { data: [...vectorsFor((r.body as { input: unknown[] }).input), { index: 9, embedding: [1, 0, 0, 0] }] } })),
    ],
    [
      'vectors of the wrong dimensions',
      () =>
        server.answer(() => ({
          status: 200,
          body: {
            data: [
              { index: 0, embedding: [1, 2, 3] },
              { index: 1, embedding: [1, 2, 3] },
            ],
          },
        })),
    ],
    [
      'non-numbers in a vector',
      () =>
        server.answer(() => ({
          status: 200,
          body: {
            data: [
              { index: 0, embedding: [1, '2', 3, 4] },
              { index: 1, embedding: [1, 2, null, 4] },
            ],
          },
        })),
    ],
    [
      'a vector that is not an array',
      () =>
        server.answer(() => ({
          status: 200,
          body: {
            data: [
              { index: 0, embedding: 'AAAA' },
              { index: 1, embedding: {} },
            ],
          },
        })),
    ],
    ['entries that are null instead of objects', () => server.answer(() => ({ status: 200, body: { data: [null, null] } }))],
    [
      'the same index twice',
      () =>
        server.answer(() => ({
          status: 200,
          body: {
            data: [
              { index: 0, embedding: [1, 0, 0, 0] },
              { index: 0, embedding: [0, 1, 0, 0] },
            ],
          },
        })),
    ],
    [
      'a fractional index',
      () =>
        server.answer(() => ({
          status: 200,
          body: {
            data: [
              { index: 0.5, embedding: [1, 0, 0, 0] },
              { index: 1, embedding: [0, 1, 0, 0] },
            ],
          },
        })),
    ],
    [
      'an index out of range',
      () =>
        server.answer(() => ({
          status: 200,
          body: {
            data: [
              { index: 0, embedding: [1, 0, 0, 0] },
              { index: 2, embedding: [0, 1, 0, 0] },
            ],
          },
        })),
    ],
  ];

  for (const [what, arrange] of failures) {
    it(`maps ${what} to a retryable unavailable error`, async () => {
      arrange();
      const e = await thrown(() => embedder().embed(['first text', 'second text']));
      expect(e).toBeInstanceOf(LetheError);
      expect((e as LetheError).code).toBe('unavailable');
      expect((e as LetheError).retryable).toBe(true);
    });
  }

  it('maps an endpoint that never answers to unavailable once its timeout passes', async () => {
    server.answer(() => 'hang');
    const e = await thrown(() => embedder({ timeoutMs: 200 }).embed(['anything']));
    expect(isLetheError(e, 'unavailable')).toBe(true);
    expect(server.requests.length).toBe(1);
  });

  it('maps an endpoint that refuses connections to unavailable', async () => {
    const gone = await startFakeServer();
    await gone.close();
    const e = await thrown(() => embedder({ url: gone.url }).embed(['anything']));
    expect(isLetheError(e, 'unavailable')).toBe(true);
  });

  it('never puts the input text in an error, even when the endpoint echoes it back', async () => {
    const secret = 'subject 42 is being treated for a rare condition zq-7781';
    const echoes: Array<() => void> = [
      () => server.answer((r) => ({ status: 400, body: { error: { message: `cannot embed ${JSON.stringify(r.body)}` } } })),
      () => server.answer((r) => ({ status: 422, body: `invalid input: ${JSON.stringify(r.body)}`, raw: true })),
      () => server.answer((r) => ({ status: 200, body: { data: [{ index: 0, embedding: [1, 2] }], echo: (r.body as { input: unknown }).input } })),
      () => server.answer((r) => ({ status: 200, body: { data: [{ index: 0, embedding: (r.body as { input: unknown }).input }] } })),
      () => server.answer(() => 'hang'),
    ];
    for (const arrange of echoes) {
      arrange();
      const e = await thrown(() => embedder({ timeoutMs: 200 }).embed([secret]));
      expect(isLetheError(e, 'unavailable')).toBe(true);
      expect(allMessages(e)).not.toContain('zq-7781');
      expect(JSON.stringify(e)).not.toContain('zq-7781');
    }
    expect(server.requests.every((r) => JSON.stringify(r.body).includes('zq-7781'))).toBe(true);
  });
});
