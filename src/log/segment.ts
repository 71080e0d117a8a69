/**
 * Log segments, format version 1: one object holding many frames, each frame an
 * envelope (src/crypto/envelope.ts) sealed under its subject's DEK. No I/O.
 *
 *   offset  size  field (integers big-endian)
 *   0       4     magic "LSEG"
 *   4       1     format version (1)
 *   5       3     reserved (0)
 *   8       4     frame count N
 *   12      ...   N frames: u32 length L, then L bytes of envelope
 *
 * The index in PostgreSQL records each frame's offset (of the envelope, after its
 * length prefix) and length, so one frame can be read without parsing the rest.
 */
import { LetheError } from '../errors.js';

export const SEGMENT_MAGIC = 'LSEG';
export const SEGMENT_VERSION = 1;
const HEADER = 12;
const MAX_FRAME = 16 * 1024 * 1024;

export interface FramePlace {
  readonly offset: number;
  readonly length: number;
}

export function encodeSegment(frames: readonly Uint8Array[]): { bytes: Uint8Array; places: FramePlace[] } {
  let total = HEADER;
  for (const f of frames) {
    if (f.length === 0 || f.length > MAX_FRAME) throw new LetheError('validation_failed', `a frame must be 1 to ${MAX_FRAME} bytes`);
    total += 4 + f.length;
  }
  const bytes = new Uint8Array(total);
  const view = new DataView(bytes.buffer);
  bytes.set(new TextEncoder().encode(SEGMENT_MAGIC), 0);
  bytes[4] = SEGMENT_VERSION;
  view.setUint32(8, frames.length);
  const places: FramePlace[] = [];
  let at = HEADER;
  for (const f of frames) {
    view.setUint32(at, f.length);
    bytes.set(f, at + 4);
    places.push({ offset: at + 4, length: f.length });
    at += 4 + f.length;
  }
  return { bytes, places };
}

function checkHeader(bytes: Uint8Array): number {
  if (!(bytes instanceof Uint8Array) || bytes.length < HEADER) throw new LetheError('segment_malformed', 'segment is truncated (header)');
  if (new TextDecoder().decode(bytes.subarray(0, 4)) !== SEGMENT_MAGIC) throw new LetheError('segment_malformed', 'not a lethe log segment');
  if (bytes[4] !== SEGMENT_VERSION) throw new LetheError('segment_malformed', `unsupported segment format version ${bytes[4]}`);
  return new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength).getUint32(8);
}

/** Every frame of a segment, bounds-checked. */
export function decodeSegment(bytes: Uint8Array): Array<FramePlace & { envelope: Uint8Array }> {
  const count = checkHeader(bytes);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out: Array<FramePlace & { envelope: Uint8Array }> = [];
  let at = HEADER;
  for (let i = 0; i < count; i++) {
    if (at + 4 > bytes.length) throw new LetheError('segment_malformed', `segment is truncated at frame ${i}`);
    const length = view.getUint32(at);
    if (length === 0 || at + 4 + length > bytes.length) throw new LetheError('segment_malformed', `frame ${i} overruns the segment`);
    out.push({ offset: at + 4, length, envelope: bytes.subarray(at + 4, at + 4 + length) });
    at += 4 + length;
  }
  if (at !== bytes.length) throw new LetheError('segment_malformed', 'segment has trailing bytes');
  return out;
}

/** One frame's envelope, by the place the index recorded. */
export function frameAt(bytes: Uint8Array, place: FramePlace): Uint8Array {
  checkHeader(bytes);
  const { offset, length } = place;
  if (!Number.isSafeInteger(offset) || !Number.isSafeInteger(length) || offset < HEADER + 4 || length < 1 || offset + length > bytes.length) {
    throw new LetheError('segment_malformed', 'indexed frame lies outside its segment');
  }
  const declared = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength).getUint32(offset - 4);
  if (declared !== length) throw new LetheError('segment_malformed', 'indexed frame length does not match the segment');
  return bytes.subarray(offset, offset + length);
}

/**
 * The byte range to fetch for one indexed frame without reading its segment: the
 * frame's length prefix and the frame.
 */
export function frameRange(place: FramePlace): { offset: number; length: number } {
  if (!Number.isSafeInteger(place.offset) || !Number.isSafeInteger(place.length) || place.offset < HEADER + 4 || place.length < 1) {
    throw new LetheError('segment_malformed', 'indexed frame lies outside any segment');
  }
  return { offset: place.offset - 4, length: place.length + 4 };
}

/** The name a frame is cached by (src/storage/sealed-cache.ts): segments are written once, so a segment and range denote one frame. */
export function frameKey(segment: string, place: FramePlace): string {
  return `${segment}\u0000${place.offset}\u0000${place.length}`;
}

/** The envelope in bytes fetched by frameRange, after checking its length prefix. */
export function frameFromRange(bytes: Uint8Array, place: FramePlace): Uint8Array {
  if (bytes.length !== place.length + 4) throw new LetheError('segment_malformed', 'indexed frame lies outside its segment');
  const declared = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength).getUint32(0);
  if (declared !== place.length) throw new LetheError('segment_malformed', 'indexed frame length does not match the segment');
  return bytes.subarray(4);
}
