import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { open, parseEnvelope, seal } from '../../src/crypto/index.js';
import { LetheError } from '../../src/errors.js';
import { hex, thrownBy, throwsLetheError } from './helpers.js';

const RUNS = { numRuns: 150 };

const key = fc.uint8Array({ minLength: 32, maxLength: 32 });
const keyId = fc.string({
  unit: fc.integer({ min: 0x21, max: 0x7e }).map((c) => String.fromCharCode(c)),
  minLength: 1,
  maxLength: 255,
});
const plaintext = fc.uint8Array({ minLength: 0, maxLength: 4096 });
const associatedData = fc.uint8Array({ minLength: 0, maxLength: 256 });

const sealed = fc.record({ key, keyId, plaintext, associatedData }).map((input) => ({ ...input, envelope: seal(input) }));

describe('envelope properties', () => {
  it('opens every sealed envelope back to its plaintext, with the header naming its key id', () => {
    fc.assert(
      fc.property(sealed, ({ key, keyId, plaintext, associatedData, envelope }) => {
        expect(envelope.length).toBe(5 + keyId.length + 24 + 32 + plaintext.length + 16);
        expect(parseEnvelope(envelope).keyId).toBe(keyId);
        const opened = open({ key, envelope, associatedData, expectedKeyId: keyId });
        expect(hex(opened)).toBe(hex(plaintext));
      }),
      RUNS,
    );
  });

  it('rejects any single-byte mutation (random position, random non-zero xor) with a LetheError', () => {
    fc.assert(
      fc.property(sealed, fc.nat(), fc.integer({ min: 1, max: 255 }), ({ key, associatedData, envelope }, position, xor) => {
        const tampered = envelope.slice();
        const at = position % tampered.length;
        tampered[at] = tampered[at]! ^ xor;
        return throwsLetheError(() => open({ key, envelope: tampered, associatedData }));
      }),
      RUNS,
    );
  });

  it('rejects any truncation with a LetheError', () => {
    fc.assert(
      fc.property(sealed, fc.nat(), ({ key, associatedData, envelope }, cut) => {
        const truncated = envelope.slice(0, cut % envelope.length);
        return throwsLetheError(() => open({ key, envelope: truncated, associatedData }));
      }),
      RUNS,
    );
  });

  it('rejects any other key with key_commitment_mismatch', () => {
    fc.assert(
      fc.property(sealed, key, ({ key: right, associatedData, envelope }, wrong) => {
        fc.pre(hex(right) !== hex(wrong));
        return throwsLetheError(() => open({ key: wrong, envelope, associatedData }), ['key_commitment_mismatch']);
      }),
      RUNS,
    );
  });

  it('rejects any other associated data with decrypt_failed', () => {
    fc.assert(
      fc.property(sealed, associatedData, ({ key, associatedData: right, envelope }, wrong) => {
        fc.pre(hex(right) !== hex(wrong));
        return throwsLetheError(() => open({ key, envelope, associatedData: wrong }), ['decrypt_failed']);
      }),
      RUNS,
    );
  });

  // Arbitrary bytes, biased three ways so that every branch of the parser is reached:
  // pure noise, noise behind a plausible fixed header, and structurally valid envelopes.
  const printable = fc.integer({ min: 0x21, max: 0x7e });
  const anyBytes = fc.oneof(
    fc.uint8Array({ maxLength: 200 }),
    fc
      .tuple(fc.constantFrom(1, 1, 1, 0, 2, 255), fc.constantFrom(1, 1, 1, 0, 9), fc.uint8Array({ maxLength: 200 }))
      .map(([version, algorithm, rest]) => Uint8Array.of(0x4c, 0x45, version, algorithm, ...rest)),
    fc
      .tuple(fc.array(printable, { minLength: 0, maxLength: 40 }), fc.uint8Array({ minLength: 56, maxLength: 140 }))
      .map(([id, rest]) => Uint8Array.of(0x4c, 0x45, 1, 1, id.length, ...id, ...rest)),
  );

  it('parseEnvelope on arbitrary bytes returns parts consistent with the input or throws a LetheError', () => {
    let parsed = 0;
    fc.assert(
      fc.property(anyBytes, (bytes) => {
        const outcome = thrownBy(() => parseEnvelope(bytes));
        if (outcome.threw) {
          return outcome.error instanceof LetheError && (outcome.error.code === 'envelope_malformed' || outcome.error.code === 'envelope_unsupported');
        }
        parsed++;
        const parts = parseEnvelope(bytes);
        const idLength = bytes[4]!;
        expect(parts.version).toBe(1);
        expect(parts.algorithm).toBe(1);
        expect(parts.keyId.length).toBe(idLength);
        expect(idLength).toBeGreaterThanOrEqual(1);
        expect(parts.nonce.length).toBe(24);
        expect(parts.commitment.length).toBe(32);
        expect(parts.header.length).toBe(5 + idLength + 24 + 32);
        expect(parts.ciphertext.length).toBeGreaterThanOrEqual(16);
        expect(parts.header.length + parts.ciphertext.length).toBe(bytes.length);
        expect(hex(parts.header)).toBe(hex(bytes.subarray(0, parts.header.length)));
        expect(hex(parts.ciphertext)).toBe(hex(bytes.subarray(parts.header.length)));
        expect(parts.keyId).toBe(Buffer.from(bytes.subarray(5, 5 + idLength)).toString('latin1'));
        expect(hex(parts.nonce)).toBe(hex(bytes.subarray(5 + idLength, 29 + idLength)));
        expect(hex(parts.commitment)).toBe(hex(bytes.subarray(29 + idLength, 61 + idLength)));
        return true;
      }),
      { numRuns: 600 },
    );
    // The generator must actually reach the success branch, or the checks above prove nothing.
    expect(parsed).toBeGreaterThan(20);
  });

  it('open on arbitrary bytes throws a LetheError and never anything else', () => {
    fc.assert(
      fc.property(anyBytes, key, associatedData, (bytes, k, ad) => throwsLetheError(() => open({ key: k, envelope: bytes, associatedData: ad }))),
      { numRuns: 300 },
    );
  });
});
