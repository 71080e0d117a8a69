/**
 * The index rebuild on worker threads (src/vectors/open-pool.ts), on PostgreSQL and on
 * the embedded default (PGlite): the same indexes as a rebuild on the calling thread;
 * a worker that fails fails the rebuild, which swaps nothing in; and a key destroyed
 * while the workers open its rows never comes back — heard of meanwhile, or only
 * found in the destruction ledger at the end.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KeyService } from '../../src/vault/keys.js';
import { type SealedEmbedding, upsertEmbeddings } from '../../src/vectors/embeddings.js';
import type { Vectors } from '../../src/vectors/service.js';
import { openTestVault, type TestVault } from '../support/vault.js';
import { vectorsOn } from '../support/vectors.js';

const SUBJECTS = 4;
const PER_SUBJECT = 150;
const WORDS = [
  'harbour',
  'violin',
  'allergy',
  'mortgage',
  'glacier',
  'passport',
  'orchard',
  'insulin',
  'lantern',
  'tractor',
  'sonata',
  'visa',
  'ferry',
  'pollen',
];

function text(s: number, i: number): string {
  const w = (n: number) => WORDS[(s * 7 + i * n) % WORDS.length]!;
  return `Subject ${s} note ${i}: the ${w(1)} and the ${w(3)} near the ${w(5)}, ${w(11)} again on day ${i % 31}.`;
}

/** What an index holds, comparable: each record's key, vector and shingle set. */
function snapshot(vectors: Vectors): unknown {
  const ids = [...vectors.lexical.ids()].sort();
  return {
    size: vectors.index.size,
    records: ids.map((id) => ({
      id,
      key: vectors.index.keyOf(id),
      vector: Array.from(vectors.index.vectorOf(id) ?? []),
      shingles: Array.from(vectors.lexical.setAt(vectors.lexical.slotOf(id)!) ?? []),
    })),
  };
}

/** Hits best first, equal scores by id (the index keeps equal scores in load order). */
const byScoreThenId = <T extends { id: string; score: number }>(hits: readonly T[]): T[] =>
  [...hits].sort((x, y) => y.score - x.score || (x.id < y.id ? -1 : 1));

describe.each([
  ['PostgreSQL', false],
  ['PGlite', true],
])('the index rebuild on worker threads (%s)', (_name, embedded) => {
  let tv: TestVault;
  const keyOf: string[] = [];
  const idsOf: string[][] = [];

  /** A Vectors service on the test vault (it hears no destruction event), with `keys` standing in for the vault's key service. */
  const vectorsWith = (keys: KeyService = tv.app.keys) => vectorsOn(tv, keys);

  beforeAll(async () => {
    tv = await openTestVault({ embedded, app: { listen: false } });
    // one entry per subject through the log (its key), the rest sealed under the subject's key and inserted
    for (let s = 0; s < SUBJECTS; s++) {
      const { entryId, keyId } = await tv.app.log.append(`user:w${s}`, { text: text(s, 0) }, 'writer');
      keyOf.push(keyId);
      idsOf.push([entryId]);
      const { dek } = await tv.app.keys.dekFor(keyId);
      try {
        const sealed = await tv.app.vectors.seal(
          Array.from({ length: PER_SUBJECT - 1 }, (_, i) => ({
            recordId: `entry_w${s}x${String(i).padStart(18, '0')}`,
            recordType: 'entry' as const,
            text: text(s, i + 1),
          })),
          keyId,
          dek,
        );
        await upsertEmbeddings(
          tv.app.db.db,
          sealed.map(
            (e): SealedEmbedding => ({
              recordId: e.recordId,
              recordType: e.recordType,
              keyId: e.keyId,
              model: e.model,
              sealed: e.sealed,
              foldVersion: e.foldVersion,
            }),
          ),
        );
        idsOf[s]!.push(...sealed.map((e) => e.recordId));
      } finally {
        dek.fill(0);
      }
    }
  }, 180_000);
  afterAll(async () => {
    await tv?.close();
  });

  it('gives the same indexes and answers as a rebuild on the calling thread', async () => {
    const vectors = await vectorsWith();
    const single = await vectors.rebuild(97, { workers: 0 });
    expect(single).toMatchObject({ loaded: SUBJECTS * PER_SUBJECT, destroyed: 0, otherModel: 0, workers: 0 });
    const one = snapshot(vectors);
    const [query] = await vectors.embedder.embed([text(2, 5)]);
    const answers = vectors.index.search(query!, 10);
    const scoped = vectors.index.searchWithin(query!, 10, { keyIds: [keyOf[1]!] });

    const multi = await vectors.rebuild(97, { workers: 2 });
    expect(multi).toMatchObject({ loaded: SUBJECTS * PER_SUBJECT, destroyed: 0, otherModel: 0, workers: 2 });
    expect(snapshot(vectors)).toEqual(one);
    // records of equal score rank in the order they were loaded, which the workers do not fix: compared with ties ordered by id
    expect(byScoreThenId(vectors.index.search(query!, 10))).toEqual(byScoreThenId(answers));
    expect(byScoreThenId(vectors.index.searchWithin(query!, 10, { keyIds: [keyOf[1]!] }))).toEqual(byScoreThenId(scoped));
    await vectors.close();
  });

  it('a worker that fails fails the rebuild: the error surfaces, nothing is swapped in, and the next rebuild works', async () => {
    const vectors = await vectorsWith();
    await vectors.rebuild(97, { workers: 0 });
    const before = snapshot(vectors);
    const failing = vectors.rebuild(97, { workers: 2, workerScript: new URL('./failing-open-worker.mjs', import.meta.url) });
    expect(vectors.rebuilding).toBe(true);
    await expect(failing).rejects.toMatchObject({ code: 'internal', message: expect.stringMatching(/rebuild worker/) });
    expect(vectors.rebuilding).toBe(false);
    expect(snapshot(vectors)).toEqual(before);
    // one that fails as it starts, before it is ready
    const crashing = new URL(`data:text/javascript,${encodeURIComponent("throw new Error('this worker fails as it starts')")}`);
    await expect(vectors.rebuild(97, { workers: 2, workerScript: crashing })).rejects.toMatchObject({
      code: 'internal',
      message: expect.stringMatching(/rebuild worker/),
    });
    expect(vectors.rebuilding).toBe(false);
    expect(snapshot(vectors)).toEqual(before);
    expect(await vectors.rebuild(97, { workers: 2 })).toMatchObject({ loaded: SUBJECTS * PER_SUBJECT, workers: 2 });
    expect(snapshot(vectors)).toEqual(before);
    await vectors.close();
  });

  it('a key destroyed while the workers open its rows never comes back, whether this replica hears of it or finds it in the ledger', async () => {
    for (const heard of [true, false]) {
      const s = heard ? 2 : 3;
      const goneKey = keyOf[s]!;
      let vectors: Vectors | undefined;
      // the vault's key service, except that unwrapping the subject's key has another replica destroy it right after (the rows are read, the key in hand)
      const real = tv.app.keys;
      let armed = true;
      const keys = new Proxy(real, {
        get(target, prop) {
          if (prop === 'dekFor') {
            return async (keyId: string) => {
              const dek = await target.dekFor(keyId);
              if (keyId === goneKey && armed) {
                armed = false;
                await target.destroyKey(keyId, { reason: 'destroyed mid-rebuild', actor: 'admin' });
                // the destruction event reaching this replica while the workers open the rows
                if (heard) vectors!.removeKey(keyId);
              }
              return dek;
            };
          }
          const value = Reflect.get(target, prop) as unknown;
          return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
        },
      }) as KeyService;
      vectors = await vectorsWith(keys);
      // pages larger than a subject's rows: its rows were read before the destruction deleted them
      const result = await vectors.rebuild(1000, { workers: 2 });
      expect(armed).toBe(false);
      expect(vectors.index.idsOfKey(goneKey)).toEqual([]);
      for (const id of idsOf[s]!) {
        expect(vectors.index.has(id), id).toBe(false);
        expect(vectors.lexical.has(id), id).toBe(false);
      }
      const [query] = await vectors.embedder.embed([text(s, 3)]);
      expect(vectors.index.search(query!, 50).filter((h) => h.keyId === goneKey)).toEqual([]);
      expect(vectors.index.searchWithin(query!, 50, { keyIds: [goneKey], ids: idsOf[s]! })).toEqual([]);
      expect(result.loaded).toBeLessThanOrEqual(vectors.index.size + PER_SUBJECT);
      // a late publish of the destroyed key's record (a load that was decrypting it) is refused too
      vectors.publish([{ recordId: idsOf[s]![0]!, recordType: 'entry', keyId: goneKey, vector: new Float32Array(vectors.index.dimensions).fill(0.1) }]);
      expect(vectors.index.idsOfKey(goneKey)).toEqual([]);
      // and the next rebuild does not see them at all (their rows went with the key)
      const next = await vectors.rebuild(1000, { workers: 2 });
      expect(vectors.index.idsOfKey(goneKey)).toEqual([]);
      expect(next.loaded).toBe(vectors.index.size);
      await vectors.close();
    }
  });
});
