/**
 * The one id grammar: how lethe names what it creates and how a name is checked.
 * Routes, services, the writer client and the CLI all take their patterns from here.
 *
 * - A lethe id is a type prefix, `_`, and 128 random bits in base64url (22
 *   characters): unguessable but not secret (a signing key's `csk_` id: 128 bits of its
 *   public key's hash). Bits come from the CSPRNG in pooled
 *   draws (one syscall per 256 ids), each byte used once.
 * - A subject id is the caller's own name for a person: 1 to 200 characters of
 *   A-Z a-z 0-9 . _ : @ + - (never stored: the database holds its keyed hash).
 * - Ids are base64url, so a list of them is safe inside a PostgreSQL array literal.
 */
import { randomBytes, toBase64Url } from './crypto/index.js';
import { LetheError } from './errors.js';

/**
 * Every kind of lethe id. `csk` (a certificate-signing key) is the one not drawn by
 * `newId`: it is derived from the public key (src/crypto/certificate.ts `certificateKeyId`),
 * with the same grammar.
 */
export const ID_PREFIXES = ['key', 'lease', 'entry', 'seg', 'art', 'exp', 'bak', 'ers', 'dsm', 'csk'] as const;
export type IdPrefix = (typeof ID_PREFIXES)[number];

const ID_BYTES = 16;
const POOL_IDS = 256;
let pool: Uint8Array = new Uint8Array(0);
let offset = 0;

export function newId(prefix: IdPrefix): string {
  if (offset + ID_BYTES > pool.length) {
    pool = randomBytes(ID_BYTES * POOL_IDS);
    offset = 0;
  }
  const bits = pool.subarray(offset, offset + ID_BYTES);
  offset += ID_BYTES;
  return `${prefix}_${toBase64Url(bits)}`;
}

/** `^<prefix>_` and 22 base64url characters. */
export const ID_PATTERNS: { readonly [P in IdPrefix]: RegExp } = Object.fromEntries(ID_PREFIXES.map((p) => [p, new RegExp(`^${p}_[A-Za-z0-9_-]{22}$`)])) as {
  readonly [P in IdPrefix]: RegExp;
};

export function isId(prefix: IdPrefix, value: unknown): value is string {
  return typeof value === 'string' && ID_PATTERNS[prefix].test(value);
}

/** What a well-formed id of this kind looks like, for error messages. */
export function idRule(prefix: IdPrefix): string {
  return `${prefix}_ followed by 22 characters of A-Z a-z 0-9 _ -`;
}

/** Where a log segment lives in the object store: `log/seg_<id>`. */
export const SEGMENT_KEY_PATTERN = /^log\/seg_[A-Za-z0-9_-]{22}$/;

export function newSegmentKey(): string {
  return `log/${newId('seg')}`;
}

/** What an `Idempotency-Key` header may hold (the service checks it; clients that derive keys too). */
export const IDEMPOTENCY_KEY_PATTERN = /^[A-Za-z0-9._:-]{1,128}$/;
export const IDEMPOTENCY_KEY_RULE = '1 to 128 characters of A-Z a-z 0-9 . _ : -';

export const SUBJECT_ID_PATTERN = /^[A-Za-z0-9._:@+-]{1,200}$/;
export const SUBJECT_ID_RULE = 'subject must be 1 to 200 characters of A-Z a-z 0-9 . _ : @ + -';

export function assertSubjectId(subject: string): void {
  if (typeof subject !== 'string' || !SUBJECT_ID_PATTERN.test(subject)) throw new LetheError('validation_failed', SUBJECT_ID_RULE);
}

/**
 * `{a,b,c}` for `= any(…::text[])`: planned by the primary key at any size, where
 * `in (select json_array_elements_text(…))` is costed at 100 rows. Anything that is
 * not base64url cannot be an id lethe made, and is left out.
 */
export function idArrayLiteral(ids: Iterable<string>): string {
  return `{${[...new Set(ids)].filter((id) => /^[A-Za-z0-9_-]+$/.test(id)).join(',')}}`;
}
