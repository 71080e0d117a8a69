/**
 * The AWS KMS client an epoch store talks through: its options, checked once at
 * opening; its HTTP agents, which mark their sockets' errors as the KMS's; the bound on
 * calls in flight.
 */
import { KMSClient, type KMSClientConfig } from '@aws-sdk/client-kms';
import http from 'node:http';
import https from 'node:https';
import type { Duplex } from 'node:stream';
import { LetheError, markSocketErrors } from '../errors.js';

export interface AwsKmsEpochStoreOptions {
  readonly region: string;
  /** A KMS-compatible endpoint (local-kms, a VPC endpoint); the region's public endpoint when absent. */
  readonly endpoint?: string;
  /** Static credentials; the SDK's default chain (environment, shared config, SSO, container or instance role) when absent. */
  readonly credentials?: { readonly accessKeyId: string; readonly secretAccessKey: string; readonly sessionToken?: string };
  /** Aliases are `alias/<aliasPrefix>/epoch-NNNNNNNN`: letters, digits, `_`, `-`, `/`-separated; not starting with `aws`. */
  readonly aliasPrefix: string;
  /** The ScheduleKeyDeletion waiting period, 7 to 30 days (default 7). */
  readonly deletionWindowDays?: number;
  /** KMS calls in flight at once, and sockets (default 16). */
  readonly concurrency?: number;
  /** Connect timeout per attempt (default 3000 ms). */
  readonly connectTimeoutMs?: number;
  /** Request timeout per attempt (default 10000 ms). */
  readonly requestTimeoutMs?: number;
  /** Attempts per call, the first included (default 3). */
  readonly maxAttempts?: number;
  /** A client to use instead of one built from the options above (closed with the store). */
  readonly client?: KMSClient;
}

const ALIAS_PREFIX_PATTERN = /^[A-Za-z0-9_-]+(?:\/[A-Za-z0-9_-]+)*$/;

/** Limits the KMS calls in flight; the rest wait their turn in order. */
export class Semaphore {
  #free: number;
  readonly #waiting: (() => void)[] = [];
  constructor(size: number) {
    this.#free = size;
  }
  async run<T>(fn: () => Promise<T>): Promise<T> {
    if (this.#free > 0) this.#free--;
    else await new Promise<void>((resolve) => this.#waiting.push(resolve));
    try {
      return await fn();
    } finally {
      const next = this.#waiting.shift();
      if (next) next();
      else this.#free++;
    }
  }
}

/**
 * The KMS client's HTTP agents: keep-alive, at most `maxSockets` each, and every error a
 * socket of theirs emits marked as the KMS's (an unhandled one is then told apart from
 * the database's: src/app/rejections.ts).
 */
export function kmsAgents(options: http.AgentOptions): { http: http.Agent; https: https.Agent } {
  const marking = <A extends http.Agent>(agent: A): A => {
    const create = (agent as unknown as { createConnection(o: unknown, cb?: unknown): Duplex | undefined }).createConnection.bind(agent);
    (agent as unknown as { createConnection(o: unknown, cb?: unknown): Duplex | undefined }).createConnection = (o, cb) => {
      const socket = create(o, cb);
      if (socket) markSocketErrors(socket, 'kms');
      return socket;
    };
    return agent;
  };
  return { http: marking(new http.Agent(options)), https: marking(new https.Agent(options)) };
}

/** What `AwsKmsEpochStore.open` needs from its options, checked: the client (built unless given) and the settings. */
export function kmsClient(opts: AwsKmsEpochStoreOptions): { client: KMSClient; prefix: string; windowDays: number; where: string; concurrency: number } {
  const prefix = opts.aliasPrefix;
  if (!ALIAS_PREFIX_PATTERN.test(prefix) || /^aws/i.test(prefix) || prefix.length > 200) {
    throw new LetheError(
      'validation_failed',
      'the AWS KMS alias prefix must be letters, digits, "_" and "-" in "/"-separated parts, at most 200 characters, not starting with "aws"',
    );
  }
  const windowDays = opts.deletionWindowDays ?? 7;
  if (!Number.isInteger(windowDays) || windowDays < 7 || windowDays > 30) {
    throw new LetheError('validation_failed', 'the AWS KMS deletion window must be a whole number of days from 7 to 30');
  }
  const concurrency = opts.concurrency ?? 16;
  if (!Number.isInteger(concurrency) || concurrency < 1 || concurrency > 1024) {
    throw new LetheError('validation_failed', 'the AWS KMS concurrency must be an integer from 1 to 1024');
  }
  if (!opts.region) throw new LetheError('validation_failed', 'the AWS KMS region is required');
  const where = opts.endpoint ? `AWS KMS at ${opts.endpoint}` : `AWS KMS in ${opts.region}`;
  let client = opts.client;
  if (!client) {
    const agent = kmsAgents({ keepAlive: true, maxSockets: concurrency });
    const config: KMSClientConfig = {
      region: opts.region,
      maxAttempts: opts.maxAttempts ?? 3,
      requestHandler: {
        connectionTimeout: opts.connectTimeoutMs ?? 3_000,
        requestTimeout: opts.requestTimeoutMs ?? 10_000,
        throwOnRequestTimeout: true,
        httpAgent: agent.http,
        httpsAgent: agent.https,
      },
    };
    if (opts.endpoint) config.endpoint = opts.endpoint;
    if (opts.credentials) config.credentials = { ...opts.credentials };
    client = new KMSClient(config);
  }
  return { client, prefix, windowDays, where, concurrency };
}
