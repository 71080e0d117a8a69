/**
 * An independent reference implementation of the lethe v1 envelope, built only on
 * node:crypto (OpenSSL) plus a from-the-draft HChaCha20, so the tests can check the
 * production code (which uses @noble/*) against a second implementation rather
 * than against itself.
 *
 *   HKDF-SHA256:          node:crypto hkdfSync (RFC 5869)
 *   HChaCha20:            below, transcribed from draft-irtf-cfrg-xchacha §2.2
 *   ChaCha20-Poly1305:    node:crypto 'chacha20-poly1305' (RFC 8439)
 *   XChaCha20-Poly1305:   HChaCha20 subkey + ChaCha20-Poly1305 with nonce
 *                         0x00000000 || nonce[16..24]  (draft §2.3)
 */
import { createCipheriv, createDecipheriv, hkdfSync } from 'node:crypto';

const SIGMA = [0x61707865, 0x3320646e, 0x79622d32, 0x6b206574] as const;

function rotl(x: number, n: number): number {
  return ((x << n) | (x >>> (32 - n))) >>> 0;
}

function quarterRound(s: Uint32Array, a: number, b: number, c: number, d: number): void {
  s[a] = (s[a]! + s[b]!) >>> 0;
  s[d] = rotl(s[d]! ^ s[a]!, 16);
  s[c] = (s[c]! + s[d]!) >>> 0;
  s[b] = rotl(s[b]! ^ s[c]!, 12);
  s[a] = (s[a]! + s[b]!) >>> 0;
  s[d] = rotl(s[d]! ^ s[a]!, 8);
  s[c] = (s[c]! + s[d]!) >>> 0;
  s[b] = rotl(s[b]! ^ s[c]!, 7);
}

/** HChaCha20(key[32], nonce[16]) -> 32-byte subkey (draft-irtf-cfrg-xchacha §2.2). */
export function hchacha20(key: Uint8Array, nonce16: Uint8Array): Uint8Array {
  if (key.length !== 32 || nonce16.length !== 16) throw new Error('hchacha20: bad input lengths');
  const kv = new DataView(key.buffer, key.byteOffset, key.byteLength);
  const nv = new DataView(nonce16.buffer, nonce16.byteOffset, nonce16.byteLength);
  const s = new Uint32Array(16);
  s.set(SIGMA, 0);
  for (let i = 0; i < 8; i++) s[4 + i] = kv.getUint32(i * 4, true);
  for (let i = 0; i < 4; i++) s[12 + i] = nv.getUint32(i * 4, true);
  for (let round = 0; round < 10; round++) {
    quarterRound(s, 0, 4, 8, 12);
    quarterRound(s, 1, 5, 9, 13);
    quarterRound(s, 2, 6, 10, 14);
    quarterRound(s, 3, 7, 11, 15);
    quarterRound(s, 0, 5, 10, 15);
    quarterRound(s, 1, 6, 11, 12);
    quarterRound(s, 2, 7, 8, 13);
    quarterRound(s, 3, 4, 9, 14);
  }
  const out = new Uint8Array(32);
  const ov = new DataView(out.buffer);
  for (let i = 0; i < 4; i++) ov.setUint32(i * 4, s[i]!, true);
  for (let i = 0; i < 4; i++) ov.setUint32(16 + i * 4, s[12 + i]!, true);
  return out;
}

function xchachaParams(key: Uint8Array, nonce24: Uint8Array): { subkey: Uint8Array; nonce12: Uint8Array } {
  if (nonce24.length !== 24) throw new Error('xchacha: nonce must be 24 bytes');
  const subkey = hchacha20(key, nonce24.subarray(0, 16));
  const nonce12 = new Uint8Array(12);
  nonce12.set(nonce24.subarray(16, 24), 4);
  return { subkey, nonce12 };
}

/** XChaCha20-Poly1305 encrypt: returns ciphertext || 16-byte tag. */
export function refXChaChaSeal(key: Uint8Array, nonce24: Uint8Array, plaintext: Uint8Array, aad: Uint8Array): Uint8Array {
  const { subkey, nonce12 } = xchachaParams(key, nonce24);
  const cipher = createCipheriv('chacha20-poly1305', subkey, nonce12, { authTagLength: 16 });
  cipher.setAAD(aad, { plaintextLength: plaintext.length });
  const body = Buffer.concat([cipher.update(plaintext), cipher.final(), cipher.getAuthTag()]);
  return new Uint8Array(body);
}

/** XChaCha20-Poly1305 decrypt of ciphertext || tag; throws on authentication failure. */
export function refXChaChaOpen(key: Uint8Array, nonce24: Uint8Array, sealed: Uint8Array, aad: Uint8Array): Uint8Array {
  if (sealed.length < 16) throw new Error('xchacha: input shorter than the tag');
  const { subkey, nonce12 } = xchachaParams(key, nonce24);
  const decipher = createDecipheriv('chacha20-poly1305', subkey, nonce12, { authTagLength: 16 });
  decipher.setAAD(aad, { plaintextLength: sealed.length - 16 });
  decipher.setAuthTag(sealed.subarray(sealed.length - 16));
  return new Uint8Array(Buffer.concat([decipher.update(sealed.subarray(0, sealed.length - 16)), decipher.final()]));
}

/** HKDF-SHA256 with salt = nonce, ikm = key (node:crypto). */
export function refHkdf(key: Uint8Array, nonce: Uint8Array, info: string, length = 32): Uint8Array {
  return new Uint8Array(hkdfSync('sha256', key, nonce, info, length));
}

export interface RefSealInput {
  key: Uint8Array;
  keyId: string;
  nonce: Uint8Array;
  plaintext: Uint8Array;
  associatedData: Uint8Array;
  /** Overrides the commitment written into the header (for forgery tests). */
  commitment?: Uint8Array;
}

/** The envelope header (magic .. commitment) as the format spec lays it out. */
export function refHeader(keyId: string, nonce: Uint8Array, commitment: Uint8Array): Uint8Array {
  const id = Buffer.from(keyId, 'ascii');
  return new Uint8Array(Buffer.concat([Buffer.from([0x4c, 0x45, 1, 1, id.length]), id, nonce, commitment]));
}

/** Seals a lethe v1 envelope from the written spec, without touching src/. */
export function refSealEnvelope(input: RefSealInput): Uint8Array {
  const encKey = refHkdf(input.key, input.nonce, 'lethe/v1/enc');
  const commitment = input.commitment ?? refHkdf(input.key, input.nonce, 'lethe/v1/commit');
  const header = refHeader(input.keyId, input.nonce, commitment);
  const aad = Buffer.concat([header, input.associatedData]);
  const body = refXChaChaSeal(encKey, input.nonce, input.plaintext, aad);
  return new Uint8Array(Buffer.concat([header, body]));
}
