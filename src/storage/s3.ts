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
 * one; a call whose connection is refused or reset goes on to the next at once (S3's
 * calls are idempotent; a `putIfAbsent` repeated after a reset may answer false, as
 * after a timeout: see store.ts), and a call that timed out sends the next calls there.
 */
import { Client } from 'minio';
import { LetheError, isLetheError, MisconfiguredError } from '../errors.js';
import { DEFAULT_STORE_TIMEOUT_MS, StoreTimeout, timedTransport } from './deadline.js';
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
    const stored = await this.#call((c) => c.putObject(this.bucket, key, Buffer.from(body.buffer, body.byteOffset, body.byteLength), body.byteLength, headers));
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
    const found = await this.#call(
      (c) =>
        new Promise<{ versionId: string; at: number }[]>((resolve, reject) => {
          const out: { versionId: string; at: number }[] = [];
          const stream = c.listObjects(this.bucket, key, false, { IncludeVersion: true });
          stream.on('data', (item) => {
            const v = item as { name?: string; versionId?: string | null; isDeleteMarker?: boolean; lastModified?: Date };
            if (v.name === key && !v.isDeleteMarker && v.versionId)
              out.push({ versionId: v.versionId, at: v.lastModified ? new Date(v.lastModified).getTime() : 0 });
          });
          stream.on('error', reject);
          stream.on('end', () => resolve(out));
        }),
    );
    found.sort((a, b) => b.at - a.at);
    const out: Uint8Array[] = [];
    for (const v of found) {
      out.push(
        await this.#call(async (c) => {
          const stream = await c.getObject(this.bucket, key, { versionId: v.versionId });
          const chunks: Buffer[] = [];
          for await (const chunk of stream) chunks.push(chunk as Buffer);
          return new Uint8Array(Buffer.concat(chunks));
        }, key),
      );
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
    return this.#call(async (c) => {
      const stream = await c.getObject(this.bucket, key);
      const chunks: Buffer[] = [];
      for await (const chunk of stream) chunks.push(chunk as Buffer);
      return new Uint8Array(Buffer.concat(chunks));
    }, key);
  }

  async getRange(key: string, offset: number, length: number): Promise<Uint8Array> {
    assertObjectKey(key);
    if (length === 0) return new Uint8Array(0);
    return this.#call(async (c) => {
      const stream = await c.getPartialObject(this.bucket, key, offset, length);
      const chunks: Buffer[] = [];
      for await (const chunk of stream) chunks.push(chunk as Buffer);
      return new Uint8Array(Buffer.concat(chunks));
    }, key);
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
    const items: StoredObject[] = await this.#call(
      (c) =>
        new Promise<StoredObject[]>((resolve, reject) => {
          const out: StoredObject[] = [];
          const stream = c.listObjectsV2(this.bucket, prefix, true);
          stream.on('data', (item) => {
            if (item.name) out.push({ key: item.name, size: item.size ?? 0, ...(item.lastModified ? { modifiedAt: new Date(item.lastModified) } : {}) });
          });
          stream.on('error', reject);
          stream.on('end', () => resolve(out));
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
   * cluster has lost its write quorum; unauthenticated, it names no object), through the
   * first server that answers. Undefined when the answer is not MinIO's.
   */
  async writable(): Promise<boolean | undefined> {
    for (let tried = 0; tried < this.#servers.length; tried++) {
      const at = this.#current;
      const answer = await whatAnswers(this.#servers[at]!.origin, Math.min(this.#timeoutMs, PROBE_TIMEOUT_MS), '/minio/health/cluster');
      if (answer) return answer.writeQuorum ? answer.status === 200 : undefined;
      if (this.#current === at) this.#current = (at + 1) % this.#servers.length;
    }
    throw new LetheError('unavailable', `S3_ENDPOINT ${this.#endpoint}: the object store is unreachable`);
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
   * Runs `fn` on the current server; a refused or reset connection moves on to the next
   * server and runs it there, each server once; a timeout moves the next calls on but
   * is not repeated (its caller's deadline). Throws the client's own error.
   */
  async #attempt<T>(fn: (client: Client) => Promise<T>): Promise<T> {
    for (let tried = 1; ; tried++) {
      const at = this.#current;
      try {
        return await fn(this.#servers[at]!.client);
      } catch (e) {
        const timedOut = e instanceof StoreTimeout;
        if (this.#servers.length === 1 || isLetheError(e) || !(timedOut || unreachable(e))) throw e;
        // concurrent calls that failed on the same server move on once, not once each
        if (this.#current === at) this.#current = (at + 1) % this.#servers.length;
        if (timedOut || tried >= this.#servers.length) throw e;
      }
    }
  }

  /** `#attempt`, its failure said as a domain error. */
  async #call<T>(fn: (client: Client) => Promise<T>, key?: string): Promise<T> {
    try {
      return await this.#attempt(fn);
    } catch (e) {
      throw await this.#mapped(e, key);
    }
  }

  /** A failure of the client said as a domain error. */
  async #mapped(e: unknown, key?: string): Promise<Error> {
    if (isLetheError(e)) return e;
    const at = `S3_ENDPOINT ${this.#endpoint}:`;
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
    const answer = await whatAnswers(this.#endpoint, Math.min(this.#timeoutMs, PROBE_TIMEOUT_MS));
    if (answer && !answer.s3) {
      return new MisconfiguredError('S3_ENDPOINT', `${this.#endpoint} answered ${describeAnswer(answer)}, not an S3 API: is this the MinIO/S3 endpoint?`, {
        cause: e,
      });
    }
    const reason = code || (e as Error).message || `an error without a code${answer ? ` (HTTP ${answer.status})` : ''}`;
    return new LetheError('unavailable', `${at} the object store failed: ${reason}`, { cause: e });
  }
}

/** Every version under `prefix` (delete markers included). */
function versionsUnder(client: Client, bucket: string, prefix: string): Promise<Array<{ name: string; versionId: string }>> {
  return new Promise((resolve, reject) => {
    const out: Array<{ name: string; versionId: string }> = [];
    const stream = client.listObjects(bucket, prefix, true, { IncludeVersion: true });
    stream.on('data', (item) => {
      const v = item as { name?: string; versionId?: string | null };
      if (v.name && v.versionId) out.push({ name: v.name, versionId: v.versionId });
    });
    stream.on('error', reject);
    stream.on('end', () => resolve(out));
  });
}
