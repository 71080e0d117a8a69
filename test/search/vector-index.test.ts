/** The in-memory vector index: exact cosine search, replacement, removal by record and by key. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isLetheError } from '../../src/errors.js';
import { type RecordType, VectorIndex } from '../../src/vectors/vector-index.js';

const D = 8;

/** The unit vector along axis `i`. */
function axis(i: number, d = D): Float32Array {
  const v = new Float32Array(d);
  v[i] = 1;
  return v;
}

function vec(...values: number[]): Float32Array {
  const v = Float32Array.from(values);
  let n = 0;
  for (const x of v) n += x * x;
  n = Math.sqrt(n);
  return v.map((x) => x / n);
}

function dot(a: Float32Array, b: Float32Array): number {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i]! * b[i]!;
  return s;
}

describe('VectorIndex', () => {
  it('answers the nearest records best first, at most k of them, with their type and key', () => {
    const index = new VectorIndex(3);
    index.upsert('far', 'entry', 'key_a', vec(0, 0, 1));
    index.upsert('near', 'artifact', 'key_b', vec(1, 0.1, 0));
    index.upsert('middle', 'entry', 'key_a', vec(1, 1, 0));
    const q = vec(1, 0, 0);
    const hits = index.search(q, 3);
    expect(hits.map((h) => h.id)).toEqual(['near', 'middle', 'far']);
    expect(hits[0]).toMatchObject({ id: 'near', type: 'artifact', keyId: 'key_b' });
    expect(hits[1]).toMatchObject({ id: 'middle', type: 'entry', keyId: 'key_a' });
    expect(hits[0]!.score).toBeCloseTo(dot(q, vec(1, 0.1, 0)), 6);
    expect(hits[2]!.score).toBeCloseTo(0, 6);
    expect(index.search(q, 2).map((h) => h.id)).toEqual(['near', 'middle']);
    expect(index.search(q, 1).map((h) => h.id)).toEqual(['near']);
    expect(index.search(q, 50).length).toBe(3);
    expect(index.size).toBe(3);
  });

  it('answers nothing for k of zero or less, or an empty index', () => {
    const index = new VectorIndex(D);
    expect(index.search(axis(0), 5)).toEqual([]);
    index.upsert('a', 'entry', 'k', axis(0));
    expect(index.search(axis(0), 0)).toEqual([]);
    expect(index.search(axis(0), -3)).toEqual([]);
  });

  it('leaves out records the filter refuses, and still answers k of the others', () => {
    const index = new VectorIndex(D);
    for (let i = 0; i < D; i++) index.upsert(`r${i}`, i % 2 === 0 ? 'entry' : 'artifact', 'k', vec(...Array.from({ length: D }, (_, j) => (j === 0 ? 10 - i : 1))));
    const hits = index.search(axis(0), 3, (_id, type) => type === 'artifact');
    expect(hits.map((h) => h.id)).toEqual(['r1', 'r3', 'r5']);
  });

  it('searchWithin ranks only the records filed under the given keys or named by id, and answers k of them however near the others are', () => {
    const index = new VectorIndex(D);
    // Bob's records are all nearer the query than Alice's
    for (let i = 0; i < 50; i++) index.upsert(`bob${i}`, 'entry', 'key_bob', vec(...Array.from({ length: D }, (_, j) => (j === 0 ? 10 : j === 1 ? i / 100 : 0))));
    index.upsert('alice1', 'entry', 'key_alice', vec(1, 0, 1, 0, 0, 0, 0, 0));
    index.upsert('alice2', 'entry', 'key_alice', vec(1, 0, 0, 2, 0, 0, 0, 0));
    index.upsert('summary', 'artifact', 'key_version', vec(1, 0, 0, 0, 3, 0, 0, 0));
    expect(index.search(axis(0), 3).every((h) => h.id.startsWith('bob'))).toBe(true);
    expect(index.searchWithin(axis(0), 3, { keyIds: ['key_alice'] }).map((h) => h.id)).toEqual(['alice1', 'alice2']);
    expect(index.searchWithin(axis(0), 3, { keyIds: ['key_alice'], ids: ['summary', 'unknown'] }).map((h) => h.id)).toEqual(['alice1', 'alice2', 'summary']);
    expect(index.searchWithin(axis(0), 1, { keyIds: ['key_alice'], ids: ['summary'] })[0]).toMatchObject({ id: 'alice1', type: 'entry', keyId: 'key_alice' });
    expect(index.searchWithin(axis(0), 3, { keyIds: ['key_nobody'] })).toEqual([]);
    expect(index.searchWithin(axis(0), 3, {})).toEqual([]);
    // a destroyed key's records leave its scope too
    index.removeKey('key_alice');
    expect(index.searchWithin(axis(0), 3, { keyIds: ['key_alice'], ids: ['summary'] }).map((h) => h.id)).toEqual(['summary']);
  });

  it('refuses a vector or a query of the wrong dimensions', () => {
    const index = new VectorIndex(D);
    let error: unknown;
    try {
      index.upsert('a', 'entry', 'k', new Float32Array(D + 1));
    } catch (e) {
      error = e;
    }
    expect(isLetheError(error, 'internal')).toBe(true);
    expect(index.size).toBe(0);
    expect(() => index.search(new Float32Array(D - 1), 1)).toThrow(/dimensions/);
  });

  it('replacing a record moves its vector, type and key: one copy, found only where it now is', () => {
    const index = new VectorIndex(D);
    index.upsert('a', 'entry', 'key_old', axis(0));
    index.upsert('b', 'entry', 'key_old', axis(1));
    index.upsert('a', 'artifact', 'key_new', axis(2));
    expect(index.size).toBe(2);
    expect(index.idsOfKey('key_old')).toEqual(['b']);
    expect(index.idsOfKey('key_new')).toEqual(['a']);
    const [top] = index.search(axis(2), 1);
    expect(top).toMatchObject({ id: 'a', type: 'artifact', keyId: 'key_new', score: 1 });
    expect(index.search(axis(0), 2).find((h) => h.id === 'a')!.score).toBe(0);
    // destroying the old key no longer reaches the moved record
    expect(index.removeKey('key_old')).toBe(1);
    expect(index.has('a')).toBe(true);
  });

  it('keeps its own copy of a vector: changing the caller\'s array afterwards changes nothing', () => {
    const index = new VectorIndex(D);
    const v = axis(3);
    index.upsert('a', 'entry', 'k', v);
    v.fill(0);
    expect(index.search(axis(3), 1)[0]!.score).toBe(1);
  });

  it('remove drops one record and says whether it was there', () => {
    const index = new VectorIndex(D);
    index.upsert('a', 'entry', 'k1', axis(0));
    index.upsert('b', 'entry', 'k1', axis(1));
    expect(index.remove('a')).toBe(true);
    expect(index.remove('a')).toBe(false);
    expect(index.remove('never')).toBe(false);
    expect(index.has('a')).toBe(false);
    expect(index.size).toBe(1);
    expect(index.idsOfKey('k1')).toEqual(['b']);
    expect(index.search(axis(0), 5).map((h) => h.id)).toEqual(['b']);
  });

  it('removeKey drops every record filed under the key, counts them, and leaves other keys\' records', () => {
    const index = new VectorIndex(D);
    for (let i = 0; i < 6; i++) index.upsert(`r${i}`, 'entry', i < 4 ? 'doomed' : 'kept', axis(i));
    expect(index.idsOfKey('doomed').sort()).toEqual(['r0', 'r1', 'r2', 'r3']);
    expect(index.removeKey('doomed')).toBe(4);
    expect(index.removeKey('doomed')).toBe(0);
    expect(index.removeKey('unknown')).toBe(0);
    expect(index.idsOfKey('doomed')).toEqual([]);
    expect(index.size).toBe(2);
    for (let i = 0; i < 6; i++) {
      const [top] = index.search(axis(i), 1);
      if (i < 4) expect(top!.score, `r${i} is gone`).toBe(0);
      else expect(top).toMatchObject({ id: `r${i}`, keyId: 'kept', score: 1 });
    }
  });

  it('grows past its initial capacity and keeps every vector findable', () => {
    const d = 64;
    const index = new VectorIndex(d, 2);
    const n = 300;
    const vectors = Array.from({ length: n }, (_, i) => vec(...Array.from({ length: d }, (_, j) => Math.sin((i + 1) * (j + 1) * 0.37) + (j === i % d ? 3 : 0))));
    vectors.forEach((v, i) => index.upsert(`r${i}`, 'entry', `k${i % 7}`, v));
    expect(index.size).toBe(n);
    for (let i = 0; i < n; i++) {
      const [top] = index.search(vectors[i]!, 1);
      expect(top!.id).toBe(`r${i}`);
      expect(top!.score).toBeCloseTo(1, 5);
    }
  });

  it('also grows from an initial capacity of zero', () => {
    const index = new VectorIndex(D, 0);
    for (let i = 0; i < D; i++) index.upsert(`r${i}`, 'entry', 'k', axis(i));
    for (let i = 0; i < D; i++) expect(index.search(axis(i), 1)[0]!.id).toBe(`r${i}`);
  });

  it('clear empties it', () => {
    const index = new VectorIndex(D);
    index.upsert('a', 'entry', 'k', axis(0));
    index.clear();
    expect(index.size).toBe(0);
    expect(index.has('a')).toBe(false);
    expect(index.idsOfKey('k')).toEqual([]);
    expect(index.search(axis(0), 3)).toEqual([]);
    index.upsert('b', 'entry', 'k', axis(1));
    expect(index.search(axis(1), 3).map((h) => h.id)).toEqual(['b']);
  });

  it('agrees with a plain map of records under any sequence of upserts, removals and key removals', () => {
    type Op =
      | { op: 'upsert'; id: number; key: number; type: RecordType; v: number[] }
      | { op: 'remove'; id: number }
      | { op: 'removeKey'; key: number };
    // small integer components: dot products are exact in float32, so ties compare exactly
    const component = fc.integer({ min: -4, max: 4 });
    const op: fc.Arbitrary<Op> = fc.oneof(
      { weight: 5, arbitrary: fc.record({ op: fc.constant('upsert' as const), id: fc.nat(11), key: fc.nat(3), type: fc.constantFrom<RecordType>('entry', 'artifact'), v: fc.array(component, { minLength: D, maxLength: D }) }) },
      { weight: 2, arbitrary: fc.record({ op: fc.constant('remove' as const), id: fc.nat(11) }) },
      { weight: 1, arbitrary: fc.record({ op: fc.constant('removeKey' as const), key: fc.nat(3) }) },
    );
    fc.assert(
      fc.property(
        fc.array(op, { maxLength: 60 }),
        fc.array(component, { minLength: D, maxLength: D }),
        fc.integer({ min: 1, max: 14 }),
        fc.integer({ min: 0, max: 4 }),
        (ops, q, k, capacity) => {
          const index = new VectorIndex(D, capacity);
          const model = new Map<string, { key: string; type: RecordType; v: Float32Array }>();
          for (const o of ops) {
            if (o.op === 'upsert') {
              const v = Float32Array.from(o.v);
              index.upsert(`r${o.id}`, o.type, `k${o.key}`, v);
              model.set(`r${o.id}`, { key: `k${o.key}`, type: o.type, v });
            } else if (o.op === 'remove') {
              expect(index.remove(`r${o.id}`)).toBe(model.delete(`r${o.id}`));
            } else {
              const ids = [...model].filter(([, r]) => r.key === `k${o.key}`).map(([id]) => id);
              for (const id of ids) model.delete(id);
              expect(index.removeKey(`k${o.key}`)).toBe(ids.length);
            }
          }
          expect(index.size).toBe(model.size);
          for (let i = 0; i < 12; i++) expect(index.has(`r${i}`)).toBe(model.has(`r${i}`));
          for (let key = 0; key < 4; key++) {
            expect(index.idsOfKey(`k${key}`).sort()).toEqual([...model].filter(([, r]) => r.key === `k${key}`).map(([id]) => id).sort());
          }
          // every live record is still filed at its own vector
          for (const [id, r] of model) {
            const all = index.search(r.v, model.size);
            const hit = all.find((h) => h.id === id)!;
            expect(hit).toMatchObject({ keyId: r.key, type: r.type, score: dot(r.v, r.v) });
          }
          // the top k are the k best scores, best first
          const query = Float32Array.from(q);
          const hits = index.search(query, k);
          const expected = [...model.values()].map((r) => dot(r.v, query)).sort((a, b) => b - a).slice(0, k);
          expect(hits.map((h) => h.score)).toEqual(expected);
          for (const h of hits) expect(h.score).toBe(dot(model.get(h.id)!.v, query));
          expect(new Set(hits.map((h) => h.id)).size).toBe(hits.length);
          // scoped to some keys and some ids: exactly a search of the records in scope
          const keys = ['k0', 'k2'];
          const ids = ['r1', 'r4', 'r7', 'r40'];
          const inScope = (id: string) => keys.includes(model.get(id)!.key) || ids.includes(id);
          const scoped = index.searchWithin(query, k, { keyIds: keys, ids });
          expect(scoped).toEqual(index.search(query, k, (id) => inScope(id)));
          const scopedExpected = [...model].filter(([id]) => inScope(id)).map(([, r]) => dot(r.v, query)).sort((a, b) => b - a).slice(0, k);
          expect(scoped.map((h) => h.score)).toEqual(scopedExpected);
          // every key and every id: the same as the whole index
          expect(index.searchWithin(query, k, { keyIds: ['k0', 'k1', 'k2', 'k3'] })).toEqual(hits);
          expect(index.searchWithin(query, k, { ids: [...model.keys()] })).toEqual(hits);
        },
      ),
      { numRuns: 300 },
    );
  });
});
