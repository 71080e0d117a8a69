/**
 * Keyed shingles are computed with node:crypto's HMAC-SHA256 (OpenSSL); they must be
 * exactly what the crypto module's noble `KeyedHasher` gives, so that shingle sets at
 * rest (sealed beside every embedding) and probe fingerprints taken before the change
 * keep matching.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { KeyedHasher, randomBytes, utf8 } from '../../src/crypto/index.js';
import { contentWords, pairHash, ShingleHasher, shingleSet } from '../../src/vectors/shingles.js';

/** The shingles as the noble HMAC computes them: the first 53 bits of HMAC-SHA256(key, "w\0" + word). */
function referenceShingles(key: Uint8Array, text: string): { words: number[]; pairs: number[] } {
  const keyed = new KeyedHasher(key);
  try {
    const words = contentWords(text).map((w) => {
      const mac = keyed.hash(utf8.encode(`w\u0000${w}`));
      const hi = ((mac[0]! << 16) | (mac[1]! << 8) | mac[2]!) & ((1 << 21) - 1);
      const lo = ((mac[3]! << 24) | (mac[4]! << 16) | (mac[5]! << 8) | mac[6]!) >>> 0;
      return hi * 2 ** 32 + lo;
    });
    const pairs: number[] = [];
    for (let i = 0; i + 1 < words.length; i++) pairs.push(pairHash(words[i]!, words[i + 1]!));
    return { words, pairs };
  } finally {
    keyed.destroy();
  }
}

describe('keyed shingles', () => {
  it('node:crypto HMAC gives the same hashes as the noble KeyedHasher, for any text and key', () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 32, maxLength: 32 }), fc.string({ maxLength: 300, unit: 'grapheme' }), (key, text) => {
        const hasher = new ShingleHasher(key);
        try {
          expect(hasher.of(text)).toEqual(referenceShingles(key, text));
        } finally {
          hasher.destroy();
        }
      }),
      { numRuns: 300 },
    );
  });

  it('the same on real text with accents, digits and repeated words; the set is sorted and distinct', () => {
    const key = randomBytes(32);
    const text = 'Zoë moved to Lisbon in 2024; Zoë’s café near the río — moved again, moving on. 東京 の 住所 12-3';
    const hasher = new ShingleHasher(key);
    const got = hasher.of(text);
    expect(got).toEqual(referenceShingles(key, text));
    const set = hasher.setOf(text);
    expect([...set]).toEqual([...new Set([...got.words, ...got.pairs])].sort((a, b) => a - b));
    expect(set).toEqual(shingleSet(got));
    hasher.destroy();
    expect(() => hasher.of(text)).toThrow(/destroyed/);
  });
});
