/**
 * Calls between replicas (a sharded search asking the owners of other shards): each
 * request carries `x-lethe-replica: v1.<ms>.<nonce>.<mac>`, an HMAC-SHA256 under the
 * 'replica-call' system key (every replica of one vault derives the same key from the
 * root key; no client token works) over the method, path, time, nonce and the body's
 * SHA-256. A call is refused when its MAC is wrong (compared in constant time), its
 * time is more than SKEW_MS from this replica's clock, or its nonce was seen already.
 */
import { sha256 } from '@noble/hashes/sha2.js';
import { constantTimeEqual, fromBase64Url, KeyedHasher, randomBytes, toBase64Url, utf8, zeroize } from '../crypto/index.js';
import { LetheError } from '../errors.js';

export const REPLICA_CALL_HEADER = 'x-lethe-replica';
/** How far a call's time may be from the receiver's clock. */
export const SKEW_MS = 30_000;
/** Nonces remembered (a flood of valid calls needs the key). */
const NONCES = 100_000;

const bad = (why: string) => new LetheError('unauthorized', `not a call from another replica: ${why}`);

export class ReplicaCalls {
  readonly #mac: KeyedHasher;
  /** Nonce → the call's time, for SKEW_MS on either side of it. */
  readonly #seen = new Map<string, number>();

  /** Consumes `key`: it is zeroed once keyed. */
  constructor(key: Uint8Array) {
    this.#mac = new KeyedHasher(key);
    zeroize(key);
  }

  /** The header value for one call. */
  sign(method: string, path: string, body: Uint8Array, now = Date.now()): string {
    const nonce = toBase64Url(randomBytes(16));
    return `v1.${now}.${nonce}.${toBase64Url(this.#macOf(method, path, now, nonce, body))}`;
  }

  /** Refuses (`unauthorized`) a header that cannot verify whatever the body: malformed, or its time outside the window (checked before a body is read). */
  plausible(header: string | undefined, now = Date.now()): void {
    this.#parse(header, now);
  }

  /** Refuses (`unauthorized`) a call this vault's replicas did not sign just now, or one seen before. */
  verify(header: string | undefined, method: string, path: string, body: Uint8Array, now = Date.now()): void {
    const parts = this.#parse(header, now);
    const at = Number(parts[1]);
    const mac = fromBase64Url(parts[3]!);
    if (!mac || !constantTimeEqual(mac, this.#macOf(method, path, at, parts[2]!, body))) throw bad('no valid signature');
    this.#forgetOld(now);
    if (this.#seen.has(parts[2]!)) throw bad('it was seen before');
    this.#seen.set(parts[2]!, at);
  }

  close(): void {
    this.#mac.destroy();
  }

  #parse(header: string | undefined, now: number): string[] {
    const parts = (header ?? '').split('.');
    if (parts.length !== 4 || parts[0] !== 'v1' || !/^\d{1,15}$/.test(parts[1]!) || !/^[A-Za-z0-9_-]{22}$/.test(parts[2]!)) throw bad('no valid signature');
    if (Math.abs(now - Number(parts[1])) > SKEW_MS) throw bad(`its time is more than ${SKEW_MS / 1000} s from this replica's clock`);
    return parts;
  }

  #macOf(method: string, path: string, at: number, nonce: string, body: Uint8Array): Uint8Array {
    const head = utf8.encode(`v1\n${method.toUpperCase()}\n${path}\n${at}\n${nonce}\n`);
    const digest = sha256(body);
    const message = new Uint8Array(head.length + digest.length);
    message.set(head);
    message.set(digest, head.length);
    return this.#mac.hash(message);
  }

  #forgetOld(now: number): void {
    for (const [nonce, at] of this.#seen) {
      if (this.#seen.size <= NONCES && at >= now - 2 * SKEW_MS) break;
      this.#seen.delete(nonce);
    }
  }
}
