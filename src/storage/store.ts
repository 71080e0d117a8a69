/**
 * The object-store port: where log segments, artifact versions and backups live.
 * Two adapters: MinIO / S3 (`s3.ts`) and the local filesystem (`fs.ts`, the embedded
 * default). One contract test suite runs against both (test/storage).
 *
 * Everything stored here is already ciphertext; the store never sees a key.
 * A `put` resolves only once the object is durably stored: nothing is acknowledged
 * that was not stored.
 */
import { LetheError } from '../errors.js';

export interface StoredObject {
  readonly key: string;
  readonly size: number;
  /** When the object was last written (listings only). */
  readonly modifiedAt?: Date;
}

/** Object Lock: every new object version is retained for `days`, in this mode. */
export interface ObjectLock {
  readonly mode: 'governance' | 'compliance';
  readonly days: number;
}

/** How long one object version is kept from deletion, and in which Object Lock mode. */
export interface Retention {
  readonly mode: 'governance' | 'compliance';
  readonly until: Date;
}

export interface ObjectStore {
  /** "fs" or "s3", for logs and /readyz. */
  readonly kind: 'fs' | 's3';
  readonly bucket: string;
  /**
   * Creates the bucket when it is missing (versioned when asked; with Object Lock and
   * a default retention when asked — S3 can only turn Object Lock on at creation, so
   * an existing bucket without it is refused); created with Object Lock enabled but no
   * default retention when `lockable` (objects can then be retained one by one);
   * checks access.
   */
  ensureBucket(options?: { versioned?: boolean; objectLock?: ObjectLock; lockable?: boolean }): Promise<void>;
  /**
   * Stores the object. With `retain`, the new version is retained under Object Lock
   * until then (only on a bucket created with Object Lock: see `lockable`).
   */
  put(key: string, body: Uint8Array, options?: { retain?: Retention }): Promise<void>;
  /**
   * Stores the object only when the key holds no current object (an atomic
   * create-if-absent: S3's `If-None-Match: *`, a hard link on a folder). Answers false,
   * storing nothing, when one is already there.
   */
  putIfAbsent(key: string, body: Uint8Array, options?: { retain?: Retention }): Promise<boolean>;
  /**
   * Every stored version of the object, newest first (delete markers skipped): a
   * version hidden by a delete or overwritten is still found in a versioned bucket. A
   * store without versions answers the current object, or nothing.
   */
  versions(key: string): Promise<Uint8Array[]>;
  /** Whether objects can be retained under Object Lock here (a bucket created with it). */
  lockable(): Promise<boolean>;
  /**
   * Whether this credential can remove a version retained in `mode` (the governance
   * bypass, or a store that does not enforce retention): probed with a short-lived
   * canary. Only stores that can retain objects have it.
   */
  retentionBypassable?(mode: 'governance' | 'compliance'): Promise<boolean>;
  /** The object's bytes; not_found when there is none. */
  get(key: string): Promise<Uint8Array>;
  /** `length` bytes of the object from `offset`; not_found when there is none. */
  getRange(key: string, offset: number, length: number): Promise<Uint8Array>;
  /** Size of the object, or undefined when there is none. */
  head(key: string): Promise<StoredObject | undefined>;
  /** Removes the object (its current version); absent objects are not an error. */
  delete(key: string): Promise<void>;
  /** Objects whose key starts with `prefix`, in key order. */
  list(prefix: string): AsyncIterable<StoredObject>;
  /** Answers when the store is reachable and the bucket accessible. */
  ping(): Promise<void>;
  /**
   * Whether the store takes writes now, where it can say: a MinIO cluster answers
   * whether it holds its write quorum. Undefined when the store cannot say (S3).
   */
  writable?(): Promise<boolean | undefined>;
}

const KEY_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._/-]{0,1023}$/;

/** Object keys are plain relative paths: no "..", no empty segment, no leading slash. */
export function assertObjectKey(key: string): void {
  if (!KEY_PATTERN.test(key) || key.split('/').some((seg) => seg === '' || seg === '.' || seg === '..')) {
    throw new LetheError('validation_failed', 'object key must be a relative path of A-Z a-z 0-9 . _ - / without empty, "." or ".." segments');
  }
}
