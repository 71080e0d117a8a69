import { describe, expect, it } from 'vitest';
import { constantTimeEqual, fromBase64Url, randomBytes, toBase64Url, zeroize } from '../../src/crypto/index.js';

describe('byte helpers', () => {
  it('base64url round-trips without padding', () => {
    for (let n = 0; n < 40; n++) {
      const bytes = new Uint8Array(n).map((_, i) => (i * 37 + n) & 0xff);
      const text = toBase64Url(bytes);
      expect(text).not.toContain('=');
      expect(fromBase64Url(text)).toEqual(bytes);
    }
  });

  it('fromBase64Url refuses padding, other alphabets, impossible lengths and non-canonical text', () => {
    for (const bad of ['AA==', 'a+b/', 'A', 'AB', 'AP', 'ab cd']) expect(fromBase64Url(bad)).toBeUndefined();
    expect(fromBase64Url('AA')).toEqual(new Uint8Array([0]));
  });

  it('randomBytes (pooled for small requests) hands out each byte once, as its own buffer, across pool refills', () => {
    const seen = new Set<string>();
    const outs: Uint8Array[] = [];
    // 3,000 keys and nonces: several refills of the 4 KiB pool
    for (let i = 0; i < 3000; i++) {
      const n = i % 2 === 0 ? 32 : 24;
      const out = randomBytes(n);
      expect(out).toBeInstanceOf(Uint8Array);
      expect(out).toHaveLength(n);
      expect(out.byteOffset).toBe(0);
      expect(out.buffer.byteLength).toBe(n); // a copy, not a view of the pool
      seen.add(Buffer.from(out).toString('hex'));
      outs.push(out);
    }
    expect(seen.size).toBe(3000);
    // zeroing one never touches another
    zeroize(outs[0]!);
    expect(outs.slice(1).every((o) => o.some((b) => b !== 0))).toBe(true);
    // bytes look random: every value appears, none far too often
    const counts = new Array<number>(256).fill(0);
    for (const o of outs) for (const b of o) counts[b]!++;
    expect(Math.min(...counts)).toBeGreaterThan(0);
    expect(Math.max(...counts)).toBeLessThan((84_000 / 256) * 2);
    const large = randomBytes(1000);
    expect(large).toHaveLength(1000);
    expect(randomBytes(0)).toHaveLength(0);
  });

  it('zeroize clears every buffer it is given', () => {
    const a = new Uint8Array([1, 2, 3]);
    const b = new Uint8Array([4, 5]);
    zeroize(a, undefined, b);
    expect([...a, ...b]).toEqual([0, 0, 0, 0, 0]);
  });

  it('constantTimeEqual compares contents and lengths', () => {
    expect(constantTimeEqual(new Uint8Array([1, 2]), new Uint8Array([1, 2]))).toBe(true);
    expect(constantTimeEqual(new Uint8Array([1, 2]), new Uint8Array([1, 3]))).toBe(false);
    expect(constantTimeEqual(new Uint8Array([1, 2]), new Uint8Array([1, 2, 3]))).toBe(false);
  });
});
