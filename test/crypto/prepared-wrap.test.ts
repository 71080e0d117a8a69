/**
 * Envelope algorithm 2 (a key schedule derived once per key: PreparedKey) and KeyWrapper,
 * the local keyring's per-epoch wrapper: round trips, a known answer computed by an
 * independent composition (node:crypto HKDF and HMAC, the reference XChaCha20-Poly1305),
 * wraps of the old format (algorithm 1, the legacy context too) still opening, the
 * key id and purpose bound, and every tampered byte refused with a typed error.
 */
import { createHmac, hkdfSync } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  ALG_XCHACHA20POLY1305_HKDF_SHA256,
  ALG_XCHACHA20POLY1305_PREPARED,
  encodeContext,
  isCommittedTo,
  KeyWrapper,
  open,
  openPrepared,
  parseEnvelope,
  PreparedKey,
  randomBytes,
  seal,
  sealPrepared,
  unwrapKey,
  wrapContext,
  wrapKey,
} from '../../src/crypto/index.js';
import { LocalKeyringProvider } from '../../src/keyprovider/local.js';
import { tempDir } from '../support/vault.js';
import { expectLetheError, hex, seq } from './helpers.js';
import { refHeader, refXChaChaSeal } from './reference.js';

const KEK = seq(32, 0x20);
const OTHER_KEK = seq(32, 0x21);
const DEK = seq(32, 0xc0);
const KEK_ID = 'kek-7';
const DEK_ID = 'key_subject-42';

/** Algorithm 2 by another composition: node:crypto HKDF and HMAC, the reference XChaCha20-Poly1305. */
function referenceSealPrepared(key: Uint8Array, keyId: string, nonce: Uint8Array, plaintext: Uint8Array, associatedData: Uint8Array): Uint8Array {
  const enc = new Uint8Array(hkdfSync('sha256', key, 'lethe/v1/prepared', 'lethe/v1/prepared/enc', 32));
  const commitKey = new Uint8Array(hkdfSync('sha256', key, 'lethe/v1/prepared', 'lethe/v1/prepared/commit', 32));
  const commitment = new Uint8Array(createHmac('sha256', commitKey).update(nonce).digest());
  const header = refHeader(keyId, nonce, commitment);
  header[3] = 2; // the algorithm byte
  const aad = new Uint8Array([...header, ...associatedData]);
  return new Uint8Array([...header, ...refXChaChaSeal(enc, nonce, plaintext, aad)]);
}

describe('envelope algorithm 2 (PreparedKey)', () => {
  it('matches an independent composition byte for byte (fixed nonce), and opens with open() and openPrepared()', () => {
    const nonce = seq(24, 0x50);
    const ad = wrapContext(DEK_ID, 'subject');
    const prepared = new PreparedKey(KEK);
    const sealed = sealPrepared({ prepared, keyId: KEK_ID, plaintext: DEK, associatedData: ad, nonce });
    expect(hex(sealed)).toBe(hex(referenceSealPrepared(KEK, KEK_ID, nonce, DEK, ad)));
    const parts = parseEnvelope(sealed);
    expect(parts).toMatchObject({ version: 1, algorithm: ALG_XCHACHA20POLY1305_PREPARED, keyId: KEK_ID });
    expect(parts.ciphertext).toHaveLength(32 + 16);
    expect(hex(openPrepared({ prepared, envelope: sealed, associatedData: ad, expectedKeyId: KEK_ID }))).toBe(hex(DEK));
    expect(hex(open({ key: KEK, envelope: sealed, associatedData: ad }))).toBe(hex(DEK));
    expect(isCommittedTo(KEK, sealed)).toBe(true);
    expect(isCommittedTo(OTHER_KEK, sealed)).toBe(false);
    prepared.destroy();
  });

  it('a destroyed PreparedKey refuses to seal or open', () => {
    const prepared = new PreparedKey(KEK);
    const sealed = sealPrepared({ prepared, keyId: KEK_ID, plaintext: DEK, associatedData: new Uint8Array() });
    prepared.destroy();
    expectLetheError(() => sealPrepared({ prepared, keyId: KEK_ID, plaintext: DEK, associatedData: new Uint8Array() }), 'epoch_unavailable');
    expectLetheError(() => openPrepared({ prepared, envelope: sealed, associatedData: new Uint8Array() }), 'epoch_unavailable');
  });
});

describe('KeyWrapper (a KEK prepared once, wrapping many keys)', () => {
  const wrapper = new KeyWrapper(KEK, KEK_ID);
  const wrapped = wrapper.wrap(DEK, DEK_ID, 'subject');

  it('wraps as algorithm 2 and unwraps back; unwrapKey with the KEK opens it too', () => {
    expect(parseEnvelope(wrapped).algorithm).toBe(ALG_XCHACHA20POLY1305_PREPARED);
    expect(hex(wrapper.unwrap(wrapped, DEK_ID, 'subject'))).toBe(hex(DEK));
    expect(hex(unwrapKey({ kek: KEK, kekId: KEK_ID, wrapped, keyId: DEK_ID, purpose: 'subject' }))).toBe(hex(DEK));
  });

  it('opens the wraps of the old format: algorithm 1, purpose-bound, and the legacy context only when accepted', () => {
    const old = wrapKey({ kek: KEK, kekId: KEK_ID, dek: DEK, keyId: DEK_ID, purpose: 'subject' });
    expect(parseEnvelope(old).algorithm).toBe(ALG_XCHACHA20POLY1305_HKDF_SHA256);
    expect(hex(wrapper.unwrap(old, DEK_ID, 'subject'))).toBe(hex(DEK));
    expectLetheError(() => wrapper.unwrap(old, DEK_ID, 'erasure'), 'decrypt_failed');
    // a purpose-less wrap from before purposes were bound (algorithm 1)
    const legacy = seal({ key: KEK, keyId: KEK_ID, plaintext: DEK, associatedData: encodeContext('dek', { keyId: DEK_ID }) });
    expectLetheError(() => wrapper.unwrap(legacy, DEK_ID, 'subject'), 'decrypt_failed');
    expect(hex(wrapper.unwrap(legacy, DEK_ID, 'subject', { acceptLegacy: true }))).toBe(hex(DEK));
  });

  it('binds the key id and the purpose (associated data), and never takes the legacy context for algorithm 2', () => {
    expectLetheError(() => wrapper.unwrap(wrapped, 'key_subject-43', 'subject'), 'decrypt_failed');
    for (const purpose of ['artifact-version', 'erasure', 'record'] as const) {
      expectLetheError(() => wrapper.unwrap(wrapped, DEK_ID, purpose), 'decrypt_failed');
      expectLetheError(() => wrapper.unwrap(wrapped, DEK_ID, purpose, { acceptLegacy: true }), 'decrypt_failed');
    }
  });

  it('refuses another KEK (commitment) and another KEK id', () => {
    expectLetheError(() => new KeyWrapper(OTHER_KEK, KEK_ID).unwrap(wrapped, DEK_ID, 'subject'), 'key_commitment_mismatch');
    expectLetheError(() => new KeyWrapper(KEK, 'kek-8').unwrap(wrapped, DEK_ID, 'subject'), 'decrypt_failed');
  });

  it('refuses every tampered byte with a typed error: header, algorithm relabelled either way, nonce, commitment, ciphertext, tag', () => {
    const parts = parseEnvelope(wrapped);
    const keyIdAt = 5;
    const nonceAt = keyIdAt + KEK_ID.length;
    const commitAt = nonceAt + 24;
    const bodyAt = commitAt + 32;
    const cases: Array<[string, number, number, string[]]> = [
      ['magic', 0, 0x01, ['envelope_malformed']],
      ['format version', 2, 0x03, ['envelope_unsupported']],
      ['algorithm 2 -> 1', 3, 0x03, ['key_commitment_mismatch']],
      ['algorithm 2 -> 9', 3, 0x0b, ['envelope_unsupported']],
      ['key id', keyIdAt + 1, 0x01, ['decrypt_failed']],
      ['nonce', nonceAt + 3, 0x40, ['key_commitment_mismatch']],
      ['commitment', commitAt + 7, 0x02, ['key_commitment_mismatch']],
      ['ciphertext', bodyAt + 4, 0x10, ['decrypt_failed']],
      ['tag', wrapped.length - 1, 0x80, ['decrypt_failed']],
    ];
    expect(parts.ciphertext.byteOffset - wrapped.byteOffset).toBe(bodyAt);
    for (const [what, at, flip, codes] of cases) {
      const bad = wrapped.slice();
      bad[at] = bad[at]! ^ flip;
      expectLetheError(() => wrapper.unwrap(bad, DEK_ID, 'subject'), codes as never, `${what}: `);
      expectLetheError(
        () => unwrapKey({ kek: KEK, kekId: KEK_ID, wrapped: bad, keyId: DEK_ID, purpose: 'subject' }),
        codes as never,
        `${what} (with the KEK): `,
      );
    }
    // an algorithm-1 wrap relabelled as algorithm 2
    const old = wrapKey({ kek: KEK, kekId: KEK_ID, dek: DEK, keyId: DEK_ID, purpose: 'subject' });
    old[3] = ALG_XCHACHA20POLY1305_PREPARED;
    expectLetheError(() => wrapper.unwrap(old, DEK_ID, 'subject'), 'key_commitment_mismatch');
    // truncated
    expectLetheError(() => wrapper.unwrap(wrapped.subarray(0, bodyAt + 10), DEK_ID, 'subject'), 'envelope_malformed');
  });

  it("uses a fresh nonce per wrap, leaves the caller's buffers alone, and refuses once destroyed", () => {
    const kek = KEK.slice();
    const w = new KeyWrapper(kek, KEK_ID);
    const dek = DEK.slice();
    const a = w.wrap(dek, DEK_ID, 'subject');
    const b = w.wrap(dek, DEK_ID, 'subject');
    expect(hex(a)).not.toBe(hex(b));
    expect(hex(kek)).toBe(hex(KEK));
    expect(hex(dek)).toBe(hex(DEK));
    kek.fill(0); // the wrapper keeps its own copy
    expect(hex(w.unwrap(a, DEK_ID, 'subject'))).toBe(hex(DEK));
    w.destroy();
    expectLetheError(() => w.wrap(DEK, DEK_ID, 'subject'), 'epoch_unavailable');
    expectLetheError(() => w.unwrap(a, DEK_ID, 'subject'), 'epoch_unavailable');
    expectLetheError(() => new KeyWrapper(new Uint8Array(31), KEK_ID), 'validation_failed');
    expectLetheError(() => wrapper.wrap(new Uint8Array(31), DEK_ID, 'subject'), 'validation_failed');
  });
});

describe('the local keyring wraps with its epoch KEK prepared once', () => {
  const root = () => new Uint8Array(32).fill(42);

  it('new wraps are algorithm 2; wraps made before (algorithm 1 under the same KEK) still unwrap; a destroyed epoch refuses both', async () => {
    const dir = tempDir();
    const p = await LocalKeyringProvider.open(dir, root());
    await p.createEpoch(1);
    const dek = randomBytes(32);
    const fresh = await p.wrap(1, dek, 'key_new', 'subject');
    expect(parseEnvelope(fresh).algorithm).toBe(ALG_XCHACHA20POLY1305_PREPARED);
    expect(await p.unwrap(1, fresh, 'key_new', 'subject')).toEqual(dek);
    // a wrap the previous code made: algorithm 1 under the epoch's KEK (unsealed here from its file with the root key)
    const kek = open({
      key: root(),
      envelope: new Uint8Array(readFileSync(path.join(dir, 'epoch-00000001.kek'))),
      expectedKeyId: 'root',
      associatedData: encodeContext('epoch-kek', { epoch: 1 }),
    });
    const old = wrapKey({ kek, kekId: 'kek-1', dek, keyId: 'key_old', purpose: 'subject' });
    expect(await p.unwrap(1, old, 'key_old', 'subject')).toEqual(dek);
    await expect(p.unwrap(1, old, 'key_old', 'erasure')).rejects.toMatchObject({ code: 'decrypt_failed' });
    // forgotten (the cached KEK and its prepared schedule wiped), then read again from the file
    p.forget(1);
    expect(await p.unwrap(1, fresh, 'key_new', 'subject')).toEqual(dek);
    await p.destroyEpoch(1);
    await expect(p.wrap(1, dek, 'key_x', 'subject')).rejects.toMatchObject({ code: 'epoch_unavailable' });
    await expect(p.unwrap(1, fresh, 'key_new', 'subject')).rejects.toMatchObject({ code: 'epoch_unavailable' });
    await expect(p.unwrap(1, old, 'key_old', 'subject')).rejects.toMatchObject({ code: 'epoch_unavailable' });
    await p.close();
  });
});
