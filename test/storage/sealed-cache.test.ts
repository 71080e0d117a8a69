/** The sealed-object cache (src/storage/sealed-cache.ts): least recently used out first, within its budget. */
import { describe, expect, it } from 'vitest';
import { SealedCache } from '../../src/storage/sealed-cache.js';

const sealed = (n: number, fill: number) => new Uint8Array(n).fill(fill);

describe('SealedCache', () => {
  it('answers what it holds by name, and nothing for another name', () => {
    const cache = new SealedCache(1024);
    cache.set('seg-a:0:10', sealed(10, 1));
    expect(cache.get('seg-a:0:10')).toEqual(sealed(10, 1));
    expect(cache.get('seg-a:10:10')).toBeUndefined();
    expect(cache.get('seg-b:0:10')).toBeUndefined();
  });

  it('keeps within its budget, dropping the least recently used first', () => {
    const cache = new SealedCache(64 * 16);
    for (let i = 0; i < 4; i++) cache.set(`s${i}`, sealed(16, i));
    // s0 read again: s1 is now the least recently used
    cache.get('s0');
    for (let i = 4; i < 64 + 1; i++) cache.set(`s${i}`, sealed(16, i));
    expect(cache.bytes).toBeLessThanOrEqual(64 * 16);
    expect(cache.get('s1')).toBeUndefined();
    expect(cache.get('s0')).toEqual(sealed(16, 0));
    expect(cache.get('s64')).toEqual(sealed(16, 64));
  });

  it('never holds an object larger than 1/64 of its budget', () => {
    const cache = new SealedCache(64 * 16);
    cache.set('big', sealed(17, 9));
    expect(cache.get('big')).toBeUndefined();
    expect(cache.bytes).toBe(0);
  });
});
