/**
 * The wire's ids come from src/ids.ts: the writer client's entry and segment ids are
 * `newId` / `newSegmentKey`, and a certificate-signing key's id (`csk_`, derived from its
 * public key) is one of the id kinds, with the same grammar as crypto's own check.
 */
import { readFileSync } from 'node:fs';
import { ed25519 } from '@noble/curves/ed25519.js';
import { describe, expect, it } from 'vitest';
import { CERTIFICATE_KEY_ID_PATTERN, certificateKeyId } from '../../src/crypto/certificate.js';
import { ID_PATTERNS, ID_PREFIXES, isId, newId, newSegmentKey, SEGMENT_KEY_PATTERN } from '../../src/ids.js';
import { SegmentEntrySchema, SegmentRegistrationSchema } from '../../src/wire/log.js';

describe('id prefixes', () => {
  it('csk_ is an id kind, and its pattern is the one certificates are checked by', () => {
    expect(ID_PREFIXES).toContain('csk');
    expect(ID_PATTERNS.csk.source).toBe(CERTIFICATE_KEY_ID_PATTERN.source);
    const id = certificateKeyId(ed25519.getPublicKey(ed25519.utils.randomSecretKey()));
    expect(isId('csk', id)).toBe(true);
  });

  it('the writer client builds no id by hand: its entry and segment ids come from src/ids.ts', () => {
    const writer = readFileSync(new URL('../../src/client/writer.ts', import.meta.url), 'utf8');
    expect(writer).not.toMatch(/[`'"](entry|log\/seg)_/);
    expect(writer).toContain("newId('entry')");
    expect(writer).toContain('newSegmentKey()');
  });

  it('what the writer makes for a registration is what POST /v1/segments takes', () => {
    const segment = newSegmentKey();
    expect(segment).toMatch(SEGMENT_KEY_PATTERN);
    const entry = { entryId: newId('entry'), subject: 'user:42', keyId: newId('key'), seq: 1, offset: 0, length: 10, wrappedKey: 'A'.repeat(48) };
    expect(SegmentEntrySchema.parse(entry)).toEqual(entry);
    expect(SegmentRegistrationSchema.safeParse({ segment, entries: [entry] }).success).toBe(true);
  });
});
