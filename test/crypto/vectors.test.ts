import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { encodeContext, open, parseEnvelope, seal, unwrapKey, wrapContext } from '../../src/crypto/index.js';
import { ERROR_CODES } from '../../src/errors.js';
import { expectLetheError, hex, unhex } from './helpers.js';
import { refSealEnvelope } from './reference.js';
import type { EnvelopeVector, InvalidEnvelopeVector } from '../vectors/generate-envelope-vectors.js';

function loadJson(file: string): unknown {
  return JSON.parse(readFileSync(new URL(`../vectors/${file}`, import.meta.url), 'utf8'));
}

const HEX = /^(?:[0-9a-f]{2})*$/;

function loadValid(): EnvelopeVector[] {
  const data = loadJson('envelope-v1.json');
  if (!Array.isArray(data)) throw new Error('envelope-v1.json must be an array');
  for (const v of data as EnvelopeVector[]) {
    for (const field of ['key', 'nonce', 'plaintext', 'associatedData', 'envelope'] as const) {
      if (typeof v[field] !== 'string' || !HEX.test(v[field])) throw new Error(`${v.name}: ${field} is not lowercase hex`);
    }
    if (typeof v.name !== 'string' || typeof v.keyId !== 'string') throw new Error('vector without name or keyId');
  }
  return data as EnvelopeVector[];
}

function loadInvalid(): InvalidEnvelopeVector[] {
  const data = loadJson('envelope-v1-invalid.json');
  if (!Array.isArray(data)) throw new Error('envelope-v1-invalid.json must be an array');
  for (const v of data as InvalidEnvelopeVector[]) {
    for (const field of ['key', 'associatedData', 'envelope'] as const) {
      if (typeof v[field] !== 'string' || !HEX.test(v[field])) throw new Error(`${v.name}: ${field} is not lowercase hex`);
    }
  }
  return data as InvalidEnvelopeVector[];
}

const valid = loadValid();
const invalid = loadInvalid();

describe('envelope-v1.json known-answer vectors', () => {
  it('has at least 8 cases with unique names', () => {
    expect(valid.length).toBeGreaterThanOrEqual(8);
    expect(new Set(valid.map((v) => v.name)).size).toBe(valid.length);
  });

  it('covers empty, 1-byte, 64-byte and 1000-byte plaintexts, a 255-byte key id and a "dek" context', () => {
    const plaintextLengths = valid.map((v) => v.plaintext.length / 2);
    expect(plaintextLengths).toEqual(expect.arrayContaining([0, 1, 64, 1000]));
    expect(valid.some((v) => v.keyId.length === 255)).toBe(true);
    expect(valid.some((v) => v.context?.purpose === 'dek')).toBe(true);
  });

  describe.each(valid.map((v) => [v.name, v] as const))('vector %s', (_name, v) => {
    const key = unhex(v.key);
    const nonce = unhex(v.nonce);
    const plaintext = unhex(v.plaintext);
    const associatedData = unhex(v.associatedData);

    it('re-seals byte for byte with the recorded nonce', () => {
      expect(hex(seal({ key, keyId: v.keyId, nonce, plaintext, associatedData }))).toBe(v.envelope);
    });

    it('opens to the recorded plaintext', () => {
      const opened = open({ key, envelope: unhex(v.envelope), associatedData, expectedKeyId: v.keyId });
      expect(hex(opened)).toBe(v.plaintext);
    });

    it('matches the independent node:crypto implementation of the spec', () => {
      expect(hex(refSealEnvelope({ key, keyId: v.keyId, nonce, plaintext, associatedData }))).toBe(v.envelope);
    });

    it('records its key id and nonce in the header', () => {
      const parts = parseEnvelope(unhex(v.envelope));
      expect(parts.keyId).toBe(v.keyId);
      expect(hex(parts.nonce)).toBe(v.nonce);
    });
  });

  const withContext = valid.flatMap((v) => (v.context ? [[v.name, v.context, v.associatedData] as const] : []));

  it('has at least three vectors whose associated data comes from encodeContext', () => {
    expect(withContext.length).toBeGreaterThanOrEqual(3);
  });

  it.each(withContext)('vector %s has associated data equal to encodeContext of its recorded context', (_n, context, ad) => {
    expect(hex(encodeContext(context.purpose, context.fields))).toBe(ad);
  });

  it('the wrapped-dek vector (the legacy, purpose-less wrap) unwraps with unwrapKey only when legacy wraps are accepted', () => {
    const v = valid.find((x) => x.name === 'wrapped-dek');
    expect(v?.context?.purpose).toBe('dek');
    const keyId = v!.context!.fields['keyId']!;
    const input = { kek: unhex(v!.key), kekId: v!.keyId, wrapped: unhex(v!.envelope), keyId, purpose: 'subject' } as const;
    expect(() => unwrapKey(input)).toThrow();
    const dek = unwrapKey({ ...input, acceptLegacy: true });
    expect(hex(dek)).toBe(v!.plaintext);
  });

  it('the wrapped-key-erasure vector (a purpose-bound wrap) unwraps with unwrapKey as an erasure key, and as nothing else', () => {
    const v = valid.find((x) => x.name === 'wrapped-key-erasure');
    expect(v?.context).toEqual({ purpose: 'wrapped-key', fields: { keyId: 'key_erasure-7', purpose: 'erasure' } });
    expect(hex(wrapContext('key_erasure-7', 'erasure'))).toBe(v!.associatedData);
    const input = { kek: unhex(v!.key), kekId: v!.keyId, wrapped: unhex(v!.envelope), keyId: 'key_erasure-7' };
    expect(hex(unwrapKey({ ...input, purpose: 'erasure' }))).toBe(v!.plaintext);
    for (const purpose of ['subject', 'artifact-version'] as const) {
      expect(() => unwrapKey({ ...input, purpose, acceptLegacy: true })).toThrow();
    }
  });
});

describe('envelope-v1-invalid.json negative vectors', () => {
  it('covers truncation, bad magic, version 2, algorithm 9, a zero-length key id and a flipped tag byte', () => {
    const names = invalid.map((v) => v.name);
    expect(names).toEqual(
      expect.arrayContaining([
        'truncated-fixed-header',
        'truncated-last-byte',
        'bad-magic-LF',
        'version-2',
        'algorithm-9',
        'zero-length-key-id',
        'flipped-tag-byte',
      ]),
    );
    expect(new Set(names).size).toBe(names.length);
  });

  it('only names error codes that exist', () => {
    for (const v of invalid) expect(ERROR_CODES, v.name).toContain(v.expectedCode);
  });

  it.each(invalid.map((v) => [v.name, v.expectedCode, v] as const))('rejects %s with %s', (_name, code, v) => {
    expectLetheError(
      () =>
        open({
          key: unhex(v.key),
          envelope: unhex(v.envelope),
          associatedData: unhex(v.associatedData),
          ...(v.expectedKeyId === undefined ? {} : { expectedKeyId: v.expectedKeyId }),
        }),
      code,
    );
  });
});
