/**
 * Generates the lethe v1 envelope known-answer vectors:
 *
 *   test/vectors/envelope-v1.json          envelopes that must open (and re-seal byte for byte)
 *   test/vectors/envelope-v1-invalid.json  envelopes that must be rejected, with the expected error code
 *
 * Everything is fixed (keys, nonces through seal's `nonce` test hook, key ids,
 * plaintexts, associated data), so re-running this script must reproduce both files
 * exactly. If the output changes, the envelope format changed: that is a breaking
 * change for every stored ciphertext, not a test to update casually.
 *
 *   npx tsx test/vectors/generate-envelope-vectors.ts
 */
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { ContextValue } from '../../src/crypto/index.js';
import { encodeContext, open, seal } from '../../src/crypto/index.js';
import { type ErrorCode, LetheError } from '../../src/errors.js';

export interface EnvelopeVector {
  name: string;
  description: string;
  /** 32-byte key, hex. */
  key: string;
  keyId: string;
  /** 24-byte nonce, hex. */
  nonce: string;
  plaintext: string;
  associatedData: string;
  /** When associatedData came from encodeContext: its arguments (values as strings). */
  context?: { purpose: string; fields: Record<string, string> };
  envelope: string;
}

export interface InvalidEnvelopeVector {
  name: string;
  description: string;
  key: string;
  associatedData: string;
  expectedKeyId?: string;
  envelope: string;
  /** The LetheError code open() must throw. */
  expectedCode: ErrorCode;
}

const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex');
const bytes = (length: number, f: (i: number) => number): Uint8Array => Uint8Array.from({ length }, (_, i) => f(i) & 0xff);
const text = (s: string): Uint8Array => new TextEncoder().encode(s);

interface Case {
  name: string;
  description: string;
  key: Uint8Array;
  keyId: string;
  nonce: Uint8Array;
  plaintext: Uint8Array;
  associatedData?: Uint8Array;
  context?: { purpose: string; fields: Record<string, ContextValue> };
}

const KEY_A = bytes(32, (i) => i); // 00 01 .. 1f
const KEY_B = bytes(32, (i) => 0x80 + i); // 80 81 .. 9f
const KEY_FF = bytes(32, () => 0xff);
const NONCE_A = bytes(24, (i) => 0x40 + i); // 40 41 .. 57
const NONCE_B = bytes(24, (i) => 0xa0 + 3 * i);
const NONCE_0 = bytes(24, () => 0);
/** All 94 printable ASCII characters, cycled to 255 bytes. */
const MAX_KEY_ID = String.fromCharCode(...Array.from({ length: 255 }, (_, i) => 0x21 + (i % 94)));

const CASES: Case[] = [
  {
    name: 'empty-plaintext',
    description: 'zero-length plaintext and zero-length associated data: the body is just the Poly1305 tag',
    key: KEY_A,
    keyId: 'kek-1',
    nonce: NONCE_A,
    plaintext: new Uint8Array(0),
    associatedData: new Uint8Array(0),
  },
  {
    name: 'one-byte',
    description: 'a single plaintext byte under raw associated data',
    key: KEY_A,
    keyId: 'kek-1',
    nonce: NONCE_B,
    plaintext: Uint8Array.of(0x2a),
    associatedData: text('x'),
  },
  {
    name: '64-bytes-frame-context',
    description: 'exactly one ChaCha20 block of plaintext, frame context as associated data',
    key: KEY_B,
    keyId: 'dek-7f3a',
    nonce: NONCE_A,
    plaintext: bytes(64, (i) => i),
    context: { purpose: 'frame', fields: { entryId: 'e-0001', seq: 1, subject: 'sbj_9c1d' } },
  },
  {
    name: '1000-bytes',
    description: 'plaintext spanning 16 blocks with a partial last block',
    key: KEY_B,
    keyId: 'dek-7f3a',
    nonce: NONCE_B,
    plaintext: bytes(1000, (i) => i * 7 + 3),
    context: { purpose: 'frame', fields: { entryId: 'e-0002', seq: 2, subject: 'sbj_9c1d' } },
  },
  {
    name: 'max-length-key-id',
    description: 'a 255-byte key id (every printable ASCII character, cycled): the largest header',
    key: KEY_A,
    keyId: MAX_KEY_ID,
    nonce: NONCE_A,
    plaintext: text('hello'),
    associatedData: text('max key id'),
  },
  {
    name: 'single-char-key-id',
    description: 'a 1-byte key id: the smallest header',
    key: KEY_FF,
    keyId: 'k',
    nonce: NONCE_0,
    plaintext: text('smallest header'),
    associatedData: new Uint8Array(0),
  },
  {
    name: 'wrapped-dek',
    description: 'a 32-byte data key wrapped under a KEK exactly as wrapKey does: context ("dek", {keyId})',
    key: KEY_B,
    keyId: 'kek-3',
    nonce: NONCE_B,
    plaintext: bytes(32, (i) => 0xc0 + i),
    context: { purpose: 'dek', fields: { keyId: 'dek-subject-42' } },
  },
  {
    name: 'wrapped-key-erasure',
    description: 'a 32-byte key wrapped under a KEK exactly as wrapKey does since purposes are bound: context ("wrapped-key", {keyId, purpose})',
    key: KEY_B,
    keyId: 'kek-4',
    nonce: NONCE_A,
    plaintext: bytes(32, (i) => 0x30 + i),
    context: { purpose: 'wrapped-key', fields: { keyId: 'key_erasure-7', purpose: 'erasure' } },
  },
  {
    name: 'wrapped-epoch-kek',
    description: 'an epoch KEK wrapped under the root key, bigint epoch in the context',
    key: KEY_FF,
    keyId: 'root-2024',
    nonce: NONCE_A,
    plaintext: bytes(32, (i) => 0x55 ^ i),
    context: { purpose: 'epoch-kek', fields: { epoch: 9007199254740993n, keyId: 'epoch-kek-9' } },
  },
  {
    name: 'utf8-plaintext-long-aad',
    description: 'multi-byte UTF-8 plaintext with 300 bytes of associated data',
    key: KEY_A,
    keyId: 'kek-1',
    nonce: NONCE_0,
    plaintext: text('Grüße, 世界 — erase me 🗑️'),
    associatedData: bytes(300, (i) => 255 - i),
  },
];

function associatedDataOf(c: Case): Uint8Array {
  if (c.context) return encodeContext(c.context.purpose, c.context.fields);
  return c.associatedData ?? new Uint8Array(0);
}

export function buildValidVectors(): EnvelopeVector[] {
  return CASES.map((c) => {
    const associatedData = associatedDataOf(c);
    const envelope = seal({ key: c.key, keyId: c.keyId, nonce: c.nonce, plaintext: c.plaintext, associatedData });
    const opened = open({ key: c.key, envelope, associatedData, expectedKeyId: c.keyId });
    if (hex(opened) !== hex(c.plaintext)) throw new Error(`vector ${c.name} does not round-trip`);
    const vector: EnvelopeVector = {
      name: c.name,
      description: c.description,
      key: hex(c.key),
      keyId: c.keyId,
      nonce: hex(c.nonce),
      plaintext: hex(c.plaintext),
      associatedData: hex(associatedData),
      envelope: hex(envelope),
    };
    if (c.context) {
      vector.context = {
        purpose: c.context.purpose,
        fields: Object.fromEntries(Object.entries(c.context.fields).map(([k, v]) => [k, String(v)])),
      };
    }
    return vector;
  });
}

export function buildInvalidVectors(valid: readonly EnvelopeVector[]): InvalidEnvelopeVector[] {
  const base = valid.find((v) => v.name === '64-bytes-frame-context');
  if (!base) throw new Error('base vector missing');
  if (base.key === hex(KEY_A)) throw new Error('the wrong-key vector needs a base vector under another key');
  const env = Buffer.from(base.envelope, 'hex');
  const keyIdLength = env[4]!;
  const nonceAt = 5 + keyIdLength;
  const commitAt = nonceAt + 24;
  const bodyAt = commitAt + 32;
  const withByte = (pos: number, value: number): Buffer => {
    const copy = Buffer.from(env);
    copy[pos] = value;
    return copy;
  };
  const flip = (pos: number, mask = 0x01): Buffer => withByte(pos, env[pos]! ^ mask);
  const item = (
    name: string,
    description: string,
    envelope: Uint8Array,
    expectedCode: ErrorCode,
    extra: Partial<InvalidEnvelopeVector> = {},
  ): InvalidEnvelopeVector => ({
    name,
    description,
    key: base.key,
    associatedData: base.associatedData,
    envelope: hex(envelope),
    expectedCode,
    ...extra,
  });
  const otherId = Buffer.from('dek-7f3b', 'ascii');
  return [
    item('empty-input', 'zero bytes', new Uint8Array(0), 'envelope_malformed'),
    item('truncated-fixed-header', 'only the first 4 bytes', env.subarray(0, 4), 'envelope_malformed'),
    item('truncated-in-key-id', 'cut inside the key id', env.subarray(0, 7), 'envelope_malformed'),
    item('truncated-in-nonce', 'cut inside the nonce', env.subarray(0, nonceAt + 10), 'envelope_malformed'),
    item('truncated-in-commitment', 'cut inside the commitment', env.subarray(0, commitAt + 31), 'envelope_malformed'),
    item('truncated-body-shorter-than-tag', 'header intact but only 15 body bytes', env.subarray(0, bodyAt + 15), 'envelope_malformed'),
    item('truncated-last-byte', 'the last tag byte removed', env.subarray(0, env.length - 1), 'decrypt_failed'),
    item('extended-one-byte', 'one zero byte appended', Buffer.concat([env, Buffer.of(0)]), 'decrypt_failed'),
    item('bad-magic-LF', 'magic "LF" instead of "LE"', withByte(1, 0x46), 'envelope_malformed'),
    item('bad-magic-lowercase', 'magic "le"', Buffer.concat([Buffer.from('le'), env.subarray(2)]), 'envelope_malformed'),
    item('version-0', 'format version 0', withByte(2, 0), 'envelope_unsupported'),
    item('version-2', 'format version 2', withByte(2, 2), 'envelope_unsupported'),
    item('algorithm-0', 'algorithm id 0', withByte(3, 0), 'envelope_unsupported'),
    item('algorithm-9', 'algorithm id 9', withByte(3, 9), 'envelope_unsupported'),
    item('zero-length-key-id', 'key id length byte 0', withByte(4, 0), 'envelope_malformed'),
    item('key-id-with-space', 'a space (0x20) inside the key id', withByte(6, 0x20), 'envelope_malformed'),
    item('key-id-with-high-byte', 'a 0xff byte inside the key id', withByte(5, 0xff), 'envelope_malformed'),
    item('key-id-length-overruns', 'key id length 255 on a short envelope', withByte(4, 255), 'envelope_malformed'),
    item(
      'relabelled-key-id',
      'key id rewritten to another id of the same length (header is authenticated)',
      Buffer.concat([env.subarray(0, 5), otherId, env.subarray(nonceAt)]),
      'decrypt_failed',
    ),
    item(
      'relabelled-key-id-longer',
      'key id rewritten to a longer id, length byte adjusted',
      Buffer.concat([env.subarray(0, 4), Buffer.of(11), Buffer.from('dek-7f3a-v2'), env.subarray(nonceAt)]),
      'decrypt_failed',
    ),
    item('flipped-nonce-byte', 'one bit of the nonce flipped', flip(nonceAt + 5), 'key_commitment_mismatch'),
    item('flipped-commitment-byte', 'one bit of the commitment flipped', flip(commitAt), 'key_commitment_mismatch'),
    item('flipped-ciphertext-byte', 'one bit of the ciphertext flipped', flip(bodyAt), 'decrypt_failed'),
    item('flipped-tag-byte', 'one bit of the Poly1305 tag flipped', flip(env.length - 1, 0x80), 'decrypt_failed'),
    item('wrong-key', 'a valid envelope opened under another key', env, 'key_commitment_mismatch', {
      key: hex(KEY_A),
    }),
    item('wrong-associated-data', 'a valid envelope opened with different associated data', env, 'decrypt_failed', {
      associatedData: hex(encodeContext('frame', { entryId: 'e-0001', seq: 2, subject: 'sbj_9c1d' })),
    }),
    item('unexpected-key-id', 'a valid envelope opened with expectedKeyId naming another key', env, 'decrypt_failed', {
      expectedKeyId: 'dek-7f3b',
    }),
  ];
}

function checkInvalid(vectors: readonly InvalidEnvelopeVector[]): void {
  for (const v of vectors) {
    try {
      open({
        key: Buffer.from(v.key, 'hex'),
        envelope: Buffer.from(v.envelope, 'hex'),
        associatedData: Buffer.from(v.associatedData, 'hex'),
        ...(v.expectedKeyId === undefined ? {} : { expectedKeyId: v.expectedKeyId }),
      });
    } catch (e) {
      if (e instanceof LetheError && e.code === v.expectedCode) continue;
      throw new Error(`invalid vector ${v.name}: got ${String(e)}, expected ${v.expectedCode}`);
    }
    throw new Error(`invalid vector ${v.name} opened`);
  }
}

function main(): void {
  const valid = buildValidVectors();
  const invalid = buildInvalidVectors(valid);
  checkInvalid(invalid);
  const dir = fileURLToPath(new URL('.', import.meta.url));
  writeFileSync(`${dir}envelope-v1.json`, `${JSON.stringify(valid, null, 2)}\n`);
  writeFileSync(`${dir}envelope-v1-invalid.json`, `${JSON.stringify(invalid, null, 2)}\n`);
  console.log(`wrote ${valid.length} valid and ${invalid.length} invalid envelope vectors to ${dir}`);
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) main();
