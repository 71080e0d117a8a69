/** The sealed-frame cache (src/log/frame-cache.ts): least recently used out first, within its budget. */
import { describe, expect, it } from 'vitest';
import { FrameCache } from '../../src/log/frame-cache.js';

const frame = (n: number, fill: number) => new Uint8Array(n).fill(fill);

describe('FrameCache', () => {
  it('answers what it holds by segment and range, and nothing for another range of the same segment', () => {
    const cache = new FrameCache(1024);
    cache.set(FrameCache.keyOf('seg-a', 0, 10), frame(10, 1));
    expect(cache.get(FrameCache.keyOf('seg-a', 0, 10))).toEqual(frame(10, 1));
    expect(cache.get(FrameCache.keyOf('seg-a', 10, 10))).toBeUndefined();
    expect(cache.get(FrameCache.keyOf('seg-b', 0, 10))).toBeUndefined();
  });

  it('keeps within its budget, dropping the least recently used first', () => {
    const cache = new FrameCache(64 * 16);
    for (let i = 0; i < 4; i++) cache.set(FrameCache.keyOf(`s${i}`, 0, 16), frame(16, i));
    // s0 read again: s1 is now the least recently used
    cache.get(FrameCache.keyOf('s0', 0, 16));
    for (let i = 4; i < 64 + 1; i++) cache.set(FrameCache.keyOf(`s${i}`, 0, 16), frame(16, i));
    expect(cache.bytes).toBeLessThanOrEqual(64 * 16);
    expect(cache.get(FrameCache.keyOf('s1', 0, 16))).toBeUndefined();
    expect(cache.get(FrameCache.keyOf('s64', 0, 16))).toEqual(frame(16, 64));
  });

  it('never holds a frame larger than 1/64 of its budget', () => {
    const cache = new FrameCache(64 * 16);
    cache.set(FrameCache.keyOf('big', 0, 17), frame(17, 9));
    expect(cache.get(FrameCache.keyOf('big', 0, 17))).toBeUndefined();
    expect(cache.bytes).toBe(0);
  });
});
