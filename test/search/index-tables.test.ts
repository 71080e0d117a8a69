/**
 * The in-memory indexes' own tables, each against a plain Map under random sequences:
 * the vector index's id → slot table (open addressing over the slots' own ids), the key
 * filing (an id, an array, a set), and the lexical index's posting tables and set arena.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { IdTable } from '../../src/vectors/id-table.js';
import { KeyFiling } from '../../src/vectors/key-filing.js';
import { type Posting, PostingTable } from '../../src/vectors/posting-table.js';
import { SetArena } from '../../src/vectors/set-arena.js';

describe('IdTable', () => {
  it('agrees with a Map under any sequence of sets and deletes, through growth and probe runs', () => {
    const op = fc.record({ del: fc.boolean(), id: fc.integer({ min: 0, max: 2999 }) });
    fc.assert(
      fc.property(fc.array(op, { minLength: 2000, maxLength: 6000 }), (ops) => {
        const ids: Array<string | undefined> = [];
        const table = new IdTable((slot) => ids[slot]);
        const model = new Map<string, number>();
        for (const { del, id } of ops) {
          const name = `entry_${id}`;
          if (del) {
            const slot = model.get(name);
            expect(table.delete(name)).toBe(slot !== undefined);
            if (slot !== undefined) {
              model.delete(name);
              ids[slot] = undefined;
            }
          } else if (!model.has(name)) {
            const slot = ids.length;
            ids.push(name);
            table.set(name, slot);
            model.set(name, slot);
          }
        }
        expect(table.size).toBe(model.size);
        for (const [name, slot] of model) expect(table.get(name)).toBe(slot);
        for (let id = 0; id < 3000; id++) if (!model.has(`entry_${id}`)) expect(table.get(`entry_${id}`)).toBeUndefined();
      }),
      { numRuns: 40 },
    );
  });

  it('moves an id to another slot in place, and clear empties it', () => {
    const ids = ['a', 'b', 'a'];
    const table = new IdTable((slot) => ids[slot]);
    table.set('a', 0);
    table.set('b', 1);
    table.set('a', 2);
    expect([table.get('a'), table.get('b'), table.size]).toEqual([2, 1, 2]);
    table.clear();
    expect([table.get('a'), table.size]).toEqual([undefined, 0]);
  });
});

describe('KeyFiling', () => {
  it('agrees with a map of sets under any sequence, whatever form a key holds its ids in (one, an array, a set past 64)', () => {
    // mostly files, so that keys pass 64 ids; a key removed now and then
    const kind = fc.integer({ min: 0, max: 99 }).map((x) => (x < 75 ? 'file' : x < 98 ? 'unfile' : 'removeKey'));
    const op = fc.record({ kind, key: fc.integer({ min: 0, max: 3 }), id: fc.integer({ min: 0, max: 150 }) });
    fc.assert(
      fc.property(fc.array(op, { minLength: 300, maxLength: 1500 }), (ops) => {
        const filing = new KeyFiling();
        const model = new Map<string, Set<string>>();
        for (const { kind, key, id } of ops) {
          const k = `key_${key}`;
          const i = `entry_${id}`;
          if (kind === 'file') {
            filing.file(k, i);
            model.set(k, (model.get(k) ?? new Set()).add(i));
          } else if (kind === 'unfile') {
            filing.unfile(k, i);
            model.get(k)?.delete(i);
          } else {
            const removed: string[] = [];
            const n = filing.removeKey(k, (x) => removed.push(x) > 0);
            expect(removed.sort()).toEqual([...(model.get(k) ?? [])].sort());
            expect(n).toBe(removed.length);
            model.delete(k);
          }
        }
        for (let key = 0; key < 4; key++) {
          const k = `key_${key}`;
          const want = [...(model.get(k) ?? [])].sort();
          expect(filing.ids(k).sort()).toEqual(want);
          expect([...filing.each(k)].sort()).toEqual(want);
        }
      }),
      { numRuns: 60 },
    );
  });
});

describe('PostingTable', () => {
  it('agrees with a Map of postings under any sequence of sets (slots and lists, either replacing the other) and deletes', () => {
    // shingles as shingles.ts makes them (integers below 2^53), a few hundred of them so that runs form and the table grows
    const shingle = fc.integer({ min: 0, max: 399 }).map((i) => (i * 2654435761 * 1024 + i) % 2 ** 53);
    const posting = fc.oneof(fc.nat(1000), fc.array(fc.nat(1000), { minLength: 1, maxLength: 4 }));
    const op = fc.record({ del: fc.integer({ min: 0, max: 3 }).map((x) => x === 0), h: shingle, p: posting });
    fc.assert(
      fc.property(fc.array(op, { minLength: 500, maxLength: 3000 }), (ops) => {
        const table = new PostingTable();
        const model = new Map<number, Posting>();
        for (const { del, h, p } of ops) {
          if (del) expect(table.delete(h)).toBe(model.delete(h));
          else {
            table.set(h, p);
            model.set(h, p);
          }
        }
        expect(table.size).toBe(model.size);
        for (const [h, p] of model) expect(table.get(h)).toEqual(p);
        for (let i = 0; i < 400; i++) {
          const h = (i * 2654435761 * 1024 + i) % 2 ** 53;
          if (!model.has(h)) expect(table.get(h)).toBeUndefined();
        }
      }),
      { numRuns: 40 },
    );
  });

  it('hands back the list it was given, so a posting list grows in place', () => {
    const table = new PostingTable();
    const list = [1, 7];
    table.set(42, list);
    (table.get(42) as number[]).push(9);
    expect(table.get(42)).toEqual([1, 7, 9]);
    table.set(42, 3);
    expect(table.get(42)).toBe(3);
  });
});

describe('SetArena', () => {
  it('gives back each set as stored, across chunks and for a set larger than a chunk, and zeroes what it was given', () => {
    const arena = new SetArena();
    const expected: number[][] = [];
    // 3,000 sets of 1-99 shingles fill more than one chunk of 131,072; slot 1,500 holds one larger than a chunk
    for (let slot = 0; slot < 3000; slot++) {
      const n = slot === 1500 ? 200_000 : 1 + (slot % 99);
      const set = Float64Array.from({ length: n }, (_, i) => slot * 1_000_003 + i);
      expected.push(slot === 1500 ? [] : [...set]);
      arena.store(slot, set);
      expect(set.every((x) => x === 0)).toBe(true);
    }
    for (let slot = 0; slot < 3000; slot++) {
      const got = arena.at(slot);
      if (slot === 1500) expect([got.length, got[0], got[199_999]]).toEqual([200_000, 1500 * 1_000_003, 1500 * 1_000_003 + 199_999]);
      else expect([...got]).toEqual(expected[slot]);
    }
    const view = arena.at(7);
    arena.clear();
    expect(view.every((x) => x === 0)).toBe(true);
  });
});
