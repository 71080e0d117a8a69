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

export function encodeContext(purpose: string, fields: Readonly<Record<string, ContextValue>> = {}): Uint8Array {
  if (purpose.length === 0) throw new LetheError('validation_failed', 'context purpose must not be empty');
  const names = Object.keys(fields).sort();
  if (names.length > 0xffff) throw new LetheError('validation_failed', 'context has too many fields');
  const chunks: Uint8Array[] = [PREFIX];
  const push = (bytes: Uint8Array, width: 2 | 4): void => {
    const len = new Uint8Array(width);
    const view = new DataView(len.buffer);
    if (width === 2) {
      if (bytes.length > 0xffff) throw new LetheError('validation_failed', 'context purpose or field name too long');
      view.setUint16(0, bytes.length);
    } else {
      view.setUint32(0, bytes.length);
    }
    chunks.push(len, bytes);
  };
  push(utf8.encode(purpose), 2);
  const count = new Uint8Array(2);
  new DataView(count.buffer).setUint16(0, names.length);
  chunks.push(count);
  for (const name of names) {
    const value = fields[name]!;
    if (typeof value === 'number' && !Number.isSafeInteger(value)) {
      throw new LetheError('validation_failed', `context field ${name} must be an integer`);
    }
    push(utf8.encode(name), 2);
    push(utf8.encode(String(value)), 4);
  }
  let total = 0;
  for (const c of chunks) total += c.length;
  const out = new Uint8Array(total);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}
