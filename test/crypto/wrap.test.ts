import { describe, expect, it } from 'vitest';
import { encodeContext, envelopeKeyId, open, parseEnvelope, seal, unwrapKey, wrapKey } from '../../src/crypto/index.js';
import { expectLetheError, hex, seq } from './helpers.js';

const KEK = seq(32, 0x20);
const OTHER_KEK = seq(32, 0x21);
const DEK = seq(32, 0xc0);
const KEK_ID = 'kek-3';
const DEK_ID = 'dek-subject-42';

const wrapped = wrapKey({ kek: KEK, kekId: KEK_ID, dek: DEK, keyId: DEK_ID });

describe('wrapKey / unwrapKey', () => {
  it('unwraps back to the original data key', () => {
    const dek = unwrapKey({ kek: KEK, kekId: KEK_ID, wrapped, keyId: DEK_ID });
    expect(hex(dek)).toBe(hex(DEK));
  });

  it('produces an envelope naming the KEK id, holding 32 bytes, bound to context ("dek", {keyId})', () => {
    expect(envelopeKeyId(wrapped)).toBe(KEK_ID);
    expect(parseEnvelope(wrapped).ciphertext.length).toBe(32 + 16);
    const viaOpen = open({ key: KEK, envelope: wrapped, associatedData: encodeContext('dek', { keyId: DEK_ID }) });
    expect(hex(viaOpen)).toBe(hex(DEK));
  });

  it('fails with decrypt_failed when unwrapped for a different key id (the associated data)', () => {
    expectLetheError(() => unwrapKey({ kek: KEK, kekId: KEK_ID, wrapped, keyId: 'dek-subject-43' }), 'decrypt_failed');
  });

  it('fails with key_commitment_mismatch when unwrapped with a different KEK', () => {
    expectLetheError(() => unwrapKey({ kek: OTHER_KEK, kekId: KEK_ID, wrapped, keyId: DEK_ID }), 'key_commitment_mismatch');
  });

  it('fails with decrypt_failed when unwrapped under a different KEK id', () => {
    expectLetheError(() => unwrapKey({ kek: KEK, kekId: 'kek-4', wrapped, keyId: DEK_ID }), 'decrypt_failed');
  });

  it('binds the purpose: a key wrapped for one purpose does not unwrap for another', () => {
    const epochWrapped = wrapKey({ kek: KEK, kekId: KEK_ID, dek: DEK, keyId: 'epoch-7', purpose: 'epoch-kek' });
    expect(hex(unwrapKey({ kek: KEK, kekId: KEK_ID, wrapped: epochWrapped, keyId: 'epoch-7', purpose: 'epoch-kek' }))).toBe(
      hex(DEK),
    );
    expectLetheError(() => unwrapKey({ kek: KEK, kekId: KEK_ID, wrapped: epochWrapped, keyId: 'epoch-7' }), 'decrypt_failed');
    expectLetheError(
      () => unwrapKey({ kek: KEK, kekId: KEK_ID, wrapped, keyId: DEK_ID, purpose: 'epoch-kek' }),
      'decrypt_failed',
    );
  });

  it.each([0, 16, 31, 33, 64])('rejects a %i-byte data key with validation_failed', (length) => {
    expectLetheError(() => wrapKey({ kek: KEK, kekId: KEK_ID, dek: new Uint8Array(length), keyId: DEK_ID }), 'validation_failed');
  });

  it('rejects a KEK that is not 32 bytes with validation_failed', () => {
    expectLetheError(() => wrapKey({ kek: new Uint8Array(31), kekId: KEK_ID, dek: DEK, keyId: DEK_ID }), 'validation_failed');
    expectLetheError(
      () => unwrapKey({ kek: new Uint8Array(31), kekId: KEK_ID, wrapped, keyId: DEK_ID }),
      'validation_failed',
    );
  });

  it('refuses to unwrap a correctly authenticated envelope whose payload is not 32 bytes', () => {
    const short = seal({
      key: KEK,
      keyId: KEK_ID,
      plaintext: new Uint8Array(31).fill(7),
      associatedData: encodeContext('dek', { keyId: DEK_ID }),
    });
    expectLetheError(() => unwrapKey({ kek: KEK, kekId: KEK_ID, wrapped: short, keyId: DEK_ID }), 'envelope_malformed');
  });

  it('uses a fresh nonce per wrap: wrapping the same key twice gives different envelopes', () => {
    const again = wrapKey({ kek: KEK, kekId: KEK_ID, dek: DEK, keyId: DEK_ID });
    expect(hex(again)).not.toBe(hex(wrapped));
    expect(hex(unwrapKey({ kek: KEK, kekId: KEK_ID, wrapped: again, keyId: DEK_ID }))).toBe(hex(DEK));
  });

  it('leaves the KEK and data key buffers unmodified', () => {
    const kek = KEK.slice();
    const dek = DEK.slice();
    const w = wrapKey({ kek, kekId: KEK_ID, dek, keyId: DEK_ID });
    unwrapKey({ kek, kekId: KEK_ID, wrapped: w, keyId: DEK_ID });
    expect(hex(kek)).toBe(hex(KEK));
    expect(hex(dek)).toBe(hex(DEK));
  });

  it('rejects a tampered wrapped key with a typed error', () => {
    const tampered = wrapped.slice();
    tampered[tampered.length - 1] = tampered[tampered.length - 1]! ^ 0x80;
    expectLetheError(() => unwrapKey({ kek: KEK, kekId: KEK_ID, wrapped: tampered, keyId: DEK_ID }), 'decrypt_failed');
  });
});
