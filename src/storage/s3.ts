/**
 * The MinIO / S3 object store, through the `minio` client. Failures are mapped to
 * domain errors: a missing object is not_found; an unreachable endpoint, refused
 * credentials or a request past its deadline (deadline.ts: `timeoutMs` plus the
 * transfer's allowance, and an idle timeout) are unavailable (retryable), with a
 * message that names the variable (`S3_ENDPOINT`) and the endpoint, never a key. An
 * answer the client cannot read as S3's is explained by asking the endpoint what it
 * is: something that answers HTTP without speaking S3 (a web page, a proxy's error) is
 * a `MisconfiguredError` naming its status and content type.
 *
 * `S3_ENDPOINT` may name several servers of one cluster, comma-separated: calls go to
 * one; a call that cannot reach it goes on to the next at once (S3's calls are
 * idempotent; a `putIfAbsent` is not repeated: it would find its own first write), and
 * a call that timed out sends the next calls there.
 */
import { Client } from 'minio';
import { LetheError, isLetheError, MisconfiguredError } from '../errors.js';
import { DEFAULT_STORE_TIMEOUT_MS, StoreTimeout, timedTransport } from './deadline.js';
import { bytesOf, collect } from './s3-streams.js';
import { describeAnswer, networkReason, PROBE_TIMEOUT_MS, s3Endpoints, unreachable, whatAnswers } from './s3-endpoint.js';
import { assertObjectKey, type ObjectLock, type ObjectStore, type Retention, type StoredObject } from './store.js';

export interface S3Options {
  /** http(s)://host:port, or several servers of one cluster, comma-separated */
  readonly endpoint: string;
  readonly accessKey: string;
  readonly secretKey: string;
  /** Temporary credentials (STS) carry one. */
  readonly sessionToken?: string;
  readonly bucket: string;
  readonly region?: string;
  /** Each request's base deadline and idle timeout (LETHE_STORE_TIMEOUT_MS; default 10 s). */
  readonly timeoutMs?: number;
}

const CREDENTIAL_CODES = new Set(['InvalidAccessKeyId', 'SignatureDoesNotMatch', 'AccessDenied', 'InvalidToken']);

/** One server of the store: its client and its origin (for messages). */
interface Server {
  readonly client: Client;
  readonly origin: string;
}

export class S3ObjectStore implements ObjectStore {
  readonly kind = 's3' as const;
  readonly bucket: string;
  readonly #servers: readonly Server[];
  /** The server calls go to; moves on when one cannot be reached. */
  #current = 0;
  readonly #region: string;
  readonly #timeoutMs: number;
  #lockable: boolean | undefined;
  /** The last write-quorum probe, shared by the calls that come while it is fresh. */
  #writable: { at: number; answer: Promise<boolean | undefined> } | undefined;

  constructor(options: S3Options) {
    this.bucket = options.bucket;
    this.#region = options.region ?? 'us-east-1';
    this.#timeoutMs = options.timeoutMs ?? DEFAULT_STORE_TIMEOUT_MS;
    const urls = s3Endpoints(options.endpoint);
    if (urls.length === 0) throw new MisconfiguredError('S3_ENDPOINT', 'names no server');
    this.#servers = urls.map((url) => {
      const { transport, agent } = timedTransport(url.protocol === 'https:', this.#timeoutMs);
      const client = new Client({
        transport,
        transportAgent: agent,
        endPoint: url.hostname,
        port: url.port ? Number(url.port) : url.protocol === 'https:' ? 443 : 80,
        useSSL: url.protocol === 'https:',
        accessKey: options.accessKey,
        secretKey: options.secretKey,
        ...(options.sessionToken ? { sessionToken: options.sessionToken } : {}),
        region: this.#region,
        pathStyle: true,
      });
      return { client, origin: url.origin };
    });
  }

  /** The endpoint messages name: the server calls go to now. */
  get #endpoint(): string {
    return this.#servers[this.#current]!.origin;
  }

  async ensureBucket(options: { versioned?: boolean; objectLock?: ObjectLock; lockable?: boolean } = {}): Promise<void> {
    const lock = options.objectLock;
    await this.#call(async (c) => {
      if (!(await c.bucketExists(this.bucket))) {
        try {
          await c.makeBucket(this.bucket, this.#region, lock || options.lockable ? { ObjectLocking: true } : undefined);
        } catch (e) {
          // another replica created it first
          if ((e as { code?: string }).code !== 'BucketAlreadyOwnedByYou') throw e;
        }
      }
      let current: { objectLockEnabled?: string; mode?: string; validity?: number } | undefined;
      if (lock) {
        try {
          current = (await (c.getObjectLockConfig(this.bucket) as unknown as Promise<typeof current>)) ?? {};
        } catch (e) {
          // only "this bucket has no lock configuration" means no lock; anything else is an error to report as it is
          if ((e as { code?: string }).code !== 'ObjectLockConfigurationNotFoundError') throw e;
        }
        if (current?.objectLockEnabled !== 'Enabled') {
          throw new LetheError(
            'unavailable',
            `bucket ${this.bucket} exists without Object Lock, which can only be turned on when a bucket is created: use a new bucket name`,
            {
              retryable: false,
            },
          );
        }
      }
      if (options.versioned || lock) await c.setBucketVersioning(this.bucket, { Status: 'Enabled' });
      if (lock) {
        const mode = lock.mode === 'compliance' ? 'COMPLIANCE' : 'GOVERNANCE';
        // never weaken an existing default (compliance to governance, or a shorter retention)
        const weaker =
          (current?.mode === 'COMPLIANCE' && mode === 'GOVERNANCE') ||
          (current?.validity !== undefined && lock.days < current.validity && current.mode === mode);
        if (!weaker) await c.setObjectLockConfig(this.bucket, { mode, unit: 'Days', validity: lock.days } as never);
      }
    });
  }

  async put(key: string, body: Uint8Array, options: { retain?: Retention } = {}): Promise<void> {
    await this.#put(key, body, options, {});
  }

  async putIfAbsent(key: string, body: Uint8Array, options: { retain?: Retention } = {}): Promise<boolean> {
    try {
      await this.#put(key, body, options, { 'If-None-Match': '*' });
      return true;
    } catch (e) {
      if ((e as { cause?: { code?: string } }).cause?.code === 'PreconditionFailed') return false;
      throw e;
    }
  }

  async #put(key: string, body: Uint8Array, options: { retain?: Retention }, headers: Record<string, string>): Promise<void> {
    assertObjectKey(key);
    // a create-if-absent repeated after a reset would find its own first write and answer false, unretained: never repeated here
    const stored = await this.#call(
      (c) => c.putObject(this.bucket, key, Buffer.from(body.buffer, body.byteOffset, body.byteLength), body.byteLength, headers),
      key,
      headers['If-None-Match'] === undefined,
    );
    const retain = options.retain;
    if (retain && stored.versionId) {
      const retention = {
        versionId: stored.versionId,
        mode: retain.mode === 'compliance' ? 'COMPLIANCE' : 'GOVERNANCE',
        retainUntilDate: retain.until.toISOString(),
      } as const;
      try {
        await this.#attempt((c) => c.putObjectRetention(this.bucket, key, retention));
      } catch (e) {
        if (String((e as { code?: unknown }).code ?? '') !== 'InvalidRequest') throw await this.#mapped(e, key);
        // the bucket's default retained the version in governance mode: raising it to compliance takes the bypass
        // header; a credential refused it keeps the default (governance, at least as long as the bucket's days)
        await this.#attempt((c) => c.putObjectRetention(this.bucket, key, { ...retention, governanceBypass: true })).catch(async (again: unknown) => {
          const code = String((again as { code?: unknown }).code ?? '');
          if (code !== 'AccessDenied' && code !== 'InvalidRequest') throw await this.#mapped(again, key);
        });
      }
    }
  }

  async versions(key: string): Promise<Uint8Array[]> {
    assertObjectKey(key);
    const found = await this.#call((c) =>
      collect(c.listObjects(this.bucket, key, false, { IncludeVersion: true }), (item) => {
        const v = item as { name?: string; versionId?: string | null; isDeleteMarker?: boolean; lastModified?: Date };
        return v.name === key && !v.isDeleteMarker && v.versionId
          ? { versionId: v.versionId, at: v.lastModified ? new Date(v.lastModified).getTime() : 0 }
          : undefined;
      }),
    );
    found.sort((a, b) => b.at - a.at);
    const out: Uint8Array[] = [];
    for (const v of found) {
      out.push(await this.#call(async (c) => bytesOf(await c.getObject(this.bucket, key, { versionId: v.versionId })), key));
    }
    // an unversioned bucket lists its one object without a version id
    if (out.length === 0) {
      const current = await this.get(key).catch((e: unknown) => {
        if (isLetheError(e, 'not_found')) return undefined;
        throw e;
      });
      if (current) out.push(current);
    }
    return out;
  }

  async lockable(): Promise<boolean> {
    if (this.#lockable === undefined) {
      this.#lockable = await this.#call(async (c) => {
        try {
          const config = (await (c.getObjectLockConfig(this.bucket) as unknown as Promise<{ objectLockEnabled?: string } | undefined>)) ?? {};
          return config.objectLockEnabled === 'Enabled';
        } catch (e) {
          if ((e as { code?: string }).code === 'ObjectLockConfigurationNotFoundError') return false;
          throw e;
        }
      });
    }
    return this.#lockable;
  }

  async get(key: string): Promise<Uint8Array> {
    assertObjectKey(key);
    return this.#call(async (c) => bytesOf(await c.getObject(this.bucket, key)), key);
  }

  async getRange(key: string, offset: number, length: number): Promise<Uint8Array> {
    assertObjectKey(key);
    if (length === 0) return new Uint8Array(0);
    return this.#call(async (c) => bytesOf(await c.getPartialObject(this.bucket, key, offset, length)), key);
  }

  async head(key: string): Promise<StoredObject | undefined> {
    assertObjectKey(key);
    try {
      const s = await this.#call((c) => c.statObject(this.bucket, key), key);
      return { key, size: s.size };
    } catch (e) {
      if (isLetheError(e, 'not_found')) return undefined;
      throw e;
    }
  }

  async delete(key: string): Promise<void> {
    assertObjectKey(key);
    await this.#call((c) => c.removeObject(this.bucket, key));
  }

  async *list(prefix: string): AsyncIterable<StoredObject> {
    const items: StoredObject[] = await this.#call((c) =>
      collect(c.listObjectsV2(this.bucket, prefix, true), (item) => {
        const o = item as { name?: string; size?: number; lastModified?: Date };
        return o.name ? { key: o.name, size: o.size ?? 0, ...(o.lastModified ? { modifiedAt: new Date(o.lastModified) } : {}) } : undefined;
      }),
    );
    items.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    yield* items;
  }

  async ping(): Promise<void> {
    await this.#call(async (c) => {
      if (!(await c.bucketExists(this.bucket))) {
        throw new LetheError('unavailable', `bucket ${this.bucket} does not exist at ${this.#endpoint}`);
      }
    });
  }

  /**
   * Asks MinIO's cluster health check (`/minio/health/cluster`: 200, or 503 once the
   * cluster has lost its write quorum; unauthenticated, it names no object) on every
   * server at once, 1.5 s at most: true when one says the cluster takes writes (calls
   * then go to such a server if theirs did not say so), false when every MinIO answer
   * says it does not, undefined when no answer was MinIO's. One probe at a time, its
   * answer kept 2 s: /readyz is public.
   */
  writable(): Promise<boolean | undefined> {
    const now = Date.now();
    if (this.#writable && now - this.#writable.at < WRITABLE_KEPT_MS) return this.#writable.answer;
    const answer = this.#probeWritable();
    this.#writable = { at: now, answer };
    return answer;
  }

  async #probeWritable(): Promise<boolean | undefined> {
    const answers = await Promise.all(this.#servers.map((s) => whatAnswers(s.origin, Math.min(this.#timeoutMs, WRITABLE_PROBE_MS), '/minio/health/cluster')));
    const writes = answers.map((a) => (a?.writeQuorum ? a.status === 200 : undefined));
    const at = writes.indexOf(true);
    if (at >= 0) {
      if (writes[this.#current] !== true) this.#current = at;
      return true;
    }
    return writes.includes(false) ? false : undefined;
  }

  /**
   * Whether this credential can remove a version retained under Object Lock in `mode`:
   * a canary (`lock-canary/…`) retained for a few seconds, then a delete of that
   * version with the governance bypass. True when the store let it go. Earlier
   * canaries, their retention over, are removed first (best effort).
   */
  async retentionBypassable(mode: 'governance' | 'compliance'): Promise<boolean> {
    const prefix = 'lock-canary/';
    for (const v of await this.#call((c) => versionsUnder(c, this.bucket, prefix))) {
      await this.#attempt((c) => c.removeObject(this.bucket, v.name, { versionId: v.versionId })).catch(() => {});
    }
    const key = `${prefix}${Date.now()}-${Math.random().toString(36).slice(2, 10)}.json`;
    const body = Buffer.from('{"canary":"lethe probes whether its credential can remove a retained version"}');
    const stored = await this.#call((c) => c.putObject(this.bucket, key, body, body.byteLength), key);
    const versionId = stored.versionId;
    if (!versionId) throw new LetheError('unavailable', `bucket ${this.bucket} does not keep versions: Object Lock cannot be probed`);
    const retention = { versionId, mode: mode === 'compliance' ? 'COMPLIANCE' : 'GOVERNANCE', retainUntilDate: new Date(Date.now() + 5_000).toISOString() };
    try {
      await this.#attempt((c) => c.putObjectRetention(this.bucket, key, retention as never));
    } catch (e) {
      // a bucket with a default retention already retains the canary (longer): it probes that
      if (String((e as { code?: unknown }).code ?? '') !== 'InvalidRequest') throw await this.#mapped(e, key);
    }
    try {
      await this.#attempt((c) => c.removeObject(this.bucket, key, { versionId, governanceBypass: true }));
      return true;
    } catch (e) {
      const code = String((e as { code?: unknown }).code ?? '');
      if (code === 'AccessDenied' || code === 'ObjectLocked' || code === 'InvalidRequest') return false;
      throw await this.#mapped(e, key);
    }
  }

  /**
   * Runs `fn` on the current server; when the server cannot be reached (refused, reset,
   * no route) it runs it on the next, each server once, in this call's own order; a
   * timeout moves the next calls on but is not repeated (its caller's deadline), nor is
   * a call that is not `repeatable`. Throws the client's own error, remembering where.
   */
  async #attempt<T>(fn: (client: Client) => Promise<T>, repeatable = true): Promise<T> {
    const n = this.#servers.length;
    const start = this.#current;
    for (let i = 0; ; i++) {
      const at = (start + i) % n;
      try {
        const result = await fn(this.#servers[at]!.client);
        // the next calls start where this one got through
        if (at !== start && this.#current === start) this.#current = at;
        return result;
      } catch (e) {
        if (e !== null && typeof e === 'object') failedAt.set(e, this.#servers[at]!.origin);
        const timedOut = e instanceof StoreTimeout;
        if (n === 1 || isLetheError(e) || !(timedOut || unreachable(e))) throw e;
        // concurrent calls that failed on the same server move on once, not once each
        if (this.#current === at) this.#current = (at + 1) % n;
        if (timedOut || !repeatable || i + 1 >= n) throw e;
      }
    }
  }

  /** `#attempt`, its failure said as a domain error. */
  async #call<T>(fn: (client: Client) => Promise<T>, key?: string, repeatable = true): Promise<T> {
    try {
      return await this.#attempt(fn, repeatable);
    } catch (e) {
      throw await this.#mapped(e, key);
    }
  }

  /** A failure of the client said as a domain error. */
  async #mapped(e: unknown, key?: string): Promise<Error> {
    if (isLetheError(e)) return e;
    const endpoint = (e !== null && typeof e === 'object' ? failedAt.get(e) : undefined) ?? this.#endpoint;
    const at = `S3_ENDPOINT ${endpoint}:`;
    if (e instanceof StoreTimeout) {
      return new LetheError('unavailable', `${at} the object store did not answer in time (${e.ms} ms; LETHE_STORE_TIMEOUT_MS)`);
    }
    const code = String((e as { code?: unknown }).code ?? '');
    if (code === 'NoSuchKey' || code === 'NotFound') {
      return new LetheError('not_found', `no object ${key ?? ''} in ${this.bucket}`.replace('  ', ' '));
    }
    if (code === 'NoSuchBucket') return new LetheError('unavailable', `${at} bucket ${this.bucket} does not exist there`);
    if (CREDENTIAL_CODES.has(code)) {
      return new LetheError('unavailable', `${at} the object store refused the credentials (${code}): check S3_ACCESS_KEY and S3_SECRET_KEY`);
    }
    if (unreachable(e)) {
      const all = this.#servers.length > 1 ? ', and so is every other server it names' : '';
      return new LetheError('unavailable', `${at} the object store is unreachable (${networkReason(code)})${all}`);
    }
    // an answer the client could not read as S3's (no error code, often no message): ask what answers there
    const answer = await whatAnswers(endpoint, Math.min(this.#timeoutMs, PROBE_TIMEOUT_MS));
    if (answer && !answer.s3) {
      return new MisconfiguredError('S3_ENDPOINT', `${endpoint} answered ${describeAnswer(answer)}, not an S3 API: is this the MinIO/S3 endpoint?`, {
        cause: e,
      });
    }
    const reason = code || (e as Error).message || `an error without a code${answer ? ` (HTTP ${answer.status})` : ''}`;
    return new LetheError('unavailable', `${at} the object store failed: ${reason}`, { cause: e });
  }
}

/** Where a client error came from: the server the call last tried. */
const failedAt = new WeakMap<object, string>();

/** How long one server's write-quorum answer may take, and how long the answer is kept. */
const WRITABLE_PROBE_MS = 1_500;
const WRITABLE_KEPT_MS = 2_000;

/** Every version under `prefix` (delete markers included). */
function versionsUnder(client: Client, bucket: string, prefix: string): Promise<Array<{ name: string; versionId: string }>> {
  return collect(client.listObjects(bucket, prefix, true, { IncludeVersion: true }), (item) => {
    const v = item as { name?: string; versionId?: string | null };
    return v.name && v.versionId ? { name: v.name, versionId: v.versionId } : undefined;
  });
}
