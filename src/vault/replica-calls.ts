/**
 * Calls between replicas (a sharded search or probe asking the owners of other shards):
 * each request carries `x-lethe-replica: v1.<ms>.<nonce>.<digest>.<mac>`, an HMAC-SHA256
 * under the 'replica-call' system key (every replica of one vault derives the same key
 * from the root key; no client token works) over the method, path, receiving replica,
 * time, nonce and the body's SHA-256 (`digest`). The header is checked before the body
 * is read (so an unsigned call costs no body), then the body against its digest. A call
 * is refused when its MAC is wrong (compared in constant time), it names another
 * receiver, its time is more than SKEW_MS from this replica's clock, or its nonce was
 * seen already.
 *
 * The other way round, a replica calls only an address a replica vouched for: each
 * owner stores the MAC of its id and address beside them (`index_shards.owner_url_mac`),
 * so someone who can write the database but lacks the root key cannot send searches or
 * a probe's fingerprints to an address of theirs; and every answer is signed over the
 * call's nonce, the answering replica and the answer's digest, so nothing but a replica
 * of this vault can answer (an address since given to another host included).
 */
import { sha256 } from '@noble/hashes/sha2.js';
import { constantTimeEqual, fromBase64Url, KeyedHasher, randomBytes, toBase64Url, utf8, zeroize } from '../crypto/index.js';
import { LetheError } from '../errors.js';

export const REPLICA_CALL_HEADER = 'x-lethe-replica';
/** The answer's signature (ReplicaCalls.signAnswer). */
export const REPLICA_ANSWER_HEADER = 'x-lethe-replica-answer';
/** How far a call's time may be from the receiver's clock. */
export const SKEW_MS = 30_000;
/** Nonces remembered (a flood of valid calls needs the key). */
const NONCES = 100_000;

const bad = (why: string) => new LetheError('unauthorized', `not a call from another replica: ${why}`);

/** A replica's address as calls name it: its origin. */
const receiver = (url: string): string => new URL(url).origin;

export class ReplicaCalls {
  readonly #mac: KeyedHasher;
  /** Nonce → the call's time, for SKEW_MS on either side of it. */
  readonly #seen = new Map<string, number>();

  /** Consumes `key`: it is zeroed once keyed. */
  constructor(key: Uint8Array) {
    this.#mac = new KeyedHasher(key);
    zeroize(key);
  }

  /** The header value for one call to the replica at `to`. */
  sign(method: string, path: string, to: string, body: Uint8Array, now = Date.now()): string {
    const nonce = toBase64Url(randomBytes(16));
    const digest = toBase64Url(sha256(body));
    return `v1.${now}.${nonce}.${digest}.${toBase64Url(this.#macOf(method, path, receiver(to), now, nonce, digest))}`;
  }

  /**
   * Refuses (`unauthorized`) a header this vault's replicas did not sign just now for
   * this call to `self`, or one seen before; answers the body's digest it vouches for.
   */
  verifyHeader(header: string | undefined, method: string, path: string, self: string, now = Date.now()): Uint8Array {
    const parts = (header ?? '').split('.');
    if (
      parts.length !== 5 ||
      parts[0] !== 'v1' ||
      !/^\d{1,15}$/.test(parts[1]!) ||
      !/^[A-Za-z0-9_-]{22}$/.test(parts[2]!) ||
      !/^[A-Za-z0-9_-]{43}$/.test(parts[3]!)
    ) {
      throw bad('no valid signature');
    }
    const at = Number(parts[1]);
    const mac = fromBase64Url(parts[4]!);
    if (!mac || !constantTimeEqual(mac, this.#macOf(method, path, receiver(self), at, parts[2]!, parts[3]!))) throw bad('no valid signature');
    if (Math.abs(now - at) > SKEW_MS) throw bad(`its time is more than ${SKEW_MS / 1000} s from this replica's clock`);
    this.#forgetOld(now);
    if (this.#seen.has(parts[2]!)) throw bad('it was seen before');
    this.#seen.set(parts[2]!, at);
    return fromBase64Url(parts[3]!)!;
  }

  /** Refuses (`unauthorized`) a body that is not the one the verified header's digest names. */
  verifyBody(digest: Uint8Array, body: Uint8Array): void {
    if (!constantTimeEqual(digest, sha256(body))) throw bad('the body is not the one it signed');
  }

  /**
   * The answer's header for the call that carried `request` (its signature header): a
   * MAC over that call's nonce, the answering replica and the answer's digest, so an
   * address that is not a replica of this vault cannot answer for one.
   */
  signAnswer(request: string, self: string, body: Uint8Array): string {
    return toBase64Url(this.#answerMac(request, receiver(self), body));
  }

  /** Refuses (`unauthorized`) an answer to the call that carried `request` not signed by the replica at `from`. */
  verifyAnswer(request: string, from: string, header: string | null, body: Uint8Array): void {
    const mac = header === null ? undefined : fromBase64Url(header);
    if (!mac || !constantTimeEqual(mac, this.#answerMac(request, receiver(from), body))) throw bad('its answer is not signed by the replica it called');
  }

  /** A replica's MAC of its own id and address, stored beside them in `index_shards`: a peer calls only an address a replica of this vault vouched for as its own. */
  addressMac(replicaId: string, url: string): string {
    return toBase64Url(this.#addressMac(replicaId, url));
  }

  /** Whether `mac` is replica `replicaId`'s MAC of `url` (constant time). */
  vouches(replicaId: string, url: string, mac: string | null): boolean {
    const given = mac === null ? undefined : fromBase64Url(mac);
    return given !== undefined && constantTimeEqual(given, this.#addressMac(replicaId, url));
  }

  #addressMac(replicaId: string, url: string): Uint8Array {
    return this.#mac.hash(utf8.encode(`v1\naddress\n${replicaId}\n${url}`));
  }

  #answerMac(request: string, from: string, body: Uint8Array): Uint8Array {
    const nonce = request.split('.')[2] ?? '';
    return this.#mac.hash(utf8.encode(`v1\nanswer\n${nonce}\n${from}\n${toBase64Url(sha256(body))}`));
  }

  close(): void {
    this.#mac.destroy();
  }

  #macOf(method: string, path: string, to: string, at: number, nonce: string, digest: string): Uint8Array {
    return this.#mac.hash(utf8.encode(`v1\n${method.toUpperCase()}\n${path}\n${to}\n${at}\n${nonce}\n${digest}`));
  }

  #forgetOld(now: number): void {
    for (const [nonce, at] of this.#seen) {
      if (this.#seen.size <= NONCES && at >= now - 2 * SKEW_MS) break;
      this.#seen.delete(nonce);
    }
  }
}
