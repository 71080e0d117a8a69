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
  type KMSClient,
  type KeyMetadata,
  ListAliasesCommand,
  ListResourceTagsCommand,
  ScheduleKeyDeletionCommand,
  UpdateAliasCommand,
} from '@aws-sdk/client-kms';
import { KEY_LENGTH, zeroize } from '../crypto/index.js';
import { LetheError } from '../errors.js';
import { type AwsKmsEpochStoreOptions, kmsClient, Semaphore } from './aws-kms-client.js';
import { classifyKmsError, DECRYPT_ERRORS, keyUnavailable, kmsName, UNUSABLE_KEY_ERRORS } from './aws-kms-errors.js';
import { encryptionContext, HEADER, KMS_KEY_ID, keyIdOf } from './aws-kms-wrap.js';
import type { EpochKeyStore } from './epoch-store.js';
import type { DestructionState, KeyPurpose } from './provider.js';

export { type AwsKmsEpochStoreOptions, kmsAgents } from './aws-kms-client.js';

const EPOCH_ALIAS = /^epoch-(\d{8})$/;

function checkEpoch(epoch: number): void {
  if (!Number.isSafeInteger(epoch) || epoch < 1 || epoch > 99_999_999) {
    throw new LetheError('validation_failed', 'epoch must be an integer from 1 to 99999999');
  }
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
    const { client, prefix, windowDays, where, concurrency } = kmsClient(opts);
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
        await this.#send('ScheduleKeyDeletion', (c) => c.send(new ScheduleKeyDeletionCommand({ KeyId: arn, PendingWindowInDays: this.#windowDays }))).catch(
          () => {},
        );
        if (now?.KeyState === 'Enabled' && now.Arn) this.#arns.set(epoch, now.Arn);
      }
      return;
    }
    try {
      await this.#send('CreateAlias', (c) => c.send(new CreateAliasCommand({ AliasName: alias, TargetKeyId: arn })));
      // a store whose CreateAlias is not atomic (local-kms under a race) lets two succeed: the alias names the winner
      const now = await this.#describe(epoch);
      if (now?.Arn && now.Arn !== arn) {
        await this.#send('ScheduleKeyDeletion', (c) => c.send(new ScheduleKeyDeletionCommand({ KeyId: arn, PendingWindowInDays: this.#windowDays }))).catch(
          () => {},
        );
        if (now.KeyState === 'Enabled') this.#arns.set(epoch, now.Arn);
        return;
      }
      this.#arns.set(epoch, arn);
    } catch (e) {
      // Our key is an orphan either way: schedule its deletion (best effort; it is tagged lethe:epoch).
      await this.#send('ScheduleKeyDeletion', (c) => c.send(new ScheduleKeyDeletionCommand({ KeyId: arn, PendingWindowInDays: this.#windowDays }))).catch(
        () => {},
      );
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
        throw new LetheError('unavailable', `${this.#where} refused to schedule the deletion of KEK epoch ${epoch} (its key is ${again.KeyState})`, {
          retryable: false,
        });
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
        if (!key?.Arn) throw keyUnavailable(this.#where, epoch, undefined);
        if (key.KeyState !== 'Enabled') throw keyUnavailable(this.#where, epoch, key);
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
      return new LetheError(
        'key_commitment_mismatch',
        `the wrapped key was made under an earlier AWS KMS key of KEK epoch ${epoch}, not the one its alias names now`,
      );
    }
    return new LetheError('decrypt_failed', `the wrapped key was not made under KEK epoch ${epoch}'s AWS KMS key`);
  }

  /** A failed Encrypt or Decrypt: epoch_unavailable (with the key's state) when KMS says the key is unusable, else the error as it is. */
  async #keyError(epoch: number, e: unknown): Promise<unknown> {
    if (!UNUSABLE_KEY_ERRORS.has(kmsName(e))) return e;
    this.#arns.delete(epoch);
    const key = await this.#describe(epoch).catch(() => undefined);
    return keyUnavailable(this.#where, epoch, key);
  }

  /** One KMS call, within the concurrency bound; any failure becomes a LetheError (classifyKmsError). */
  async #send<T>(operation: string, call: (client: KMSClient) => Promise<T>): Promise<T> {
    if (this.#closed) throw new LetheError('unavailable', 'the AWS KMS epoch store is closed', { retryable: false });
    try {
      return await this.#limit.run(() => call(this.#client));
    } catch (e) {
      throw classifyKmsError(this.#where, operation, e);
    }
  }
}
