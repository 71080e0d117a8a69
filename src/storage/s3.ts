/**
 * The MinIO / S3 object store, through the `minio` client. Failures are mapped to
 * domain errors: a missing object is not_found; an unreachable endpoint, refused
 * credentials or a request past its deadline (deadline.ts: `timeoutMs` plus the
 * transfer's allowance, and an idle timeout) are unavailable (retryable), with a
 * message that names the variable (`S3_ENDPOINT`) and the endpoint, never a key. An
 * answer the client cannot read as S3's is explained by asking the endpoint what it
 * is: something that answers HTTP without speaking S3 (a web page, a proxy's error) is
 * a `MisconfiguredError` naming its status and content type.
 */
import http from 'node:http';
import https from 'node:https';
import { Client } from 'minio';
import { LetheError, isLetheError, MisconfiguredError } from '../errors.js';
import { DEFAULT_STORE_TIMEOUT_MS, StoreTimeout, timedTransport } from './deadline.js';
import { assertObjectKey, type ObjectLock, type ObjectStore, type Retention, type StoredObject } from './store.js';

export interface S3Options {
  /** http(s)://host:port */
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
const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENOTFOUND', 'EPIPE']);

export class S3ObjectStore implements ObjectStore {
  readonly kind = 's3' as const;
  readonly bucket: string;
  readonly #client: Client;
  readonly #endpoint: string;
  readonly #region: string;
  readonly #timeoutMs: number;
  #lockable: boolean | undefined;

  constructor(options: S3Options) {
    const url = new URL(options.endpoint);
    this.bucket = options.bucket;
    this.#endpoint = url.origin;
    this.#region = options.region ?? 'us-east-1';
    this.#timeoutMs = options.timeoutMs ?? DEFAULT_STORE_TIMEOUT_MS;
    const { transport, agent } = timedTransport(url.protocol === 'https:', this.#timeoutMs);
    this.#client = new Client({
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
  }

  async ensureBucket(options: { versioned?: boolean; objectLock?: ObjectLock; lockable?: boolean } = {}): Promise<void> {
    const lock = options.objectLock;
    await this.#call(async () => {
      if (!(await this.#client.bucketExists(this.bucket))) {
        try {
          await this.#client.makeBucket(this.bucket, this.#region, lock || options.lockable ? { ObjectLocking: true } : undefined);
        } catch (e) {
          // another replica created it first
          if ((e as { code?: string }).code !== 'BucketAlreadyOwnedByYou') throw e;
        }
      }
      let current: { objectLockEnabled?: string; mode?: string; validity?: number } | undefined;
      if (lock) {
        try {
          current = (await (this.#client.getObjectLockConfig(this.bucket) as unknown as Promise<typeof current>)) ?? {};
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
      if (options.versioned || lock) await this.#client.setBucketVersioning(this.bucket, { Status: 'Enabled' });
      if (lock) {
        const mode = lock.mode === 'compliance' ? 'COMPLIANCE' : 'GOVERNANCE';
        // never weaken an existing default (compliance to governance, or a shorter retention)
        const weaker =
          (current?.mode === 'COMPLIANCE' && mode === 'GOVERNANCE') ||
          (current?.validity !== undefined && lock.days < current.validity && current.mode === mode);
        if (!weaker) await this.#client.setObjectLockConfig(this.bucket, { mode, unit: 'Days', validity: lock.days } as never);
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
    const stored = await this.#call(() =>
      this.#client.putObject(this.bucket, key, Buffer.from(body.buffer, body.byteOffset, body.byteLength), body.byteLength, headers),
    );
    const retain = options.retain;
    if (retain && stored.versionId) {
      const retention = {
        versionId: stored.versionId,
        mode: retain.mode === 'compliance' ? 'COMPLIANCE' : 'GOVERNANCE',
        retainUntilDate: retain.until.toISOString(),
      } as const;
      try {
        await this.#client.putObjectRetention(this.bucket, key, retention);
      } catch (e) {
        if (String((e as { code?: unknown }).code ?? '') !== 'InvalidRequest') await this.#call(() => Promise.reject(e), key);
        // the bucket's default retained the version in governance mode: raising it to compliance takes the bypass
        // header; a credential refused it keeps the default (governance, at least as long as the bucket's days)
        await this.#client.putObjectRetention(this.bucket, key, { ...retention, governanceBypass: true }).catch((again: unknown) => {
          const code = String((again as { code?: unknown }).code ?? '');
          if (code !== 'AccessDenied' && code !== 'InvalidRequest') return this.#call(() => Promise.reject(again), key);
        });
      }
    }
  }

  async versions(key: string): Promise<Uint8Array[]> {
    assertObjectKey(key);
    const found = await this.#call(
      () =>
        new Promise<{ versionId: string; at: number }[]>((resolve, reject) => {
          const out: { versionId: string; at: number }[] = [];
          const stream = this.#client.listObjects(this.bucket, key, false, { IncludeVersion: true });
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
        await this.#call(async () => {
          const stream = await this.#client.getObject(this.bucket, key, { versionId: v.versionId });
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
      this.#lockable = await this.#call(async () => {
        try {
          const config = (await (this.#client.getObjectLockConfig(this.bucket) as unknown as Promise<{ objectLockEnabled?: string } | undefined>)) ?? {};
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
    return this.#call(async () => {
      const stream = await this.#client.getObject(this.bucket, key);
      const chunks: Buffer[] = [];
      for await (const chunk of stream) chunks.push(chunk as Buffer);
      return new Uint8Array(Buffer.concat(chunks));
    }, key);
  }

  async getRange(key: string, offset: number, length: number): Promise<Uint8Array> {
    assertObjectKey(key);
    if (length === 0) return new Uint8Array(0);
    return this.#call(async () => {
      const stream = await this.#client.getPartialObject(this.bucket, key, offset, length);
      const chunks: Buffer[] = [];
      for await (const chunk of stream) chunks.push(chunk as Buffer);
      return new Uint8Array(Buffer.concat(chunks));
    }, key);
  }

  async head(key: string): Promise<StoredObject | undefined> {
    assertObjectKey(key);
    try {
      const s = await this.#call(() => this.#client.statObject(this.bucket, key), key);
      return { key, size: s.size };
    } catch (e) {
      if (isLetheError(e, 'not_found')) return undefined;
      throw e;
    }
  }

  async delete(key: string): Promise<void> {
    assertObjectKey(key);
    await this.#call(() => this.#client.removeObject(this.bucket, key));
  }

  async *list(prefix: string): AsyncIterable<StoredObject> {
    const items: StoredObject[] = await this.#call(
      () =>
        new Promise<StoredObject[]>((resolve, reject) => {
          const out: StoredObject[] = [];
          const stream = this.#client.listObjectsV2(this.bucket, prefix, true);
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
    await this.#call(async () => {
      if (!(await this.#client.bucketExists(this.bucket))) {
        throw new LetheError('unavailable', `bucket ${this.bucket} does not exist at ${this.#endpoint}`);
      }
    });
  }

  /**
   * Whether this credential can remove a version retained under Object Lock in `mode`:
   * a canary (`lock-canary/…`) retained for a few seconds, then a delete of that
   * version with the governance bypass. True when the store let it go. Earlier
   * canaries, their retention over, are removed first (best effort).
   */
  async retentionBypassable(mode: 'governance' | 'compliance'): Promise<boolean> {
    const prefix = 'lock-canary/';
    for (const v of await this.#call(() => this.#versionsUnder(prefix))) {
      await this.#client.removeObject(this.bucket, v.name, { versionId: v.versionId }).catch(() => {});
    }
    const key = `${prefix}${Date.now()}-${Math.random().toString(36).slice(2, 10)}.json`;
    const body = Buffer.from('{"canary":"lethe probes whether its credential can remove a retained version"}');
    const stored = await this.#call(() => this.#client.putObject(this.bucket, key, body, body.byteLength), key);
    const versionId = stored.versionId;
    if (!versionId) throw new LetheError('unavailable', `bucket ${this.bucket} does not keep versions: Object Lock cannot be probed`);
    try {
      await this.#client.putObjectRetention(this.bucket, key, {
        versionId,
        mode: mode === 'compliance' ? 'COMPLIANCE' : 'GOVERNANCE',
        retainUntilDate: new Date(Date.now() + 5_000).toISOString(),
      } as never);
    } catch (e) {
      // a bucket with a default retention already retains the canary (longer): it probes that
      if (String((e as { code?: unknown }).code ?? '') !== 'InvalidRequest') await this.#call(() => Promise.reject(e), key);
    }
    try {
      await this.#client.removeObject(this.bucket, key, { versionId, governanceBypass: true });
      return true;
    } catch (e) {
      const code = String((e as { code?: unknown }).code ?? '');
      if (code === 'AccessDenied' || code === 'ObjectLocked' || code === 'InvalidRequest') return false;
      return this.#call(() => Promise.reject(e), key);
    }
  }

  #versionsUnder(prefix: string): Promise<Array<{ name: string; versionId: string }>> {
    return new Promise((resolve, reject) => {
      const out: Array<{ name: string; versionId: string }> = [];
      const stream = this.#client.listObjects(this.bucket, prefix, true, { IncludeVersion: true });
      stream.on('data', (item) => {
        const v = item as { name?: string; versionId?: string | null };
        if (v.name && v.versionId) out.push({ name: v.name, versionId: v.versionId });
      });
      stream.on('error', reject);
      stream.on('end', () => resolve(out));
    });
  }

  async #call<T>(fn: () => Promise<T>, key?: string): Promise<T> {
    try {
      return await fn();
    } catch (e) {
      if (isLetheError(e)) throw e;
      const at = `S3_ENDPOINT ${this.#endpoint}:`;
      if (e instanceof StoreTimeout) {
        throw new LetheError('unavailable', `${at} the object store did not answer in time (${e.ms} ms; LETHE_STORE_TIMEOUT_MS)`);
      }
      const code = String((e as { code?: unknown }).code ?? '');
      if (code === 'NoSuchKey' || code === 'NotFound') {
        throw new LetheError('not_found', `no object ${key ?? ''} in ${this.bucket}`.replace('  ', ' '));
      }
      if (code === 'NoSuchBucket') throw new LetheError('unavailable', `${at} bucket ${this.bucket} does not exist there`);
      if (CREDENTIAL_CODES.has(code)) {
        throw new LetheError('unavailable', `${at} the object store refused the credentials (${code}): check S3_ACCESS_KEY and S3_SECRET_KEY`);
      }
      if (NETWORK_CODES.has(code) || (e as Error).name === 'AggregateError') {
        throw new LetheError('unavailable', `${at} the object store is unreachable (${networkReason(code)})`);
      }
      // an answer the client could not read as S3's (no error code, often no message): ask what answers there
      const answer = await whatAnswers(this.#endpoint, Math.min(this.#timeoutMs, PROBE_TIMEOUT_MS));
      if (answer && !answer.s3) {
        throw new MisconfiguredError('S3_ENDPOINT', `${this.#endpoint} answered ${describeAnswer(answer)}, not an S3 API: is this the MinIO/S3 endpoint?`, {
          cause: e,
        });
      }
      const reason = code || (e as Error).message || `an error without a code${answer ? ` (HTTP ${answer.status})` : ''}`;
      throw new LetheError('unavailable', `${at} the object store failed: ${reason}`, { cause: e });
    }
  }
}

/** What a network error code means, said plainly. */
function networkReason(code: string): string {
  if (code === 'ECONNREFUSED') return 'ECONNREFUSED: connection refused, nothing listens there';
  if (code === 'ENOTFOUND') return 'ENOTFOUND: no such host';
  if (code === 'EHOSTUNREACH') return 'EHOSTUNREACH: no route to the host';
  return code || 'network error';
}

/** How long asking the endpoint what it is may take. */
const PROBE_TIMEOUT_MS = 5_000;

interface Answer {
  readonly status: number;
  /** Its media type, without parameters; empty when it sent none. */
  readonly contentType: string;
  /** Whether it looks like an S3 API: S3 and MinIO name every answer (`x-amz-request-id`) and speak XML. */
  readonly s3: boolean;
}

function describeAnswer(a: Answer): string {
  return `HTTP ${a.status}${a.contentType ? ` (${a.contentType})` : ''}`;
}

/**
 * What answers a plain GET of the endpoint's root (no credentials, nothing signed): its
 * status, its content type and whether it speaks S3; undefined when nothing answers in
 * `timeoutMs`.
 */
function whatAnswers(endpoint: string, timeoutMs: number): Promise<Answer | undefined> {
  return new Promise((resolve) => {
    const url = new URL('/', endpoint);
    // an absolute deadline: `timeout` alone is idle time, and headers sent a byte at a time would hold it open
    const deadline = setTimeout(() => {
      request.destroy();
      resolve(undefined);
    }, timeoutMs);
    const request = (url.protocol === 'https:' ? https : http).get(url, { agent: false, timeout: timeoutMs }, (res) => {
      clearTimeout(deadline);
      // the headers say enough: the body is never read
      res.destroy();
      const contentType = String(res.headers['content-type'] ?? '')
        .split(';')[0]!
        .trim()
        .toLowerCase();
      const s3 = res.headers['x-amz-request-id'] !== undefined || /\bxml\b/.test(contentType);
      resolve({ status: res.statusCode ?? 0, contentType, s3 });
    });
    request.on('timeout', () => request.destroy());
    request.on('error', () => {
      clearTimeout(deadline);
      resolve(undefined);
    });
  });
}
