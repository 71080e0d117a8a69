/**
 * An epoch store in AWS KMS: one symmetric KMS key (SYMMETRIC_DEFAULT, ENCRYPT_DECRYPT)
 * per epoch, found by its alias `alias/<prefix>/epoch-NNNNNNNN`. The KEK never leaves
 * KMS: a DEK is wrapped by `Encrypt` and unwrapped by `Decrypt`, so every unwrap is a
 * call to KMS, logged in CloudTrail, and a key scheduled for deletion refuses it.
 *
 * The wrap binds what `wrapContext(keyId, purpose)` binds (src/crypto/wrap.ts) plus the
 * epoch, as the KMS encryption context { lethe: 'wrapped-key', keyId, purpose, epoch }:
 * KMS refuses to decrypt under any other context. `unwrap` also names the epoch's key
 * (KeyId), so a ciphertext made under another epoch's key is refused too. The stored
 * wrap is a 3-byte header ("LK", layout version 1) followed by the CiphertextBlob.
 *
 * Destroying an epoch is `ScheduleKeyDeletion` with a waiting period of 7 to 30 days:
 * from that call on the key refuses every operation (KMSInvalidStateException), but an
 * account administrator holding kms:CancelKeyDeletion can bring it back until the
 * deletion date. `destroyedAt` answers that date, which lies in the future while the
 * deletion is pending. Once AWS has deleted the key it also deletes its alias, and
 * the store can no longer say anything about the epoch: `destroyedAt` is then
 * undefined (keep the date from the first answer).
 *
 * KMS has no batch Encrypt/Decrypt: a rotation of n keys makes n calls. Calls share a
 * bounded number of sockets (`concurrency`) and each has a connect and a request
 * timeout and a few retries, so an unreachable KMS fails in bounded time. The
 * epoch -> key ARN mapping of enabled keys is cached; a key that turns out to be
 * unusable is dropped from the cache.
 *
 * Zeroing: the returned DEK is the SDK's own decoded buffer, handed over (the caller
 * zeroes it); a DEK of the wrong length is zeroed before the error. The request and
 * response bodies the SDK builds (JSON, base64 strings) cannot be zeroed from here.
 * Errors carry KMS error names and the endpoint or region, never credentials or the
 * service's messages.
 */
import {
  CreateAliasCommand,
  CreateKeyCommand,
  DecryptCommand,
  DescribeKeyCommand,
  EncryptCommand,
  KMSClient,
  type KMSClientConfig,
  type KeyMetadata,
  ListAliasesCommand,
  ListResourceTagsCommand,
  ScheduleKeyDeletionCommand,
  UpdateAliasCommand,
} from '@aws-sdk/client-kms';
import { KEY_LENGTH, KEY_PURPOSES, zeroize } from '../crypto/index.js';
import http from 'node:http';
import https from 'node:https';
import type { Duplex } from 'node:stream';
import { LetheError, errorCodes, isLetheError, markSocketErrors } from '../errors.js';
import type { EpochKeyStore } from './epoch-store.js';
import type { DestructionState, KeyPurpose } from './provider.js';

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

/**
 * The stored wrap: "LK", layout version 1, the length and ASCII id of the KMS key that
 * made it (also bound in the encryption context as `kek`), then the KMS CiphertextBlob.
 * The id tells a wrap made under another key of the same epoch number (the number
 * taken again after a destroy) from a damaged one.
 */
const HEADER = Uint8Array.of(0x4c, 0x4b, 0x01);
const KMS_KEY_ID = /^(?:mrk-)?[0-9a-f-]{32,36}$/;

/** The key id part of a KMS key ARN (arn:aws:kms:<region>:<account>:key/<id>). */
function keyIdOf(arn: string): string {
  return arn.slice(arn.lastIndexOf('/') + 1);
}
const ALIAS_PREFIX_PATTERN = /^[A-Za-z0-9_-]+(?:\/[A-Za-z0-9_-]+)*$/;
const EPOCH_ALIAS = /^epoch-(\d{8})$/;

const CREDENTIAL_ERRORS = new Set([
  'UnrecognizedClientException',
  'InvalidSignatureException',
  'IncompleteSignature',
  'InvalidClientTokenId',
  'MissingAuthenticationToken',
  'ExpiredTokenException',
  'AccessDeniedException',
  'NotAuthorizedException',
]);
const TRANSIENT_ERRORS = new Set(['KMSInternalException', 'DependencyTimeoutException', 'ThrottlingException', 'ServiceUnavailable', 'InternalFailure']);
const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN', 'EPIPE']);
/** The key cannot be used now: pending deletion, disabled, or gone. */
const UNUSABLE_KEY_ERRORS = new Set(['KMSInvalidStateException', 'DisabledException', 'NotFoundException', 'KeyUnavailableException']);
/** The ciphertext does not open under this key and context. */
const DECRYPT_ERRORS = new Set(['InvalidCiphertextException', 'IncorrectKeyException']);

function checkEpoch(epoch: number): void {
  if (!Number.isSafeInteger(epoch) || epoch < 1 || epoch > 99_999_999) {
    throw new LetheError('validation_failed', 'epoch must be an integer from 1 to 99999999');
  }
}

function errorName(e: unknown): string {
  return typeof e === 'object' && e !== null && typeof (e as { name?: unknown }).name === 'string' ? (e as { name: string }).name : 'Error';
}

/** A KMS refusal about the key, the ciphertext or the alias, as a LetheError that keeps the KMS error name for the callers that tell them apart. */
class KmsRefusal extends LetheError {
  readonly kmsName: string;
  constructor(code: 'epoch_unavailable' | 'decrypt_failed' | 'conflict', kmsName: string, message: string) {
    super(code, message);
    this.kmsName = kmsName;
  }
}

/** The KMS error name behind a failed call (`KmsRefusal`), else the error's own name. */
function kmsName(e: unknown): string {
  return e instanceof KmsRefusal ? e.kmsName : errorName(e);
}

/** Limits the KMS calls in flight; the rest wait their turn in order. */
class Semaphore {
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

export class AwsKmsEpochStore implements EpochKeyStore {
  readonly name = 'aws-kms';
  readonly #client: KMSClient;
  readonly #prefix: string;
  readonly #windowDays: number;
  readonly #where: string;
  readonly #limit: Semaphore;
  /** epoch -> ARN of its key, for keys last seen enabled. */
  readonly #arns = new Map<number, string>();
  /** In-flight alias lookups, so that concurrent first uses of an epoch make one DescribeKey. */
  readonly #resolving = new Map<number, Promise<string>>();
  #closed = false;

  private constructor(client: KMSClient, prefix: string, windowDays: number, where: string, concurrency: number) {
    this.#client = client;
    this.#prefix = prefix;
    this.#windowDays = windowDays;
    this.#where = where;
    this.#limit = new Semaphore(concurrency);
  }

  /** Opens the store and checks that KMS answers with these credentials (ListAliases), so a bad configuration fails at start-up. */
  static async open(opts: AwsKmsEpochStoreOptions): Promise<AwsKmsEpochStore> {
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
    const store = new AwsKmsEpochStore(client, prefix, windowDays, where, concurrency);
    try {
      await store.#send('ListAliases', (c) => c.send(new ListAliasesCommand({ Limit: 1 })));
    } catch (e) {
      client.destroy();
      throw e;
    }
    return store;
  }

  async createEpoch(epoch: number): Promise<void> {
    checkEpoch(epoch);
    const existing = await this.#describe(epoch);
    // A destroyed epoch's number may be taken again (a fresh database on this alias prefix, as on
    // a local keyring): a new key, the alias moved to it. The old key stays scheduled for deletion;
    // what was wrapped under it is refused as made under another key (key_commitment_mismatch).
    const retaken = existing !== undefined && (existing.KeyState === 'PendingDeletion' || existing.KeyState === 'PendingReplicaDeletion');
    if (existing && !retaken) {
      // kept as it is, whatever its state: DEKs may be wrapped under it
      if (existing.KeyState === 'Enabled' && existing.Arn) this.#arns.set(epoch, existing.Arn);
      return;
    }
    const alias = this.#alias(epoch);
    const created = await this.#send('CreateKey', (c) =>
      c.send(
        new CreateKeyCommand({
          KeySpec: 'SYMMETRIC_DEFAULT',
          KeyUsage: 'ENCRYPT_DECRYPT',
          Description: `lethe KEK, epoch ${epoch} (${alias})`,
          Tags: [
            { TagKey: 'lethe:role', TagValue: 'epoch-kek' },
            { TagKey: 'lethe:epoch', TagValue: String(epoch) },
            { TagKey: 'lethe:alias', TagValue: alias },
            // the number taken again: the destroyed key it replaces under the alias, whose fate destructionState reports
            ...(retaken && existing?.KeyId ? [{ TagKey: 'lethe:replaces', TagValue: existing.KeyId }] : []),
          ],
        }),
      ),
    );
    const arn = created.KeyMetadata?.Arn;
    if (!arn) throw new LetheError('internal', `${this.#where} created a key for epoch ${epoch} without answering its ARN`);
    if (retaken) {
      await this.#send('UpdateAlias', (c) => c.send(new UpdateAliasCommand({ AliasName: alias, TargetKeyId: arn })));
      // two processes retaking the number at once: the alias names the last one; the other's key is an orphan
      const now = await this.#describe(epoch);
      if (now?.Arn === arn) this.#arns.set(epoch, arn);
      else {
        await this.#send('ScheduleKeyDeletion', (c) => c.send(new ScheduleKeyDeletionCommand({ KeyId: arn, PendingWindowInDays: this.#windowDays }))).catch(() => {});
        if (now?.KeyState === 'Enabled' && now.Arn) this.#arns.set(epoch, now.Arn);
      }
      return;
    }
    try {
      await this.#send('CreateAlias', (c) => c.send(new CreateAliasCommand({ AliasName: alias, TargetKeyId: arn })));
      // a store whose CreateAlias is not atomic (local-kms under a race) lets two succeed: the alias names the winner
      const now = await this.#describe(epoch);
      if (now?.Arn && now.Arn !== arn) {
        await this.#send('ScheduleKeyDeletion', (c) => c.send(new ScheduleKeyDeletionCommand({ KeyId: arn, PendingWindowInDays: this.#windowDays }))).catch(() => {});
        if (now.KeyState === 'Enabled') this.#arns.set(epoch, now.Arn);
        return;
      }
      this.#arns.set(epoch, arn);
    } catch (e) {
      // Our key is an orphan either way: schedule its deletion (best effort; it is tagged lethe:epoch).
      await this.#send('ScheduleKeyDeletion', (c) => c.send(new ScheduleKeyDeletionCommand({ KeyId: arn, PendingWindowInDays: this.#windowDays }))).catch(() => {});
      // Another replica created the epoch between our lookup and our alias: theirs is the epoch.
      if (kmsName(e) !== 'AlreadyExistsException') throw e;
      const winner = await this.#describe(epoch);
      if (winner?.KeyState === 'Enabled' && winner.Arn) this.#arns.set(epoch, winner.Arn);
    }
  }

  async wrap(epoch: number, dek: Uint8Array, keyId: string, purpose: KeyPurpose): Promise<Uint8Array> {
    checkEpoch(epoch);
    if (dek.length !== KEY_LENGTH) throw new LetheError('validation_failed', `wrapped key must be ${KEY_LENGTH} bytes`);
    const arn = await this.#arn(epoch);
    const kek = new TextEncoder().encode(keyIdOf(arn));
    const context = { ...encryptionContext(epoch, keyId, purpose), kek: keyIdOf(arn) };
    let blob: Uint8Array | undefined;
    try {
      blob = (await this.#send('Encrypt', (c) => c.send(new EncryptCommand({ KeyId: arn, Plaintext: dek, EncryptionContext: context })))).CiphertextBlob;
    } catch (e) {
      throw await this.#keyError(epoch, e);
    }
    if (!blob || blob.length === 0) throw new LetheError('internal', `${this.#where} answered Encrypt without a ciphertext`);
    const out = new Uint8Array(HEADER.length + 1 + kek.length + blob.length);
    out.set(HEADER, 0);
    out[HEADER.length] = kek.length;
    out.set(kek, HEADER.length + 1);
    out.set(blob, HEADER.length + 1 + kek.length);
    return out;
  }

  async unwrap(epoch: number, wrapped: Uint8Array, keyId: string, purpose: KeyPurpose): Promise<Uint8Array> {
    checkEpoch(epoch);
    encryptionContext(epoch, keyId, purpose); // refuses a bad purpose or id before any call
    const idLength = wrapped[HEADER.length] ?? 0;
    const blobAt = HEADER.length + 1 + idLength;
    // 6144 bytes: the largest CiphertextBlob Decrypt accepts
    if (wrapped.length <= blobAt || wrapped.length > blobAt + 6144 || HEADER.some((b, i) => wrapped[i] !== b)) {
      throw new LetheError('envelope_malformed', 'not an AWS KMS wrap of layout version 1');
    }
    const madeUnder = Buffer.from(wrapped.subarray(HEADER.length + 1, blobAt)).toString('latin1');
    if (!KMS_KEY_ID.test(madeUnder)) throw new LetheError('envelope_malformed', 'the AWS KMS wrap does not name a KMS key id');
    const arn = await this.#arn(epoch);
    if (madeUnder !== keyIdOf(arn)) throw await this.#otherKey(epoch, madeUnder);
    const context = { ...encryptionContext(epoch, keyId, purpose), kek: madeUnder };
    let plaintext: Uint8Array | undefined;
    try {
      plaintext = (
        await this.#send('Decrypt', (c) => c.send(new DecryptCommand({ KeyId: arn, CiphertextBlob: wrapped.subarray(blobAt), EncryptionContext: context })))
      ).Plaintext;
    } catch (e) {
      if (DECRYPT_ERRORS.has(kmsName(e))) {
        throw new LetheError('decrypt_failed', `the wrapped key does not unwrap under KEK epoch ${epoch} for this key id and purpose (${kmsName(e)})`);
      }
      throw await this.#keyError(epoch, e);
    }
    if (!plaintext || plaintext.length !== KEY_LENGTH) {
      if (plaintext) zeroize(plaintext);
      throw new LetheError('envelope_malformed', 'wrapped key has the wrong length');
    }
    return plaintext;
  }

  async destroyEpoch(epoch: number): Promise<void> {
    checkEpoch(epoch);
    this.#arns.delete(epoch);
    const key = await this.#describe(epoch);
    // never created, already deleted by AWS, or already scheduled (by us or by another replica)
    if (!key?.Arn || key.KeyState === 'PendingDeletion' || key.KeyState === 'PendingReplicaDeletion') return;
    const arn = key.Arn;
    try {
      await this.#send('ScheduleKeyDeletion', (c) => c.send(new ScheduleKeyDeletionCommand({ KeyId: arn, PendingWindowInDays: this.#windowDays })));
    } catch (e) {
      // another replica scheduled it meanwhile
      if (kmsName(e) !== 'KMSInvalidStateException' && kmsName(e) !== 'NotFoundException') throw e;
      const again = await this.#describe(epoch);
      if (again && again.KeyState !== 'PendingDeletion' && again.KeyState !== 'PendingReplicaDeletion') {
        throw new LetheError('unavailable', `${this.#where} refused to schedule the deletion of KEK epoch ${epoch} (its key is ${again.KeyState})`, { retryable: false });
      }
    } finally {
      this.#arns.delete(epoch);
    }
  }

  async listEpochs(): Promise<number[]> {
    const start = `alias/${this.#prefix}/`;
    const found: { epoch: number; keyId: string }[] = [];
    let marker: string | undefined;
    do {
      const page = await this.#send('ListAliases', (c) => c.send(new ListAliasesCommand({ Limit: 100, ...(marker ? { Marker: marker } : {}) })));
      for (const a of page.Aliases ?? []) {
        if (!a.AliasName?.startsWith(start) || !a.TargetKeyId) continue;
        const m = EPOCH_ALIAS.exec(a.AliasName.slice(start.length));
        if (m) found.push({ epoch: Number(m[1]), keyId: a.TargetKeyId });
      }
      marker = page.Truncated ? page.NextMarker : undefined;
    } while (marker);
    // ListAliases does not say the key's state: describe each (the semaphore bounds them)
    const states = await Promise.all(
      found.map(async ({ epoch, keyId }) => {
        try {
          const meta = (await this.#send('DescribeKey', (c) => c.send(new DescribeKeyCommand({ KeyId: keyId })))).KeyMetadata;
          return meta?.KeyState === 'Enabled' ? epoch : undefined;
        } catch (e) {
          if (kmsName(e) === 'NotFoundException') return undefined;
          throw e;
        }
      }),
    );
    return states.filter((e): e is number => e !== undefined).sort((a, b) => a - b);
  }

  async destructionState(epoch: number): Promise<DestructionState> {
    checkEpoch(epoch);
    let key = await this.#describe(epoch);
    // AWS deletes the alias with the key: no alias, no key
    if (!key) return { state: 'gone' };
    // the number was taken again (a fresh database on this prefix): what was destroyed is the key the alias named before
    const replaced = key.KeyState === 'Enabled' && key.KeyId ? await this.#replaced(key.KeyId) : undefined;
    if (replaced !== undefined) {
      key = await this.#describeKey(replaced);
      if (!key) return { state: 'gone' };
      if (key.KeyState !== 'PendingDeletion' && key.KeyState !== 'PendingReplicaDeletion') {
        // its deletion was cancelled: it no longer has an alias for destroyEpoch to reach, so it is scheduled again here
        await this.#send('ScheduleKeyDeletion', (c) => c.send(new ScheduleKeyDeletionCommand({ KeyId: replaced, PendingWindowInDays: this.#windowDays })));
        key = await this.#describeKey(replaced);
        if (!key) return { state: 'gone' };
      }
    }
    if (key.KeyState === 'PendingDeletion' || key.KeyState === 'PendingReplicaDeletion') {
      return key.DeletionDate ? { state: 'pending', goneAt: new Date(key.DeletionDate.getTime()) } : { state: 'present' };
    }
    // Enabled, or Disabled after a cancelled deletion (it can be enabled again), or any other state that is not deleted
    return { state: 'present' };
  }

  async destroyedAt(epoch: number): Promise<Date | undefined> {
    checkEpoch(epoch);
    const key = await this.#describe(epoch);
    return key?.DeletionDate ? new Date(key.DeletionDate.getTime()) : undefined;
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#arns.clear();
    this.#client.destroy();
  }

  #alias(epoch: number): string {
    return `alias/${this.#prefix}/epoch-${String(epoch).padStart(8, '0')}`;
  }

  /** The key id a re-taken epoch's key replaced (its `lethe:replaces` tag), if any. */
  async #replaced(keyId: string): Promise<string | undefined> {
    const tags = (await this.#send('ListResourceTags', (c) => c.send(new ListResourceTagsCommand({ KeyId: keyId })))).Tags ?? [];
    return tags.find((t) => t.TagKey === 'lethe:replaces')?.TagValue;
  }

  /** A key as KMS describes it now, by id; undefined when it no longer exists. */
  async #describeKey(keyId: string): Promise<KeyMetadata | undefined> {
    try {
      return (await this.#send('DescribeKey', (c) => c.send(new DescribeKeyCommand({ KeyId: keyId })))).KeyMetadata;
    } catch (e) {
      if (kmsName(e) === 'NotFoundException') return undefined;
      throw e;
    }
  }

  /** The epoch's key as KMS describes it now (by alias); undefined when the alias does not exist. */
  async #describe(epoch: number): Promise<KeyMetadata | undefined> {
    try {
      return (await this.#send('DescribeKey', (c) => c.send(new DescribeKeyCommand({ KeyId: this.#alias(epoch) })))).KeyMetadata;
    } catch (e) {
      if (kmsName(e) === 'NotFoundException') return undefined;
      throw e;
    }
  }

  /** The ARN of the epoch's enabled key (cached), or epoch_unavailable. */
  async #arn(epoch: number): Promise<string> {
    const cached = this.#arns.get(epoch);
    if (cached) return cached;
    let pending = this.#resolving.get(epoch);
    if (!pending) {
      pending = (async () => {
        const key = await this.#describe(epoch);
        if (!key?.Arn) throw this.#unavailable(epoch, undefined);
        if (key.KeyState !== 'Enabled') throw this.#unavailable(epoch, key);
        this.#arns.set(epoch, key.Arn);
        return key.Arn;
      })().finally(() => this.#resolving.delete(epoch));
      this.#resolving.set(epoch, pending);
    }
    return pending;
  }

  /**
   * A wrap naming another key than the epoch's: key_commitment_mismatch when that key
   * was this epoch's before the number was taken again (tagged with its alias), else
   * decrypt_failed (a damaged or foreign wrap).
   */
  async #otherKey(epoch: number, madeUnder: string): Promise<LetheError> {
    let tags: { TagKey?: string; TagValue?: string }[] = [];
    try {
      tags = (await this.#send('ListResourceTags', (c) => c.send(new ListResourceTagsCommand({ KeyId: madeUnder })))).Tags ?? [];
    } catch (e) {
      if (kmsName(e) !== 'NotFoundException' && kmsName(e) !== 'InvalidArnException') throw e;
    }
    if (tags.some((t) => t.TagKey === 'lethe:alias' && t.TagValue === this.#alias(epoch))) {
      return new LetheError('key_commitment_mismatch', `the wrapped key was made under an earlier AWS KMS key of KEK epoch ${epoch}, not the one its alias names now`);
    }
    return new LetheError('decrypt_failed', `the wrapped key was not made under KEK epoch ${epoch}'s AWS KMS key`);
  }

  /** A failed Encrypt or Decrypt: epoch_unavailable (with the key's state) when KMS says the key is unusable, else the error as it is. */
  async #keyError(epoch: number, e: unknown): Promise<unknown> {
    if (!UNUSABLE_KEY_ERRORS.has(kmsName(e))) return e;
    this.#arns.delete(epoch);
    const key = await this.#describe(epoch).catch(() => undefined);
    return this.#unavailable(epoch, key);
  }

  #unavailable(epoch: number, key: KeyMetadata | undefined): LetheError {
    return new LetheError('epoch_unavailable', `KEK epoch ${epoch} cannot be used in ${this.#where}: ${key ? this.#stateText(key) : 'its key does not exist (never created, or deleted)'}`);
  }

  #stateText(key: KeyMetadata): string {
    if (key.KeyState === 'PendingDeletion' || key.KeyState === 'PendingReplicaDeletion') {
      return `its key is scheduled for deletion on ${key.DeletionDate ? key.DeletionDate.toISOString() : 'an unknown date'}`;
    }
    if (key.KeyState === 'Disabled') return 'its key is disabled';
    return `its key is ${key.KeyState ?? 'in an unknown state'}`;
  }

  /** One KMS call, within the concurrency bound; any failure becomes a LetheError (#classify). */
  async #send<T>(operation: string, call: (client: KMSClient) => Promise<T>): Promise<T> {
    if (this.#closed) throw new LetheError('unavailable', 'the AWS KMS epoch store is closed', { retryable: false });
    try {
      return await this.#limit.run(() => call(this.#client));
    } catch (e) {
      throw this.#classify(operation, e);
    }
  }

  /**
   * Every failure becomes a LetheError here; refusals about the key, the ciphertext or
   * the alias (whose meaning depends on the call) keep their KMS name (`KmsRefusal`) for
   * the caller to judge and phrase.
   */
  #classify(operation: string, e: unknown): LetheError {
    if (isLetheError(e)) return e;
    const name = errorName(e);
    if (CREDENTIAL_ERRORS.has(name)) {
      return new LetheError('unavailable', `${this.#where} refused lethe's credentials for ${operation} (${name}): check the AWS credentials and the IAM and key policies`, {
        retryable: false,
      });
    }
    if (name === 'CredentialsProviderError') {
      return new LetheError(
        'unavailable',
        `no AWS credentials for ${this.#where}: the SDK's default chain (environment, shared config, SSO, container or instance role) found none`,
        { retryable: false },
      );
    }
    const codes = [...errorCodes(e), ...aggregateCodes(e)];
    const network = codes.find((c) => NETWORK_CODES.has(c));
    if (network || name === 'TimeoutError') {
      return new LetheError('unavailable', `${this.#where} did not answer ${operation} (${network ?? 'timed out'})`, { retryable: true });
    }
    const status = (e as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
    if (TRANSIENT_ERRORS.has(name) || (status !== undefined && status >= 500)) {
      return new LetheError('unavailable', `${this.#where} failed ${operation} (${name}${status ? `, HTTP ${status}` : ''})`, { retryable: true });
    }
    if (UNUSABLE_KEY_ERRORS.has(name)) return new KmsRefusal('epoch_unavailable', name, `${this.#where} refused ${operation}: the key is not usable (${name})`);
    if (DECRYPT_ERRORS.has(name)) return new KmsRefusal('decrypt_failed', name, `${this.#where} refused ${operation}: the ciphertext does not open (${name})`);
    if (name === 'AlreadyExistsException') return new KmsRefusal('conflict', name, `${this.#where} refused ${operation}: it already exists`);
    if (name === 'LimitExceededException') {
      return new LetheError('unavailable', `${this.#where} refused ${operation}: an AWS KMS quota is reached (keys or aliases in the account and region; LimitExceededException)`, {
        retryable: false,
      });
    }
    return new LetheError('internal', `${this.#where} refused ${operation} (${name}${status ? `, HTTP ${status}` : ''})`);
  }
}

/** The KMS encryption context of a wrap: wrapContext's ("wrapped-key", { keyId, purpose }) and the epoch. */
function encryptionContext(epoch: number, keyId: string, purpose: KeyPurpose): Record<string, string> {
  if (!(KEY_PURPOSES as readonly string[]).includes(purpose)) throw new LetheError('validation_failed', 'unknown key purpose');
  if (typeof keyId !== 'string' || keyId.length === 0) throw new LetheError('validation_failed', 'a wrapped key needs a key id');
  return { lethe: 'wrapped-key', keyId, purpose, epoch: String(epoch) };
}

/** The codes of an AggregateError's errors (a connection tried on several addresses). */
function aggregateCodes(e: unknown): string[] {
  const errors = (e as { errors?: unknown }).errors;
  if (!Array.isArray(errors)) return [];
  return errors.map((x) => (x as { code?: unknown }).code).filter((c): c is string => typeof c === 'string');
}
