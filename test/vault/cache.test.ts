import { describe, expect, it } from 'vitest';
import { DekCache } from '../../src/vault/cache.js';

const dek = (n: number) => new Uint8Array(32).fill(n);

describe('the DEK cache', () => {
  it('hands out copies, so zeroing a returned DEK leaves the cache intact', () => {
    const cache = new DekCache({ maxEntries: 4, maxAgeMs: 60_000 });
    cache.set('s1', 'k1', dek(1));
    const got = cache.get('s1')!;
    got.dek.fill(0);
    expect(cache.get('s1')!.dek).toEqual(dek(1));
  });

  it('keeps at most maxEntries, evicting the least recently used', () => {
    const cache = new DekCache({ maxEntries: 2, maxAgeMs: 60_000 });
    cache.set('s1', 'k1', dek(1));
    cache.set('s2', 'k2', dek(2));
    cache.get('s1');
    cache.set('s3', 'k3', dek(3));
    expect(cache.size).toBe(2);
    expect(cache.get('s2')).toBeUndefined();
    expect(cache.get('s1')?.keyId).toBe('k1');
    expect(cache.get('s3')?.keyId).toBe('k3');
  });

  it('has() says whether a live entry is held, without refreshing its recency or expiring it early', () => {
    let now = 1_000;
    const cache = new DekCache({ maxEntries: 2, maxAgeMs: 500, now: () => now });
    cache.set('s1', 'k1', dek(1));
    cache.set('s2', 'k2', dek(2));
    expect(cache.has('s1')).toBe(true);
    expect(cache.has('s3')).toBe(false);
    cache.set('s3', 'k3', dek(3)); // s1 is still the least recently used: has() did not touch it
    expect(cache.has('s1')).toBe(false);
    now += 500;
    expect(cache.has('s2')).toBe(false);
  });

  it('forgets entries older than maxAgeMs', () => {
    let now = 1_000;
    const cache = new DekCache({ maxEntries: 10, maxAgeMs: 500, now: () => now });
    cache.set('s1', 'k1', dek(1));
    now += 499;
    expect(cache.get('s1')).toBeDefined();
    now += 1;
    expect(cache.get('s1')).toBeUndefined();
    expect(cache.size).toBe(0);
  });

  it('zeroes the cached buffer when an entry is dropped, evicted or cleared', () => {
    const cache = new DekCache({ maxEntries: 1, maxAgeMs: 60_000 });
    const held: Uint8Array[] = [];
    const spy = (Uint8Array.prototype as { slice: (...a: number[]) => Uint8Array }).slice;
    // capture the internal copies by wrapping slice for the duration of set()
    const capture = (fn: () => void) => {
      (Uint8Array.prototype as { slice: unknown }).slice = function (this: Uint8Array, ...a: number[]) {
        const copy = spy.apply(this, a);
        held.push(copy);
        return copy;
      };
      try {
        fn();
      } finally {
        (Uint8Array.prototype as { slice: unknown }).slice = spy;
      }
    };
    capture(() => cache.set('s1', 'k1', dek(1)));
    capture(() => cache.set('s2', 'k2', dek(2))); // evicts s1
    expect(held[0]).toEqual(new Uint8Array(32));
    cache.dropKey('k2');
    expect(held[1]).toEqual(new Uint8Array(32));
    capture(() => cache.set('s3', 'k3', dek(3)));
    cache.clear();
    expect(held[2]).toEqual(new Uint8Array(32));
  });

  it('dropKey removes by key id and reports whether it held it', () => {
    const cache = new DekCache({ maxEntries: 10, maxAgeMs: 60_000 });
    cache.set('s1', 'k1', dek(1));
    cache.set('s1', 'k1b', dek(2)); // the subject's key changed
    expect(cache.dropKey('k1')).toBe(false);
    expect(cache.dropKey('k1b')).toBe(true);
    expect(cache.get('s1')).toBeUndefined();
  });

  it('a zero-sized cache stores nothing', () => {
    const cache = new DekCache({ maxEntries: 0, maxAgeMs: 60_000 });
    cache.set('s1', 'k1', dek(1));
    expect(cache.size).toBe(0);
  });
});
