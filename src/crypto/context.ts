/**
 * Associated data: the canonical bytes that bind a ciphertext to its place.
 *
 * A context is a purpose (what kind of thing is encrypted: "dek", "epoch-kek",
 * "frame", ...) and named fields (key id, subject hash, entry id, sequence...).
 * Encoding: "lethe-ad/1", then the purpose, then the fields sorted by name, each as a
 * u16 length-prefixed name and a u32 length-prefixed UTF-8 value. Values are
 * encoded as text, so 1, 1n and "1" are the same value; otherwise two different
 * contexts never encode to the same bytes, and field order in the caller's object
 * does not matter.
 */
import { LetheError } from '../errors.js';
import { utf8 } from './bytes.js';

export type ContextValue = string | number | bigint;

const PREFIX = utf8.encode('lethe-ad/1');

/**
 * Purposes and field names are the code's own constants: encoded once (bounded, so
 * that callers passing names of their own do not grow it without end). Every sealed
 * row, frame and wrap encodes a context, so the encoding is one buffer written in one
 * pass, ASCII values byte by byte.
 */
const encodedNames = new Map<string, Uint8Array>();
const MAX_CACHED_NAMES = 512;

function nameBytes(name: string): Uint8Array {
  let bytes = encodedNames.get(name);
  if (bytes === undefined) {
    bytes = utf8.encode(name);
    // a name refused is never kept
    if (bytes.length > 0xffff) throw new LetheError('validation_failed', 'context purpose or field name too long');
    if (encodedNames.size < MAX_CACHED_NAMES) encodedNames.set(name, bytes);
  }
  return bytes;
}

/** A value's text as bytes: the string itself when it is ASCII (written byte by byte), its UTF-8 otherwise. */
function valueBytes(text: string): string | Uint8Array {
  for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) > 0x7f) return utf8.encode(text);
  return text;
}

export function encodeContext(purpose: string, fields: Readonly<Record<string, ContextValue>> = {}): Uint8Array {
  if (purpose.length === 0) throw new LetheError('validation_failed', 'context purpose must not be empty');
  const names = Object.keys(fields);
  if (names.length > 1) names.sort();
  if (names.length > 0xffff) throw new LetheError('validation_failed', 'context has too many fields');
  const p = nameBytes(purpose);
  const nameParts: Uint8Array[] = new Array(names.length);
  const values: Array<string | Uint8Array> = new Array(names.length);
  let total = PREFIX.length + 2 + p.length + 2;
  for (let i = 0; i < names.length; i++) {
    const name = names[i]!;
    const value = fields[name]!;
    if (typeof value === 'number' && !Number.isSafeInteger(value)) {
      throw new LetheError('validation_failed', `context field ${name} must be an integer`);
    }
    nameParts[i] = nameBytes(name);
    values[i] = valueBytes(typeof value === 'string' ? value : String(value));
    total += 2 + nameParts[i]!.length + 4 + values[i]!.length;
  }
  const out = new Uint8Array(total);
  out.set(PREFIX, 0);
  let at = PREFIX.length;
  const u16 = (n: number): void => {
    out[at++] = n >>> 8;
    out[at++] = n & 0xff;
  };
  const bytes = (b: Uint8Array): void => {
    out.set(b, at);
    at += b.length;
  };
  u16(p.length);
  bytes(p);
  u16(names.length);
  for (let i = 0; i < names.length; i++) {
    u16(nameParts[i]!.length);
    bytes(nameParts[i]!);
    const v = values[i]!;
    const n = v.length;
    out[at++] = n >>> 24;
    out[at++] = (n >>> 16) & 0xff;
    out[at++] = (n >>> 8) & 0xff;
    out[at++] = n & 0xff;
    if (typeof v === 'string') for (let j = 0; j < n; j++) out[at++] = v.charCodeAt(j);
    else bytes(v);
  }
  return out;
}
