import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { ContextValue } from '../../src/crypto/index.js';
import { encodeContext } from '../../src/crypto/index.js';
import { ascii, concatBytes, expectLetheError, hex } from './helpers.js';

const u16 = (n: number): Uint8Array => Uint8Array.of(n >>> 8, n & 0xff);
const u32 = (n: number): Uint8Array => Uint8Array.of(n >>> 24, (n >>> 16) & 0xff, (n >>> 8) & 0xff, n & 0xff);

describe('encodeContext format', () => {
  it('encodes a context exactly as documented: prefix, u16 purpose, u16 count, sorted u16-name/u32-value pairs', () => {
    const expected = concatBytes(
      ascii('lethe-ad/1'),
      u16(3),
      ascii('dek'),
      u16(2),
      u16(5),
      ascii('keyId'),
      u32(2),
      ascii('k1'),
      u16(7),
      ascii('subject'),
      u32(2),
      Uint8Array.of(0xc3, 0xa9), // "é" in UTF-8: lengths count bytes, not UTF-16 units
    );
    expect(hex(encodeContext('dek', { subject: 'é', keyId: 'k1' }))).toBe(hex(expected));
  });

  it('encodes a context without fields as prefix, purpose and a zero count, with or without the fields argument', () => {
    const expected = concatBytes(ascii('lethe-ad/1'), u16(5), ascii('epoch'), u16(0));
    expect(hex(encodeContext('epoch'))).toBe(hex(expected));
    expect(hex(encodeContext('epoch', {}))).toBe(hex(expected));
  });

  it('encodes numbers and bigints as their decimal text, the same as the equivalent string', () => {
    const asString = hex(encodeContext('frame', { seq: '42', epoch: '-3' }));
    expect(hex(encodeContext('frame', { seq: 42, epoch: -3 }))).toBe(asString);
    expect(hex(encodeContext('frame', { seq: 42n, epoch: -3n }))).toBe(asString);
  });
});

describe('encodeContext against the documented layout', () => {
  /** The layout read straight off the doc comment, piece by piece (Node's own UTF-8 encoder). */
  const reference = (purpose: string, fields: Record<string, ContextValue>): Uint8Array => {
    const enc = (t: string) => new Uint8Array(Buffer.from(t, 'utf8'));
    const parts = [ascii('lethe-ad/1'), u16(enc(purpose).length), enc(purpose), u16(Object.keys(fields).length)];
    for (const name of Object.keys(fields).sort()) {
      const value = enc(String(fields[name]));
      parts.push(u16(enc(name).length), enc(name), u32(value.length), value);
    }
    return concatBytes(...parts);
  };

  it('matches it for any purpose and fields, ASCII or not, cached names or new ones (property)', () => {
    const text = fc.oneof(fc.string({ maxLength: 24 }), fc.string({ unit: 'binary', maxLength: 12 }));
    const fields = fc.dictionary(text, fc.oneof(text, fc.integer(), fc.bigInt()), { maxKeys: 6 });
    fc.assert(
      fc.property(fc.string({ unit: 'binary', minLength: 1, maxLength: 10 }), fields, (purpose, record) => {
        expect(hex(encodeContext(purpose, record))).toBe(hex(reference(purpose, record)));
        // a second time: from the names it has encoded once
        expect(hex(encodeContext(purpose, record))).toBe(hex(reference(purpose, record)));
      }),
      { numRuns: 500 },
    );
  });
});

describe('encodeContext determinism', () => {
  it('returns the same bytes on every call', () => {
    const fields = { keyId: 'k1', seq: 9, subject: 'abc' };
    expect(hex(encodeContext('frame', fields))).toBe(hex(encodeContext('frame', fields)));
  });

  it('does not depend on the order of the keys in the fields object', () => {
    const a = encodeContext('frame', { a: '1', b: 2, c: 3n, keyId: 'k' });
    const b = encodeContext('frame', { keyId: 'k', c: 3n, b: 2, a: '1' });
    const c = encodeContext('frame', { c: 3n, a: '1', keyId: 'k', b: 2 });
    expect(hex(b)).toBe(hex(a));
    expect(hex(c)).toBe(hex(a));
  });

  it('does not depend on key order for arbitrary field sets (property)', () => {
    const fields = fc.dictionary(fc.string({ maxLength: 12 }), fc.oneof(fc.string({ maxLength: 20 }), fc.integer(), fc.bigInt()), {
      maxKeys: 8,
    });
    fc.assert(
      fc.property(fc.string({ minLength: 1, maxLength: 10 }), fields, fc.nat(), (purpose, record, seed) => {
        const entries = Object.entries(record);
        // A deterministic shuffle driven by the seed.
        const shuffled = entries
          .map((e, i) => ({ e, k: (i * 2654435761 + seed) % 1000003 }))
          .sort((x, y) => x.k - y.k)
          .map(({ e }) => e);
        const reordered = Object.fromEntries(shuffled.reverse()) as Record<string, ContextValue>;
        expect(hex(encodeContext(purpose, reordered))).toBe(hex(encodeContext(purpose, record)));
      }),
      { numRuns: 200 },
    );
  });
});

describe('encodeContext injectivity', () => {
  const cases: Array<[string, Record<string, ContextValue>]> = [
    ['dek', {}],
    ['deks', {}],
    ['de', {}],
    ['epoch-kek', {}],
    ['dek', { a: '' }],
    ['dek', { '': 'a' }],
    ['dek', { a: 'bc' }],
    ['dek', { ab: 'c' }],
    ['dek', { abc: '' }],
    ['dek', { a: 'b', c: '' }],
    ['dek', { a: 'b', c: 'd' }],
    ['dek', { a: 'b\x00\x01c\x00\x00\x00\x01d' }], // the encoded bytes of a second field, smuggled into a value
    ['dek', { a: 'b', cd: '' }],
    ['dek', { keyId: 'k1' }],
    ['dek', { keyid: 'k1' }],
    ['dek', { keyId: 'k2' }],
    ['dek', { keyId: 'k1 ' }],
    ['dek', { keyId: '01' }],
    ['dek', { keyId: '1' }],
    ['dekkeyId', { '': 'k1' }],
    ['frame', { keyId: 'k1' }],
    ['de', { k: '' }],
    ['d', { ek: '' }],
  ];

  it.each(cases.map((c, i) => [i, ...c] as const))('case %i (%s %o) encodes differently from every other case', (i, purpose, fields) => {
    const mine = hex(encodeContext(purpose, fields));
    cases.forEach(([otherPurpose, otherFields], j) => {
      if (j !== i) expect(hex(encodeContext(otherPurpose, otherFields)), `vs case ${j}`).not.toBe(mine);
    });
  });

  it('{a:"bc"} and {ab:"c"} encode differently', () => {
    expect(hex(encodeContext('dek', { a: 'bc' }))).not.toBe(hex(encodeContext('dek', { ab: 'c' })));
  });

  it('gives different contexts different bytes (property)', () => {
    const context = fc.tuple(
      fc.string({ minLength: 1, maxLength: 6 }),
      fc.dictionary(fc.string({ maxLength: 4 }), fc.string({ maxLength: 4 }), { maxKeys: 4 }),
    );
    const canonical = ([purpose, fields]: [string, Record<string, string>]): string =>
      JSON.stringify([purpose, Object.entries(fields).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))]);
    fc.assert(
      fc.property(context, context, (x, y) => {
        fc.pre(canonical(x) !== canonical(y));
        expect(hex(encodeContext(...x))).not.toBe(hex(encodeContext(...y)));
      }),
      { numRuns: 500 },
    );
  });
});

describe('encodeContext validation', () => {
  it.each([1.5, -0.25, Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, 2 ** 53, -(2 ** 53)])(
    'rejects the non-integer or unsafe number %s with validation_failed',
    (value) => {
      expectLetheError(() => encodeContext('frame', { seq: value }), 'validation_failed');
    },
  );

  it('accepts integers up to the safe limit and bigints beyond it', () => {
    expect(() => encodeContext('frame', { a: 0, b: -1, c: Number.MAX_SAFE_INTEGER, d: Number.MIN_SAFE_INTEGER })).not.toThrow();
    expect(hex(encodeContext('frame', { seq: 2n ** 64n }))).toBe(hex(encodeContext('frame', { seq: '18446744073709551616' })));
  });

  it('rejects an empty purpose with validation_failed', () => {
    expectLetheError(() => encodeContext(''), 'validation_failed');
  });

  it('rejects a purpose or field name longer than 65535 UTF-8 bytes with validation_failed', () => {
    expectLetheError(() => encodeContext('p'.repeat(65536)), 'validation_failed');
    expectLetheError(() => encodeContext('dek', { ['n'.repeat(65536)]: 'x' }), 'validation_failed');
    // 'é' is 2 bytes: 32768 of them exceed the limit although the string has only 32768 units.
    expectLetheError(() => encodeContext('dek', { ['é'.repeat(32768)]: 'x' }), 'validation_failed');
    expect(encodeContext('p'.repeat(65535)).length).toBe(10 + 2 + 65535 + 2);
  });

  it('accepts a field value longer than 65535 bytes (values have a u32 length)', () => {
    const encoded = encodeContext('dek', { v: 'x'.repeat(70000) });
    expect(encoded.length).toBe(10 + 2 + 3 + 2 + 2 + 1 + 4 + 70000);
  });
});
