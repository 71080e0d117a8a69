import { describe, expect, it } from 'vitest';
import { encodeContext, envelopeKeyId, KEY_PURPOSES, type KeyPurpose, open, parseEnvelope, seal, unwrapKey, wrapKey } from '../../src/crypto/index.js';
import { expectLetheError, hex, seq } from './helpers.js';

const KEK = seq(32, 0x20);
const OTHER_KEK = seq(32, 0x21);
const DEK = seq(32, 0xc0);
const KEK_ID = 'kek-3';
const DEK_ID = 'dek-subject-42';

const wrapped = wrapKey({ kek: KEK, kekId: KEK_ID, dek: DEK, keyId: DEK_ID, purpose: 'subject' });

describe('wrapKey / unwrapKey', () => {
  it('unwraps back to the original data key', () => {
    const dek = unwrapKey({ kek: KEK, kekId: KEK_ID, wrapped, keyId: DEK_ID, purpose: 'subject' });
    expect(hex(dek)).toBe(hex(DEK));
  });

  it('produces an envelope naming the KEK id, holding 32 bytes, bound to context ("wrapped-key", {keyId, purpose})', () => {
    expect(envelopeKeyId(wrapped)).toBe(KEK_ID);
    expect(parseEnvelope(wrapped).ciphertext.length).toBe(32 + 16);
    const viaOpen = open({ key: KEK, envelope: wrapped, associatedData: encodeContext('wrapped-key', { keyId: DEK_ID, purpose: 'subject' }) });
    expect(hex(viaOpen)).toBe(hex(DEK));
    // not under the legacy context ("dek", {keyId}): nothing wraps under it any more
    expectLetheError(() => open({ key: KEK, envelope: wrapped, associatedData: encodeContext('dek', { keyId: DEK_ID }) }), 'decrypt_failed');
  });

  it('fails with decrypt_failed when unwrapped for a different key id (the associated data)', () => {
    expectLetheError(() => unwrapKey({ kek: KEK, kekId: KEK_ID, wrapped, keyId: 'dek-subject-43', purpose: 'subject' }), 'decrypt_failed');
  });

  it('fails with key_commitment_mismatch when unwrapped with a different KEK', () => {
    expectLetheError(() => unwrapKey({ kek: OTHER_KEK, kekId: KEK_ID, wrapped, keyId: DEK_ID, purpose: 'subject' }), 'key_commitment_mismatch');
  });

  it('fails with decrypt_failed when unwrapped under a different KEK id', () => {
    expectLetheError(() => unwrapKey({ kek: KEK, kekId: 'kek-4', wrapped, keyId: DEK_ID, purpose: 'subject' }), 'decrypt_failed');
  });

  it('binds the purpose: a key wrapped for one purpose does not unwrap for another, legacy accepted or not', () => {
    for (const purpose of KEY_PURPOSES) {
      const w = wrapKey({ kek: KEK, kekId: KEK_ID, dek: DEK, keyId: DEK_ID, purpose });
      expect(hex(unwrapKey({ kek: KEK, kekId: KEK_ID, wrapped: w, keyId: DEK_ID, purpose }))).toBe(hex(DEK));
      for (const other of KEY_PURPOSES.filter((p) => p !== purpose)) {
        expectLetheError(() => unwrapKey({ kek: KEK, kekId: KEK_ID, wrapped: w, keyId: DEK_ID, purpose: other }), 'decrypt_failed');
        expectLetheError(() => unwrapKey({ kek: KEK, kekId: KEK_ID, wrapped: w, keyId: DEK_ID, purpose: other, acceptLegacy: true }), 'decrypt_failed');
      }
    }
  });

  it('accepts a legacy wrap ("dek", {keyId}) only when asked to, for any purpose, and still bound to the key id', () => {
    const legacy = seal({ key: KEK, keyId: KEK_ID, plaintext: DEK.slice(), associatedData: encodeContext('dek', { keyId: DEK_ID }) });
    for (const purpose of KEY_PURPOSES) {
      expectLetheError(() => unwrapKey({ kek: KEK, kekId: KEK_ID, wrapped: legacy, keyId: DEK_ID, purpose }), 'decrypt_failed');
      expect(hex(unwrapKey({ kek: KEK, kekId: KEK_ID, wrapped: legacy, keyId: DEK_ID, purpose, acceptLegacy: true }))).toBe(hex(DEK));
    }
    expectLetheError(
      () => unwrapKey({ kek: KEK, kekId: KEK_ID, wrapped: legacy, keyId: 'dek-subject-43', purpose: 'subject', acceptLegacy: true }),
      'decrypt_failed',
    );
    // a wrong KEK is not a legacy wrap: the commitment error is not retried
    expectLetheError(
      () => unwrapKey({ kek: OTHER_KEK, kekId: KEK_ID, wrapped: legacy, keyId: DEK_ID, purpose: 'subject', acceptLegacy: true }),
      'key_commitment_mismatch',
    );
  });

  it('refuses a purpose outside the closed set', () => {
    expectLetheError(() => wrapKey({ kek: KEK, kekId: KEK_ID, dek: DEK, keyId: DEK_ID, purpose: 'epoch-kek' as KeyPurpose }), 'validation_failed');
    expectLetheError(() => unwrapKey({ kek: KEK, kekId: KEK_ID, wrapped, keyId: DEK_ID, purpose: 'dek' as KeyPurpose }), 'validation_failed');
  });

  it.each([0, 16, 31, 33, 64])('rejects a %i-byte data key with validation_failed', (length) => {
    expectLetheError(() => wrapKey({ kek: KEK, kekId: KEK_ID, dek: new Uint8Array(length), keyId: DEK_ID, purpose: 'subject' }), 'validation_failed');
  });

  it('rejects a KEK that is not 32 bytes with validation_failed', () => {
    expectLetheError(() => wrapKey({ kek: new Uint8Array(31), kekId: KEK_ID, dek: DEK, keyId: DEK_ID, purpose: 'subject' }), 'validation_failed');
    expectLetheError(() => unwrapKey({ kek: new Uint8Array(31), kekId: KEK_ID, wrapped, keyId: DEK_ID, purpose: 'subject' }), 'validation_failed');
  });

  it('refuses to unwrap a correctly authenticated envelope whose payload is not 32 bytes', () => {
    const short = seal({
      key: KEK,
      keyId: KEK_ID,
      plaintext: new Uint8Array(31).fill(7),
      associatedData: encodeContext('wrapped-key', { keyId: DEK_ID, purpose: 'subject' }),
    });
    expectLetheError(() => unwrapKey({ kek: KEK, kekId: KEK_ID, wrapped: short, keyId: DEK_ID, purpose: 'subject' }), 'envelope_malformed');
    // and through the legacy context
    const shortLegacy = seal({ key: KEK, keyId: KEK_ID, plaintext: new Uint8Array(31).fill(7), associatedData: encodeContext('dek', { keyId: DEK_ID }) });
    expectLetheError(
      () => unwrapKey({ kek: KEK, kekId: KEK_ID, wrapped: shortLegacy, keyId: DEK_ID, purpose: 'subject', acceptLegacy: true }),
      'envelope_malformed',
    );
  });

  it('uses a fresh nonce per wrap: wrapping the same key twice gives different envelopes', () => {
    const again = wrapKey({ kek: KEK, kekId: KEK_ID, dek: DEK, keyId: DEK_ID, purpose: 'subject' });
    expect(hex(again)).not.toBe(hex(wrapped));
    expect(hex(unwrapKey({ kek: KEK, kekId: KEK_ID, wrapped: again, keyId: DEK_ID, purpose: 'subject' }))).toBe(hex(DEK));
  });

  it('leaves the KEK and data key buffers unmodified', () => {
    const kek = KEK.slice();
    const dek = DEK.slice();
    const w = wrapKey({ kek, kekId: KEK_ID, dek, keyId: DEK_ID, purpose: 'subject' });
    unwrapKey({ kek, kekId: KEK_ID, wrapped: w, keyId: DEK_ID, purpose: 'subject' });
    expect(hex(kek)).toBe(hex(KEK));
    expect(hex(dek)).toBe(hex(DEK));
  });

  it('rejects a tampered wrapped key with a typed error', () => {
    const tampered = wrapped.slice();
    tampered[tampered.length - 1] = tampered[tampered.length - 1]! ^ 0x80;
    expectLetheError(() => unwrapKey({ kek: KEK, kekId: KEK_ID, wrapped: tampered, keyId: DEK_ID, purpose: 'subject' }), 'decrypt_failed');
  });
});
