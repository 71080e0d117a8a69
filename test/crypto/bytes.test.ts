import { describe, expect, it } from 'vitest';
import { constantTimeEqual, fromBase64Url, toBase64Url, zeroize } from '../../src/crypto/index.js';

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
