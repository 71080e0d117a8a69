import { randomBytes as nodeRandomBytes } from 'node:crypto';
import { xchacha20poly1305 } from '@noble/ciphers/chacha.js';
import { describe, expect, it } from 'vitest';
import type { ErrorCode } from '../../src/errors.js';
import { encodeContext, envelopeKeyId, open, parseEnvelope, seal } from '../../src/crypto/index.js';
import { LetheError } from '../../src/errors.js';
import { OPEN_FAILURE_CODES, ascii, concatBytes, expectLetheError, hex, seq, thrownBy, unhex } from './helpers.js';
import { hchacha20, refHeader, refHkdf, refSealEnvelope, refXChaChaOpen, refXChaChaSeal } from './reference.js';

const KEY = seq(32, 0x10);
const OTHER_KEY = seq(32, 0x90);
const KEY_ID = 'kek-1';
const AAD = encodeContext('frame', { entryId: 'e-0001', seq: 7 });
/** Nonce bytes 0xa0..0xb7: none is printable ASCII, which the bit-flip test relies on. */
const FIXED_NONCE = seq(24, 0xa0);

/** Header size for a key id of `keyIdLength` bytes: 5 fixed + id + 24 nonce + 32 commitment. */
const headerLength = (keyIdLength: number): number => 5 + keyIdLength + 24 + 32;

function sealDefault(plaintext: Uint8Array, overrides: Partial<Parameters<typeof seal>[0]> = {}): Uint8Array {
  return seal({ key: KEY, keyId: KEY_ID, plaintext, associatedData: AAD, ...overrides });
}

/** Rewrites the key id in an envelope's header, fixing up the length byte; everything else is kept. */
function relabel(envelope: Uint8Array, newKeyId: string): Uint8Array {
  const oldLength = envelope[4]!;
  const id = ascii(newKeyId);
  return concatBytes(envelope.subarray(0, 4), Uint8Array.of(id.length), id, envelope.subarray(5 + oldLength));
}

describe('seal/open round trip', () => {
  it.each([
    ['an empty plaintext', 0],
    ['a small plaintext', 13],
    ['a 1 MiB plaintext', 1 << 20],
  ])('opens %s back to the same bytes', (_label, size) => {
    const plaintext = new Uint8Array(nodeRandomBytes(size));
    const envelope = sealDefault(plaintext);
    expect(envelope.length).toBe(headerLength(KEY_ID.length) + size + 16);
    const opened = open({ key: KEY, envelope, associatedData: AAD });
    expect(opened.length).toBe(size);
    expect(Buffer.from(opened).equals(Buffer.from(plaintext))).toBe(true);
  });

  it('opens with an expectedKeyId that matches the header', () => {
    const envelope = sealDefault(ascii('hello'));
    expect(open({ key: KEY, envelope, associatedData: AAD, expectedKeyId: KEY_ID })).toEqual(ascii('hello'));
  });

  it('opens with empty associated data when it was sealed with empty associated data', () => {
    const envelope = sealDefault(ascii('no context'), { associatedData: new Uint8Array(0) });
    expect(open({ key: KEY, envelope, associatedData: new Uint8Array(0) })).toEqual(ascii('no context'));
  });

  it('writes magic, version 1, algorithm 1, the key id and the nonce into the header', () => {
    const envelope = sealDefault(ascii('abc'), { nonce: FIXED_NONCE });
    expect([...envelope.subarray(0, 5)]).toEqual([0x4c, 0x45, 1, 1, KEY_ID.length]);
    const parts = parseEnvelope(envelope);
    expect(parts.version).toBe(1);
    expect(parts.algorithm).toBe(1);
    expect(parts.keyId).toBe(KEY_ID);
    expect(hex(parts.nonce)).toBe(hex(FIXED_NONCE));
    expect(parts.commitment.length).toBe(32);
    expect(parts.ciphertext.length).toBe(3 + 16);
    expect(hex(parts.header)).toBe(hex(envelope.subarray(0, headerLength(KEY_ID.length))));
    expect(envelopeKeyId(envelope)).toBe(KEY_ID);
  });

  it('returns a plaintext buffer that does not alias the envelope', () => {
    const envelope = sealDefault(ascii('alias?'));
    const before = hex(envelope);
    const opened = open({ key: KEY, envelope, associatedData: AAD });
    opened.fill(0xee);
    expect(hex(envelope)).toBe(before);
    expect(open({ key: KEY, envelope, associatedData: AAD })).toEqual(ascii('alias?'));
  });

  it('accepts a key id of exactly 255 printable bytes and rejects 256', () => {
    const longId = 'k'.repeat(255);
    const envelope = sealDefault(ascii('x'), { keyId: longId });
    expect(envelope[4]).toBe(255);
    expect(open({ key: KEY, envelope, associatedData: AAD, expectedKeyId: longId })).toEqual(ascii('x'));
    expectLetheError(() => sealDefault(ascii('x'), { keyId: 'k'.repeat(256) }), 'validation_failed');
  });
});

describe('seal input validation', () => {
  it.each([
    ['an empty key id', ''],
    ['a key id with a space', 'kek 1'],
    ['a key id with a control character', 'kek\n1'],
    ['a key id with DEL', 'kek\x7f'],
    ['a non-ASCII key id', 'ключ'],
  ])('rejects %s with validation_failed', (_label, keyId) => {
    expectLetheError(() => sealDefault(ascii('x'), { keyId }), 'validation_failed');
  });

  it.each([0, 16, 31, 33, 64])('rejects a %i-byte key in seal and open with validation_failed', (length) => {
    const envelope = sealDefault(ascii('x'));
    expectLetheError(() => sealDefault(ascii('x'), { key: new Uint8Array(length) }), 'validation_failed');
    expectLetheError(() => open({ key: new Uint8Array(length), envelope, associatedData: AAD }), 'validation_failed');
  });

  it.each([0, 12, 23, 25])('rejects a %i-byte nonce override with validation_failed', (length) => {
    expectLetheError(() => sealDefault(ascii('x'), { nonce: new Uint8Array(length) }), 'validation_failed');
  });
});

describe('tamper detection: single-bit flips', () => {
  // keyId "k1", 3-byte plaintext, fixed non-printable nonce: the outcome of every flip is predictable.
  const keyId = 'k1';
  const plaintext = ascii('hi!');
  const envelope = seal({ key: KEY, keyId, plaintext, associatedData: AAD, nonce: FIXED_NONCE });
  const nonceAt = 5 + keyId.length;
  const bodyAt = headerLength(keyId.length);

  /** The code a flip at `pos` must produce, from the layout in envelope.ts. */
  function expectedCode(pos: number, flipped: number): ErrorCode {
    if (pos < 2) return 'envelope_malformed'; // magic
    if (pos < 4) return 'envelope_unsupported'; // version, algorithm
    // Length byte: 0, or a longer id that swallows a non-printable nonce byte, or truncation.
    if (pos === 4) return 'envelope_malformed';
    if (pos < nonceAt) return flipped >= 0x21 && flipped <= 0x7e ? 'decrypt_failed' : 'envelope_malformed';
    if (pos < bodyAt) return 'key_commitment_mismatch'; // nonce or commitment
    return 'decrypt_failed'; // ciphertext or Poly1305 tag
  }

  it('rejects every one of the envelope’s bit flips with the LetheError code its position implies', () => {
    expect(envelope.length).toBe(bodyAt + 3 + 16);
    const wrong: string[] = [];
    let checked = 0;
    for (let pos = 0; pos < envelope.length; pos++) {
      for (let bit = 0; bit < 8; bit++) {
        const tampered = envelope.slice();
        tampered[pos] = tampered[pos]! ^ (1 << bit);
        const want = expectedCode(pos, tampered[pos]!);
        const outcome = thrownBy(() => open({ key: KEY, envelope: tampered, associatedData: AAD }));
        checked++;
        if (!outcome.threw) {
          wrong.push(`byte ${pos} bit ${bit}: opened`);
        } else if (!(outcome.error instanceof LetheError)) {
          wrong.push(`byte ${pos} bit ${bit}: ${String(outcome.error)}`);
        } else if (!OPEN_FAILURE_CODES.includes(outcome.error.code) || outcome.error.code !== want) {
          wrong.push(`byte ${pos} bit ${bit}: ${outcome.error.code}, expected ${want}`);
        }
      }
    }
    expect(checked).toBe(envelope.length * 8);
    expect(wrong).toEqual([]);
  });

  it('still opens the untampered envelope used by the bit-flip test', () => {
    expect(open({ key: KEY, envelope, associatedData: AAD })).toEqual(plaintext);
  });
});

describe('associated data binding', () => {
  const envelope = sealDefault(ascii('bound to its place'));

  it.each([
    ['empty associated data', new Uint8Array(0)],
    ['a different context field value', encodeContext('frame', { entryId: 'e-0001', seq: 8 })],
    ['a different context purpose', encodeContext('dek', { entryId: 'e-0001', seq: 7 })],
    ['the right associated data plus one byte', concatBytes(AAD, Uint8Array.of(0))],
    ['the right associated data minus its last byte', AAD.subarray(0, AAD.length - 1)],
  ])('fails with decrypt_failed under %s', (_label, associatedData) => {
    expectLetheError(() => open({ key: KEY, envelope, associatedData }), 'decrypt_failed');
  });
});

describe('key commitment', () => {
  const envelope = sealDefault(ascii('committed'));

  it('fails with key_commitment_mismatch when opened under a different key', () => {
    expectLetheError(() => open({ key: OTHER_KEY, envelope, associatedData: AAD }), 'key_commitment_mismatch');
  });

  it('reports key_commitment_mismatch, not decrypt_failed, when the associated data is wrong too (commitment is checked first)', () => {
    expectLetheError(() => open({ key: OTHER_KEY, envelope, associatedData: new Uint8Array(0) }), 'key_commitment_mismatch');
  });

  it('fails with key_commitment_mismatch under a key that differs in one bit', () => {
    const nearKey = KEY.slice();
    nearKey[31] = nearKey[31]! ^ 0x01;
    expectLetheError(() => open({ key: nearKey, envelope, associatedData: AAD }), 'key_commitment_mismatch');
  });

  it('rejects an envelope whose AEAD verifies under the key but whose commitment belongs to another key', () => {
    // Forge: commitment of OTHER_KEY, body encrypted (and header-authenticated) under KEY's subkey.
    const forged = refSealEnvelope({
      key: KEY,
      keyId: KEY_ID,
      nonce: FIXED_NONCE,
      plaintext: ascii('forged'),
      associatedData: AAD,
      commitment: refHkdf(OTHER_KEY, FIXED_NONCE, 'lethe/v1/commit'),
    });
    // The AEAD layer alone accepts it under KEY...
    const parts = parseEnvelope(forged);
    const encKey = refHkdf(KEY, parts.nonce, 'lethe/v1/enc');
    expect(refXChaChaOpen(encKey, parts.nonce, parts.ciphertext, concatBytes(parts.header, AAD))).toEqual(ascii('forged'));
    // ...but open refuses it under either key.
    expectLetheError(() => open({ key: KEY, envelope: forged, associatedData: AAD }), 'key_commitment_mismatch');
    expectLetheError(() => open({ key: OTHER_KEY, envelope: forged, associatedData: AAD }), 'decrypt_failed');
  });
});

describe('key id binding', () => {
  const envelope = sealDefault(ascii('labelled'));

  it('fails with decrypt_failed when the header key id is rewritten to one of the same length', () => {
    const relabelled = relabel(envelope, 'kek-2');
    expect(relabelled.length).toBe(envelope.length);
    expect(envelopeKeyId(relabelled)).toBe('kek-2');
    expectLetheError(() => open({ key: KEY, envelope: relabelled, associatedData: AAD }), 'decrypt_failed');
  });

  it.each([
    ['longer', 'kek-1-rotated'],
    ['shorter', 'k'],
    ['maximum-length', 'x'.repeat(255)],
  ])('fails with decrypt_failed when the key id is rewritten to a %s one and the length byte adjusted', (_l, newId) => {
    const relabelled = relabel(envelope, newId);
    expect(envelopeKeyId(relabelled)).toBe(newId);
    expect(relabelled.length).toBe(envelope.length - KEY_ID.length + newId.length);
    expectLetheError(() => open({ key: KEY, envelope: relabelled, associatedData: AAD }), 'decrypt_failed');
    expectLetheError(() => open({ key: KEY, envelope: relabelled, associatedData: AAD, expectedKeyId: newId }), 'decrypt_failed');
  });

  it('fails with decrypt_failed when expectedKeyId differs from the header, even with the right key', () => {
    expectLetheError(() => open({ key: KEY, envelope, associatedData: AAD, expectedKeyId: 'kek-2' }), 'decrypt_failed');
  });

  it('does not accept a prefix, extension or case variant of the key id as expectedKeyId', () => {
    for (const expectedKeyId of ['kek-', 'kek-11', 'KEK-1', ' kek-1', '']) {
      expectLetheError(
        () => open({ key: KEY, envelope, associatedData: AAD, expectedKeyId }),
        'decrypt_failed',
        `expectedKeyId ${JSON.stringify(expectedKeyId)}: `,
      );
    }
  });
});

describe('truncated, extended and garbage input', () => {
  const keyId = 'k1';
  const envelope = seal({ key: KEY, keyId, plaintext: ascii('truncate me'), associatedData: AAD });
  const minimum = headerLength(keyId.length) + 16;

  it('rejects every proper prefix with a typed error: malformed until the tag fits, then decrypt_failed', () => {
    const wrong: string[] = [];
    for (let length = 0; length < envelope.length; length++) {
      const want: ErrorCode = length < minimum ? 'envelope_malformed' : 'decrypt_failed';
      const outcome = thrownBy(() => open({ key: KEY, envelope: envelope.slice(0, length), associatedData: AAD }));
      if (!outcome.threw) wrong.push(`prefix ${length}: opened`);
      else if (!(outcome.error instanceof LetheError)) wrong.push(`prefix ${length}: ${String(outcome.error)}`);
      else if (outcome.error.code !== want) wrong.push(`prefix ${length}: ${outcome.error.code}, expected ${want}`);
    }
    expect(wrong).toEqual([]);
  });

  it('rejects every proper prefix in parseEnvelope too, up to the minimum envelope length', () => {
    for (let length = 0; length < minimum; length++) {
      expectLetheError(() => parseEnvelope(envelope.slice(0, length)), 'envelope_malformed', `prefix ${length}: `);
    }
    expect(parseEnvelope(envelope.slice(0, minimum)).ciphertext.length).toBe(16);
  });

  it('rejects an envelope with bytes appended with decrypt_failed', () => {
    for (const extra of [Uint8Array.of(0), Uint8Array.of(0xff, 0xff), new Uint8Array(100)]) {
      expectLetheError(() => open({ key: KEY, envelope: concatBytes(envelope, extra), associatedData: AAD }), 'decrypt_failed');
    }
  });

  it('rejects 500 random byte strings with a LetheError and nothing else', () => {
    for (let i = 0; i < 500; i++) {
      const garbage = new Uint8Array(nodeRandomBytes(i % 200));
      expectLetheError(() => open({ key: KEY, envelope: garbage, associatedData: AAD }), OPEN_FAILURE_CODES, `#${i}: `);
    }
  });

  it('rejects 500 random byte strings behind a valid magic/version/algorithm prefix with a LetheError', () => {
    for (let i = 0; i < 500; i++) {
      const garbage = concatBytes(Uint8Array.of(0x4c, 0x45, 1, 1), new Uint8Array(nodeRandomBytes(i % 200)));
      expectLetheError(() => open({ key: KEY, envelope: garbage, associatedData: AAD }), OPEN_FAILURE_CODES, `#${i}: `);
    }
  });

  it.each([
    ['a string', 'LE\x01\x01'],
    ['null', null],
    ['undefined', undefined],
    ['a plain array', [0x4c, 0x45, 1, 1]],
    ['an ArrayBuffer', new ArrayBuffer(80)],
  ])('rejects %s in place of envelope bytes with envelope_malformed', (_label, value) => {
    const envelope = value as unknown as Uint8Array;
    expectLetheError(() => open({ key: KEY, envelope, associatedData: AAD }), 'envelope_malformed');
    expectLetheError(() => parseEnvelope(envelope), 'envelope_malformed');
  });
});

describe('header fields', () => {
  const envelope = sealDefault(ascii('header'));
  const withByte = (pos: number, value: number): Uint8Array => {
    const copy = envelope.slice();
    copy[pos] = value;
    return copy;
  };

  it.each([0, 2, 3, 0x7f, 0xff])('rejects format version %i with envelope_unsupported', (version) => {
    expectLetheError(() => open({ key: KEY, envelope: withByte(2, version), associatedData: AAD }), 'envelope_unsupported');
    expectLetheError(() => parseEnvelope(withByte(2, version)), 'envelope_unsupported');
  });

  it.each([0, 3, 9, 0xff])('rejects algorithm id %i with envelope_unsupported', (algorithm) => {
    expectLetheError(() => open({ key: KEY, envelope: withByte(3, algorithm), associatedData: AAD }), 'envelope_unsupported');
    expectLetheError(() => parseEnvelope(withByte(3, algorithm)), 'envelope_unsupported');
  });

  it('refuses an algorithm-1 envelope relabelled as algorithm 2 (prepared key): its commitment does not match', () => {
    expectLetheError(() => open({ key: KEY, envelope: withByte(3, 2), associatedData: AAD }), 'key_commitment_mismatch');
  });

  it.each([
    ['"LF"', 0x4c, 0x46],
    ['"le"', 0x6c, 0x65],
    ['"EL"', 0x45, 0x4c],
    ['"\\0\\0"', 0x00, 0x00],
  ])('rejects magic %s with envelope_malformed', (_label, m0, m1) => {
    const bad = withByte(0, m0);
    bad[1] = m1;
    expectLetheError(() => open({ key: KEY, envelope: bad, associatedData: AAD }), 'envelope_malformed');
    expectLetheError(() => parseEnvelope(bad), 'envelope_malformed');
  });

  it('rejects a zero-length key id with envelope_malformed', () => {
    expectLetheError(() => parseEnvelope(withByte(4, 0)), 'envelope_malformed');
    expectLetheError(() => open({ key: KEY, envelope: withByte(4, 0), associatedData: AAD }), 'envelope_malformed');
  });

  it.each([0x00, 0x20, 0x7f, 0x80, 0xff])('rejects a key id containing byte 0x%s with envelope_malformed', (b) => {
    expectLetheError(() => parseEnvelope(withByte(6, b)), 'envelope_malformed');
  });
});

describe('randomness and buffer hygiene', () => {
  it('produces different envelopes (different nonces and commitments) for two seals of the same plaintext', () => {
    const plaintext = ascii('same plaintext');
    const a = sealDefault(plaintext);
    const b = sealDefault(plaintext);
    expect(hex(a)).not.toBe(hex(b));
    expect(hex(parseEnvelope(a).nonce)).not.toBe(hex(parseEnvelope(b).nonce));
    expect(hex(parseEnvelope(a).commitment)).not.toBe(hex(parseEnvelope(b).commitment));
    expect(open({ key: KEY, envelope: a, associatedData: AAD })).toEqual(plaintext);
    expect(open({ key: KEY, envelope: b, associatedData: AAD })).toEqual(plaintext);
  });

  it('never repeats a nonce across 1000 seals', () => {
    const nonces = new Set<string>();
    for (let i = 0; i < 1000; i++) nonces.add(hex(parseEnvelope(sealDefault(new Uint8Array(0))).nonce));
    expect(nonces.size).toBe(1000);
  });

  it('produces identical envelopes when given the same nonce (the only source of randomness)', () => {
    const a = sealDefault(ascii('det'), { nonce: FIXED_NONCE });
    const b = sealDefault(ascii('det'), { nonce: FIXED_NONCE });
    expect(hex(a)).toBe(hex(b));
  });

  it('leaves the key, plaintext, associated data and nonce buffers unmodified by seal', () => {
    const key = KEY.slice();
    const plaintext = ascii('do not touch');
    const associatedData = AAD.slice();
    const nonce = FIXED_NONCE.slice();
    seal({ key, keyId: KEY_ID, plaintext, associatedData, nonce });
    expect(hex(key)).toBe(hex(KEY));
    expect(hex(plaintext)).toBe(hex(ascii('do not touch')));
    expect(hex(associatedData)).toBe(hex(AAD));
    expect(hex(nonce)).toBe(hex(FIXED_NONCE));
  });

  it('leaves the key, envelope and associated data unmodified by open, whether it succeeds or fails', () => {
    const envelope = sealDefault(ascii('do not touch'));
    const envelopeHex = hex(envelope);
    const key = KEY.slice();
    const associatedData = AAD.slice();
    open({ key, envelope, associatedData });
    expect(hex(key)).toBe(hex(KEY));
    expect(hex(envelope)).toBe(envelopeHex);
    expect(hex(associatedData)).toBe(hex(AAD));

    expectLetheError(() => open({ key, envelope, associatedData: new Uint8Array(1) }), 'decrypt_failed');
    expectLetheError(() => open({ key: OTHER_KEY, envelope, associatedData }), 'key_commitment_mismatch');
    expect(hex(key)).toBe(hex(KEY));
    expect(hex(envelope)).toBe(envelopeHex);
  });

  it('does not alias the plaintext buffer: changing it after seal does not change the envelope', () => {
    const plaintext = ascii('snapshot');
    const envelope = sealDefault(plaintext);
    const before = hex(envelope);
    plaintext.fill(0);
    expect(hex(envelope)).toBe(before);
    expect(open({ key: KEY, envelope, associatedData: AAD })).toEqual(ascii('snapshot'));
  });
});

describe('cross-check against independent implementations', () => {
  // draft-irtf-cfrg-xchacha-03 §2.2.1 and §A.3.1.
  const SUNSCREEN = ascii("Ladies and Gentlemen of the class of '99: If I could offer you only one tip for the future, sunscreen would be it.");
  const DRAFT_KEY = seq(32, 0x80);
  const DRAFT_NONCE = seq(24, 0x40);
  const DRAFT_AAD = unhex('50515253c0c1c2c3c4c5c6c7');
  const DRAFT_CT_TAG =
    'bd6d179d3e83d43b9576579493c0e939572a1700252bfaccbed2902c21396cbb' +
    '731c7f1b0b4aa6440bf3a82f4eda7e39ae64c6708c54c216cb96b72e1213b452' +
    '2f8c9ba40db5d945b11b69b982c1bb9e3f3fac2bc369488f76b2383565d3fff9' +
    '21f9664c97637da9768812f615c68b13b52e' +
    'c0875924c1c7987947deafd8780acf49';

  it('the test’s HChaCha20 reproduces the draft-irtf-cfrg-xchacha §2.2.1 vector', () => {
    expect(hex(hchacha20(seq(32), unhex('000000090000004a0000000031415927')))).toBe('82413b4227b27bfed30e42508a877d73a0f9e4d58a74a853c12ec41326d3ecdc');
  });

  it('the test’s XChaCha20-Poly1305 (HChaCha20 + node ChaCha20-Poly1305) reproduces the draft §A.3.1 vector', () => {
    expect(hex(refXChaChaSeal(DRAFT_KEY, DRAFT_NONCE, SUNSCREEN, DRAFT_AAD))).toBe(DRAFT_CT_TAG);
    expect(refXChaChaOpen(DRAFT_KEY, DRAFT_NONCE, unhex(DRAFT_CT_TAG), DRAFT_AAD)).toEqual(SUNSCREEN);
  });

  it('@noble/ciphers xchacha20poly1305 reproduces the draft §A.3.1 vector', () => {
    expect(hex(xchacha20poly1305(DRAFT_KEY, DRAFT_NONCE, DRAFT_AAD).encrypt(SUNSCREEN))).toBe(DRAFT_CT_TAG);
  });

  const plaintext = ascii('cross-checked plaintext, more than one block? '.repeat(3));
  const envelope = sealDefault(plaintext, { nonce: FIXED_NONCE });
  const parts = parseEnvelope(envelope);

  it('writes a commitment equal to node:crypto HKDF-SHA256(ikm=key, salt=nonce, info="lethe/v1/commit")', () => {
    expect(hex(parts.commitment)).toBe(hex(refHkdf(KEY, FIXED_NONCE, 'lethe/v1/commit')));
  });

  it('encrypts the body so that noble xchacha20poly1305(HKDF(key, nonce, "lethe/v1/enc"), nonce, header||aad) opens it', () => {
    const subkey = refHkdf(KEY, parts.nonce, 'lethe/v1/enc');
    const aad = concatBytes(parts.header, AAD);
    expect(xchacha20poly1305(subkey, parts.nonce, aad).decrypt(parts.ciphertext)).toEqual(plaintext);
  });

  it('produces byte-for-byte the envelope an independent node:crypto implementation of the spec produces', () => {
    const reference = refSealEnvelope({ key: KEY, keyId: KEY_ID, nonce: FIXED_NONCE, plaintext, associatedData: AAD });
    expect(hex(envelope)).toBe(hex(reference));
    expect(hex(parts.header)).toBe(hex(refHeader(KEY_ID, FIXED_NONCE, refHkdf(KEY, FIXED_NONCE, 'lethe/v1/commit'))));
  });

  it('opens an envelope sealed by the independent implementation', () => {
    const reference = refSealEnvelope({ key: OTHER_KEY, keyId: 'ref', nonce: seq(24, 7), plaintext, associatedData: AAD });
    expect(open({ key: OTHER_KEY, envelope: reference, associatedData: AAD, expectedKeyId: 'ref' })).toEqual(plaintext);
  });

  it('does not encrypt under the raw key or with the commitment as the key (a per-envelope subkey is used)', () => {
    const aad = concatBytes(parts.header, AAD);
    expect(() => xchacha20poly1305(KEY, parts.nonce, aad).decrypt(parts.ciphertext)).toThrow();
    expect(() => xchacha20poly1305(refHkdf(KEY, FIXED_NONCE, 'lethe/v1/commit'), parts.nonce, aad).decrypt(parts.ciphertext)).toThrow();
  });

  it('does not authenticate the associated data alone: the header is part of the AEAD associated data', () => {
    const subkey = refHkdf(KEY, parts.nonce, 'lethe/v1/enc');
    expect(() => xchacha20poly1305(subkey, parts.nonce, AAD).decrypt(parts.ciphertext)).toThrow();
  });
});
