import { describe, expect, it } from 'vitest';
import { randomBytes } from '../../src/crypto/index.js';
import { LetheError } from '../../src/errors.js';
import { openEntry, rewrapRecordKey, sealEntry, sealLegacyFrame } from '../../src/log/frame.js';
import { decodeSegment, encodeSegment, frameAt, frameFromRange, frameRange } from '../../src/log/segment.js';

describe('log segments', () => {
  it('round-trip many frames, and the recorded places find each frame alone', () => {
    const frames = Array.from({ length: 20 }, (_, i) => randomBytes(1 + i * 37));
    const { bytes, places } = encodeSegment(frames);
    const decoded = decodeSegment(bytes);
    expect(decoded.map((d) => Buffer.from(d.envelope))).toEqual(frames.map((f) => Buffer.from(f)));
    places.forEach((p, i) => {
      expect(frameAt(bytes, p)).toEqual(frames[i]);
    });
  });

  it('a frame can be fetched by its range alone, with its length prefix checked', () => {
    const frames = [randomBytes(10), randomBytes(33)];
    const { bytes, places } = encodeSegment(frames);
    places.forEach((p, i) => {
      const r = frameRange(p);
      expect(frameFromRange(bytes.subarray(r.offset, r.offset + r.length), p)).toEqual(frames[i]);
    });
    const r = frameRange(places[1]!);
    expect(() => frameFromRange(bytes.subarray(r.offset, r.offset + r.length - 1), places[1]!)).toThrow(LetheError);
    expect(() => frameFromRange(bytes.subarray(r.offset + 1, r.offset + r.length + 1), places[1]!)).toThrow(LetheError);
    expect(() => frameRange({ offset: 2, length: 5 })).toThrow(LetheError);
  });

  it('every truncation and a wrong magic, version or indexed place is a segment_malformed error', () => {
    const { bytes, places } = encodeSegment([randomBytes(10), randomBytes(5)]);
    for (let n = 0; n < bytes.length; n++) {
      const err = (() => {
        try {
          decodeSegment(bytes.subarray(0, n));
        } catch (e) {
          return e;
        }
      })();
      expect(err).toBeInstanceOf(LetheError);
      expect((err as LetheError).code).toBe('segment_malformed');
    }
    const bad = bytes.slice();
    bad[4] = 2;
    expect(() => decodeSegment(bad)).toThrow(/version 2/);
    const notLog = bytes.slice();
    notLog[0] = 0x58;
    expect(() => decodeSegment(notLog)).toThrow(LetheError);
    expect(() => frameAt(bytes, { offset: places[0]!.offset, length: places[0]!.length + 1 })).toThrow(LetheError);
    expect(() => frameAt(bytes, { offset: 3, length: 2 })).toThrow(LetheError);
    expect(() => decodeSegment(new Uint8Array([...bytes, 0]))).toThrow(/trailing/);
  });
});

describe('log frames', () => {
  const dek = new Uint8Array(32).fill(7);
  const ids = { keyId: 'key_a', entryId: 'entry_1', seq: 3 };
  const payload = { text: 'met Alice at 12 Rue de la Paix', kind: 'note', metadata: { mood: 'ok' } };

  it('open what they seal, through a record key of their own wrapped under the subject key', () => {
    const sealed = sealEntry(dek, ids, payload);
    expect(openEntry(dek, ids, sealed.wrappedKey, sealed.envelope)).toEqual(payload);
    // each entry gets a fresh record key: two seals of the same entry share nothing
    const again = sealEntry(dek, ids, payload);
    expect(Buffer.from(again.wrappedKey).equals(Buffer.from(sealed.wrappedKey))).toBe(false);
    expect(() => openEntry(dek, ids, again.wrappedKey, sealed.envelope)).toThrow(LetheError);
  });

  it('are bound to their entry id, sequence number and subject key', () => {
    const { envelope, wrappedKey } = sealEntry(dek, ids, payload);
    for (const moved of [
      { ...ids, entryId: 'entry_2' },
      { ...ids, seq: 4 },
      { ...ids, keyId: 'key_b' },
    ]) {
      expect(() => openEntry(dek, moved, wrappedKey, envelope)).toThrow(LetheError);
    }
    expect(() => openEntry(new Uint8Array(32).fill(8), ids, wrappedKey, envelope)).toThrow(LetheError);
    // a record frame is not a legacy frame, and the other way round
    expect(() => openEntry(dek, ids, null, envelope)).toThrow(LetheError);
    expect(() => openEntry(dek, ids, wrappedKey, sealLegacyFrame(dek, ids, payload))).toThrow(LetheError);
  });

  it('move to a new subject key by re-wrapping the record key alone; the old key opens nothing after', () => {
    const { envelope, wrappedKey } = sealEntry(dek, ids, payload);
    const next = { dek: new Uint8Array(32).fill(9), keyId: 'key_c' };
    const moved = rewrapRecordKey({ dek, keyId: ids.keyId }, next, ids.entryId, wrappedKey);
    expect(openEntry(next.dek, { ...ids, keyId: next.keyId }, moved, envelope)).toEqual(payload);
    expect(() => openEntry(dek, ids, moved, envelope)).toThrow(LetheError);
    expect(() => openEntry(next.dek, { ...ids, keyId: next.keyId }, wrappedKey, envelope)).toThrow(LetheError);
    // a wrapped record key copied onto another entry does not unwrap there
    expect(() => rewrapRecordKey({ dek, keyId: ids.keyId }, next, 'entry_2', wrappedKey)).toThrow(LetheError);
  });

  it('written before record keys still open under the subject key', () => {
    expect(openEntry(dek, ids, null, sealLegacyFrame(dek, ids, payload))).toEqual(payload);
    expect(() => openEntry(dek, { ...ids, keyId: 'key_b' }, null, sealLegacyFrame(dek, ids, payload))).toThrow(LetheError);
  });

  it('carry no plaintext', () => {
    const { envelope, wrappedKey } = sealEntry(dek, ids, payload);
    for (const bytes of [envelope, wrappedKey, sealLegacyFrame(dek, ids, payload)]) {
      expect(Buffer.from(bytes).includes(Buffer.from('Alice'))).toBe(false);
      expect(Buffer.from(bytes).includes(Buffer.from('note'))).toBe(false);
    }
  });
});
