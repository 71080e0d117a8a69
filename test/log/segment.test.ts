import { describe, expect, it } from 'vitest';
import { randomBytes } from '../../src/crypto/index.js';
import { LetheError } from '../../src/errors.js';
import { openFrame, sealFrame } from '../../src/log/frame.js';
import { decodeSegment, encodeSegment, frameAt, frameFromRange, frameRange } from '../../src/log/segment.js';

describe('log segments', () => {
  it('round-trip many frames, and the recorded places find each frame alone', () => {
    const frames = Array.from({ length: 20 }, (_, i) => randomBytes(1 + i * 37));
    const { bytes, places } = encodeSegment(frames);
    const decoded = decodeSegment(bytes);
    expect(decoded.map((d) => Buffer.from(d.envelope))).toEqual(frames.map((f) => Buffer.from(f)));
    places.forEach((p, i) => expect(frameAt(bytes, p)).toEqual(frames[i]));
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

  it('open what they seal', () => {
    expect(openFrame(dek, ids, sealFrame(dek, ids, payload))).toEqual(payload);
  });

  it('are bound to their key id, entry id and sequence number', () => {
    const frame = sealFrame(dek, ids, payload);
    for (const moved of [{ ...ids, entryId: 'entry_2' }, { ...ids, seq: 4 }]) {
      expect(() => openFrame(dek, moved, frame)).toThrow(LetheError);
    }
    expect(() => openFrame(dek, { ...ids, keyId: 'key_b' }, frame)).toThrow(LetheError);
    expect(() => openFrame(new Uint8Array(32).fill(8), ids, frame)).toThrow(LetheError);
  });

  it('carry no plaintext', () => {
    const frame = sealFrame(dek, ids, payload);
    expect(Buffer.from(frame).includes(Buffer.from('Alice'))).toBe(false);
    expect(Buffer.from(frame).includes(Buffer.from('note'))).toBe(false);
  });
});
