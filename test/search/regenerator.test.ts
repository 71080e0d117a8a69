/** Regenerators: the built-in extractive one, and the chat-completions adapter against a fake local endpoint. */
import fc from 'fast-check';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  ChatRegenerator,
  ExtractiveRegenerator,
  MAX_ARTIFACT_TEXT_BYTES,
  type RegenerationInput,
  type RegenerationSource,
  sentences,
} from '../../src/artifacts/regenerator.js';
import { isLetheError, LetheError } from '../../src/errors.js';
import { MAX_ENTRY_TEXT_BYTES } from '../../src/log/service.js';
import { allMessages, type FakeServer, startFakeServer, thrown } from './fake-server.js';

function input(...texts: string[]): RegenerationInput {
  return { artifactId: 'art_test', kind: 'summary', sources: texts.map((text, i) => ({ id: `entry_${i}`, type: 'entry', text })) };
}

/** Whether `out` is pieces of the sources' texts joined by single spaces (nothing else in it). */
function madeOfSourcePieces(out: string, sources: readonly RegenerationSource[]): boolean {
  if (out === '') return true;
  const reachable = new Array<boolean>(out.length + 1).fill(false);
  reachable[0] = true;
  for (let start = 0; start < out.length; start++) {
    if (!reachable[start]) continue;
    for (let end = start + 1; end <= out.length; end++) {
      if (end < out.length && out[end] !== ' ') continue;
      const piece = out.slice(start, end);
      if (sources.some((s) => s.text.includes(piece))) reachable[end === out.length ? end : end + 1] = true;
    }
  }
  return reachable[out.length]!;
}

describe('sentences', () => {
  it('splits after . ! ? followed by space, and at line breaks, trimming each and dropping empty ones', () => {
    expect(sentences('Moved to Leeds. Works at the library!  Has a cat? yes\n\nlikes tea\n')).toEqual([
      'Moved to Leeds.',
      'Works at the library!',
      'Has a cat?',
      'yes',
      'likes tea',
    ]);
    expect(sentences('v1.2 is out. e.g.no split')).toEqual(['v1.2 is out.', 'e.g.no split']);
    expect(sentences('  \n ')).toEqual([]);
  });
});

describe('ExtractiveRegenerator', () => {
  it('keeps the first sentences of each source (four by default), sources in order', async () => {
    const r = new ExtractiveRegenerator();
    expect(r.name).toBe('lethe-extractive-v1-4');
    const out = await r.regenerate(input('One. Two. Three. Four. Five. Six.', 'Alpha! Beta? Gamma.'));
    expect(out).toBe('One. Two. Three. Four. Alpha! Beta? Gamma.');
  });

  it('keeps as many sentences per source as it is configured to', async () => {
    const r = new ExtractiveRegenerator({ sentencesPerSource: 1 });
    expect(r.name).toBe('lethe-extractive-v1-1');
    expect(await r.regenerate(input('Lives in Leeds. Has a cat.', 'Allergic to nuts.\nPlays chess.'))).toBe('Lives in Leeds. Allergic to nuts.');
  });

  it('refuses a sentence count that is not a positive integer', () => {
    for (const bad of [0, -2, 1.5, Number.NaN]) {
      let error: unknown;
      try {
        new ExtractiveRegenerator({ sentencesPerSource: bad });
      } catch (e) {
        error = e;
      }
      expect(isLetheError(error, 'validation_failed'), String(bad)).toBe(true);
    }
  });

  it("drops repeated sentences (ignoring case and spacing), and a repeat does not use up its source's quota", async () => {
    const r = new ExtractiveRegenerator({ sentencesPerSource: 2 });
    const out = await r.regenerate(input('Likes tea. Lives in Leeds. Has a dog.', 'likes   TEA. Lives in Leeds. Works nights. Plays chess.', 'Works nights.'));
    expect(out).toBe('Likes tea. Lives in Leeds. Works nights. Plays chess.');
  });

  it('answers the empty text for no sources or sources with no sentences', async () => {
    const r = new ExtractiveRegenerator();
    expect(await r.regenerate(input())).toBe('');
    expect(await r.regenerate(input('', '   \n'))).toBe('');
  });

  it('stays within the 64 KiB artifact limit, counted in UTF-8 bytes, giving every source its share', async () => {
    const r = new ExtractiveRegenerator();
    // each sentence is about 6 KB of two-byte characters: 3,000 characters, 6,000 bytes
    const sentence = (i: number) => `${i}: ${'é'.repeat(3000)}.`;
    const sources = Array.from({ length: 10 }, (_, s) => [0, 1, 2].map((j) => sentence(s * 3 + j)).join(' '));
    const out = await r.regenerate(input(...sources));
    const bytes = Buffer.byteLength(out, 'utf8');
    expect(bytes).toBeLessThanOrEqual(MAX_ARTIFACT_TEXT_BYTES);
    expect(out.length).toBeLessThan(MAX_ARTIFACT_TEXT_BYTES); // it counted bytes, not characters
    // a share is 6,553 bytes: room for each source's first sentence, whole, and no second one
    expect(sentences(out)).toEqual(Array.from({ length: 10 }, (_, s) => sentence(s * 3)));
  });

  it('a source whose one sentence cannot fit (a 64 KiB entry with no full stop) does not leave the artifact empty: the other sources still count', async () => {
    const r = new ExtractiveRegenerator();
    const huge = 'x'.repeat(MAX_ENTRY_TEXT_BYTES); // the largest entry the log accepts, one sentence
    const out = await r.regenerate(input(huge, 'Lives in Leeds. Has a cat.'));
    expect(Buffer.byteLength(out)).toBeLessThanOrEqual(MAX_ARTIFACT_TEXT_BYTES);
    expect(out).toContain('Lives in Leeds. Has a cat.');
  });

  it('answers two sentences that fit the limit together, whole', async () => {
    const r = new ExtractiveRegenerator({ sentencesPerSource: 1 });
    // 32,766 + 1 (space) + 32,768 bytes = 65,535
    const a = `${'a'.repeat(32765)}.`;
    const b = `${'b'.repeat(32767)}.`;
    const out = await r.regenerate(input(a, b));
    expect(out).toBe(`${a} ${b}`);
    expect(Buffer.byteLength(out)).toBeLessThanOrEqual(MAX_ARTIFACT_TEXT_BYTES);
  });

  const sourceText = fc
    .array(
      fc.oneof(
        fc.constantFrom('Lives in Leeds.', 'likes tea!', 'Works nights?', 'Has a cat', 'HAS  A CAT', '\n', ' ', '. ', 'é'),
        fc.string({ maxLength: 12 }),
      ),
      {
        maxLength: 12,
      },
    )
    .map((parts) => parts.join(''));
  const sourcesArb = fc.array(
    fc.record({ id: fc.string({ minLength: 1, maxLength: 5 }), type: fc.constantFrom<'entry' | 'artifact'>('entry', 'artifact'), text: sourceText }),
    { maxLength: 6 },
  );

  it('is deterministic: the same sources give the same text, in any instance', async () => {
    await fc.assert(
      fc.asyncProperty(sourcesArb, fc.integer({ min: 1, max: 5 }), async (sources, n) => {
        const i: RegenerationInput = { artifactId: 'art_x', kind: 'fact', sources };
        expect(await new ExtractiveRegenerator({ sentencesPerSource: n }).regenerate(i)).toBe(
          await new ExtractiveRegenerator({ sentencesPerSource: n }).regenerate(i),
        );
      }),
      { numRuns: 200 },
    );
  });

  it('never says anything its sources do not: its text is pieces of the sources joined by spaces', async () => {
    // the check itself tells text that is not in the sources
    const src = [{ id: 'e', type: 'entry' as const, text: 'Lives in Leeds. Has a cat.' }];
    expect(madeOfSourcePieces('Lives in Leeds. Has a cat.', src)).toBe(true);
    expect(madeOfSourcePieces('Lives in Paris. Has a cat.', src)).toBe(false);
    expect(madeOfSourcePieces('Has a dog.', src)).toBe(false);
    await fc.assert(
      fc.asyncProperty(sourcesArb, fc.integer({ min: 1, max: 5 }), async (sources, n) => {
        const out = await new ExtractiveRegenerator({ sentencesPerSource: n }).regenerate({ artifactId: 'art_x', kind: 'digest', sources });
        expect(madeOfSourcePieces(out, sources), JSON.stringify({ out, sources })).toBe(true);
      }),
      { numRuns: 300 },
    );
  });

  it("after a source is dropped, none of that source's own sentences remain", async () => {
    const r = new ExtractiveRegenerator();
    const kept = { id: 'entry_1', type: 'entry' as const, text: 'Prefers window seats. Drinks oat milk.' };
    const erased = { id: 'entry_2', type: 'entry' as const, text: 'Was treated for burnout in 2024. Sees a therapist weekly.' };
    const before = await r.regenerate({ artifactId: 'art_1', kind: 'summary', sources: [kept, erased] });
    expect(before).toContain('burnout');
    const after = await r.regenerate({ artifactId: 'art_1', kind: 'summary', sources: [kept] });
    expect(after).toBe('Prefers window seats. Drinks oat milk.');
    expect(after).not.toMatch(/burnout|therapist/);
  });
});

describe('ChatRegenerator against a local chat-completions endpoint', () => {
  let server: FakeServer;
  const sources: RegenerationSource[] = [
    { id: 'entry_aaa', type: 'entry', text: 'Moved to Leith in March.' },
    { id: 'art_bbb', type: 'artifact', text: 'Works nights as a nurse.\nLikes jazz.' },
  ];

  beforeAll(async () => {
    server = await startFakeServer();
  });
  afterAll(async () => {
    await server?.close();
  });
  beforeEach(() => {
    server.requests.length = 0;
    server.answer(() => ({
      status: 200,
      body: { id: 'c1', choices: [{ index: 0, message: { role: 'assistant', content: '  Lives in Leith; works nights.\n' } }] },
    }));
  });

  function regenerator(options: Partial<ConstructorParameters<typeof ChatRegenerator>[0]> = {}): ChatRegenerator {
    return new ChatRegenerator({ url: `${server.url}/`, model: 'small-chat', apiKey: 'sk-chat-key-456', timeoutMs: 5_000, ...options });
  }

  it('POSTs the model, temperature 0, a system instruction naming the kind and the numbered sources to /v1/chat/completions with the bearer key', async () => {
    const r = regenerator();
    expect(r.name).toBe('openai-chat:small-chat');
    await r.regenerate({ artifactId: 'art_1', kind: 'digest', sources });
    expect(server.requests.length).toBe(1);
    const [req] = server.requests;
    expect(req!.method).toBe('POST');
    expect(req!.url).toBe('/v1/chat/completions');
    expect(req!.headers.authorization).toBe('Bearer sk-chat-key-456');
    expect(req!.headers['content-type']).toBe('application/json');
    const body = req!.body as { model: string; temperature: number; messages: Array<{ role: string; content: string }> };
    expect(body.model).toBe('small-chat');
    expect(body.temperature).toBe(0);
    expect(body.messages.map((m) => m.role)).toEqual(['system', 'user']);
    expect(body.messages[0]!.content).toContain('digest');
    expect(body.messages[0]!.content).toMatch(/only facts stated in the sources/);
    expect(body.messages[1]!.content).toBe('[1] (entry entry_aaa)\nMoved to Leith in March.\n\n[2] (artifact art_bbb)\nWorks nights as a nurse.\nLikes jazz.');
  });

  it('sends no authorization header when it has no key', async () => {
    await regenerator({ apiKey: undefined }).regenerate({ artifactId: 'art_1', kind: 'summary', sources });
    expect(server.requests[0]!.headers.authorization).toBeUndefined();
  });

  it("answers the first choice's text, trimmed", async () => {
    expect(await regenerator().regenerate({ artifactId: 'art_1', kind: 'summary', sources })).toBe('Lives in Leith; works nights.');
  });

  const failures: Array<[string, () => void]> = [
    ['a 500', () => server.answer(() => ({ status: 500, body: { error: 'boom' } }))],
    ['a 429', () => server.answer(() => ({ status: 429, body: { error: 'slow down' } }))],
    ['a body that is not JSON', () => server.answer(() => ({ status: 200, body: '<html>', raw: true }))],
    ['no choices', () => server.answer(() => ({ status: 200, body: { choices: [] } }))],
    ['a choice with no message', () => server.answer(() => ({ status: 200, body: { choices: [{ index: 0 }] } }))],
    [
      'content that is not a string',
      () => server.answer(() => ({ status: 200, body: { choices: [{ message: { content: [{ type: 'text', text: 'x' }] } }] } })),
    ],
    ['blank content', () => server.answer(() => ({ status: 200, body: { choices: [{ message: { content: ' \n\t ' } }] } }))],
    [
      'content over 64 KiB',
      () => server.answer(() => ({ status: 200, body: { choices: [{ message: { content: 'x'.repeat(MAX_ARTIFACT_TEXT_BYTES + 1) } }] } })),
    ],
  ];

  for (const [what, arrange] of failures) {
    it(`maps ${what} to a retryable unavailable error`, async () => {
      arrange();
      const e = await thrown(() => regenerator().regenerate({ artifactId: 'art_1', kind: 'summary', sources }));
      expect(e).toBeInstanceOf(LetheError);
      expect((e as LetheError).code).toBe('unavailable');
      expect((e as LetheError).retryable).toBe(true);
    });
  }

  it('maps an endpoint that never answers to unavailable once its timeout passes', async () => {
    server.answer(() => 'hang');
    const e = await thrown(() => regenerator({ timeoutMs: 200 }).regenerate({ artifactId: 'art_1', kind: 'summary', sources }));
    expect(isLetheError(e, 'unavailable')).toBe(true);
  });

  it('maps an endpoint that refuses connections to unavailable', async () => {
    const gone = await startFakeServer();
    await gone.close();
    const e = await thrown(() => regenerator({ url: gone.url }).regenerate({ artifactId: 'art_1', kind: 'summary', sources }));
    expect(isLetheError(e, 'unavailable')).toBe(true);
  });

  it('never puts source text in an error, even when the endpoint echoes it back', async () => {
    const secret = { id: 'entry_s', type: 'entry' as const, text: 'Diagnosed with condition qx-5519 in May.' };
    const echoes: Array<() => void> = [
      () => server.answer((r) => ({ status: 400, body: { error: { message: `bad request: ${JSON.stringify(r.body)}` } } })),
      () => server.answer((r) => ({ status: 500, body: `upstream failed on ${JSON.stringify(r.body)}`, raw: true })),
      () => server.answer((r) => ({ status: 200, body: { choices: [{ message: { content: { echo: r.body } } }] } })),
      () => server.answer((r) => ({ status: 200, body: { choices: [{ message: { content: JSON.stringify(r.body).repeat(2000) } }] } })),
      () => server.answer(() => 'hang'),
    ];
    for (const arrange of echoes) {
      arrange();
      const e = await thrown(() => regenerator({ timeoutMs: 200 }).regenerate({ artifactId: 'art_1', kind: 'summary', sources: [secret] }));
      expect(isLetheError(e, 'unavailable')).toBe(true);
      expect(allMessages(e)).not.toContain('qx-5519');
      expect(JSON.stringify(e)).not.toContain('qx-5519');
    }
    expect(server.requests.every((r) => JSON.stringify(r.body).includes('qx-5519'))).toBe(true);
  });
});
