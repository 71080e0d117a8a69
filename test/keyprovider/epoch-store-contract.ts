/**
 * The contract every EpochKeyStore (src/keyprovider/epoch-store.ts) must pass: call
 * `epochStoreContract(name, open)` from a store's test file. `open` returns a fresh,
 * empty store (its own token, its own key prefix, ...), a way to open a second
 * instance on the same backing store (another replica), and a cleanup.
 *
 * Epoch numbers used here are small (1..9); a store whose backing service is shared
 * between runs must isolate them (a per-run prefix) in `open`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KEY_PURPOSES } from '../../src/crypto/wrap.js';
import { randomBytes } from '../../src/crypto/index.js';
import type { EpochKeyStore } from '../../src/keyprovider/epoch-store.js';

export interface EpochStoreFixture {
  readonly store: EpochKeyStore;
  /** A second, independent instance on the same backing store (as another replica would open it). */
  reopen(): Promise<EpochKeyStore>;
  /** Closes what `open` opened and removes what it made. */
  cleanup(): Promise<void>;
}

export interface EpochStoreContractOptions {
  /** How many wraps run at once in the concurrency test (default 200). */
  readonly concurrency?: number;
  /**
   * Which bytes of a wrap the flipped-byte check flips (default: the first, the middle and
   * the last). For a store whose server is an emulator that leaves part of its ciphertext
   * unauthenticated where the real service authenticates it, the caller names the bytes
   * both authenticate — and says why where it passes this.
   */
  readonly tamperPositions?: (wrapped: Uint8Array) => number[];
}

export function epochStoreContract(name: string, open: () => Promise<EpochStoreFixture>, options: EpochStoreContractOptions = {}): void {
  const concurrency = options.concurrency ?? 200;

  describe(`EpochKeyStore contract: ${name}`, () => {
    let fx: EpochStoreFixture;
    let store: EpochKeyStore;
    const opened: EpochKeyStore[] = [];

    const reopen = async (): Promise<EpochKeyStore> => {
      const s = await fx.reopen();
      opened.push(s);
      return s;
    };

    beforeAll(async () => {
      fx = await open();
      store = fx.store;
      await store.createEpoch(1);
    });

    afterAll(async () => {
      for (const s of opened) await s.close().catch(() => {});
      await fx?.cleanup();
    });

    it('has a non-empty name', () => {
      expect(typeof store.name).toBe('string');
      expect(store.name.length).toBeGreaterThan(0);
    });

    it('wraps and unwraps a 32-byte key for every purpose', async () => {
      for (const purpose of KEY_PURPOSES) {
        const dek = randomBytes(32);
        const wrapped = await store.wrap(1, dek, `key-${purpose}`, purpose);
        expect(wrapped).toBeInstanceOf(Uint8Array);
        // the wrap does not hold the key in the clear
        expect(Buffer.from(wrapped).includes(Buffer.from(dek))).toBe(false);
        const back = await store.unwrap(1, wrapped, `key-${purpose}`, purpose);
        expect(Buffer.from(back).equals(Buffer.from(dek))).toBe(true);
      }
    });

    it('refuses another key id, another purpose, another epoch and a flipped byte with decrypt_failed', async () => {
      await store.createEpoch(2);
      const dek = randomBytes(32);
      const wrapped = await store.wrap(1, dek, 'key-a', 'subject');
      await expect(store.unwrap(1, wrapped, 'key-b', 'subject')).rejects.toMatchObject({ code: 'decrypt_failed' });
      for (const other of KEY_PURPOSES.filter((p) => p !== 'subject')) {
        await expect(store.unwrap(1, wrapped, 'key-a', other)).rejects.toMatchObject({ code: 'decrypt_failed' });
      }
      await expect(store.unwrap(2, wrapped, 'key-a', 'subject')).rejects.toMatchObject({ code: 'decrypt_failed' });
      // a flipped byte anywhere in the wrap is refused (decrypt_failed, or envelope_malformed for a header byte)
      for (const at of options.tamperPositions?.(wrapped) ?? [0, Math.floor(wrapped.length / 2), wrapped.length - 1]) {
        const tampered = wrapped.slice();
        tampered[at]! ^= 0x01;
        const err = await store.unwrap(1, tampered, 'key-a', 'subject').then(
          () => undefined,
          (e: unknown) => e as { code?: string },
        );
        expect(err, `a wrap with byte ${at} of ${wrapped.length} flipped was accepted`).toBeDefined();
        expect(err?.code, `flipped byte ${at}`).toMatch(/^(decrypt_failed|envelope_malformed)$/);
      }
      // a byte flipped in the sealed part (not the header) is an authentication failure
      const tampered = wrapped.slice();
      tampered[wrapped.length - 1]! ^= 0x80;
      await expect(store.unwrap(1, tampered, 'key-a', 'subject')).rejects.toMatchObject({ code: 'decrypt_failed' });
      // the original still unwraps
      expect(Buffer.from(await store.unwrap(1, wrapped, 'key-a', 'subject')).equals(Buffer.from(dek))).toBe(true);
    });

    it('refuses truncated and empty input', async () => {
      const wrapped = await store.wrap(1, randomBytes(32), 'key-t', 'subject');
      for (const bad of [new Uint8Array(0), wrapped.slice(0, 1), wrapped.slice(0, wrapped.length - 1)]) {
        const err = await store.unwrap(1, bad, 'key-t', 'subject').then(
          () => undefined,
          (e: unknown) => e as { code?: string },
        );
        expect(err?.code).toMatch(/^(decrypt_failed|envelope_malformed)$/);
      }
    });

    it('creates an epoch idempotently and never overwrites it', async () => {
      await store.createEpoch(3);
      const dek = randomBytes(32);
      const wrapped = await store.wrap(3, dek, 'key-i', 'artifact-version');
      await store.createEpoch(3);
      await store.createEpoch(3);
      expect(Buffer.from(await store.unwrap(3, wrapped, 'key-i', 'artifact-version')).equals(Buffer.from(dek))).toBe(true);
      expect((await store.listEpochs()).filter((e) => e === 3)).toEqual([3]);
      // a second instance creating the same epoch keeps it too
      const other = await reopen();
      await other.createEpoch(3);
      expect(Buffer.from(await store.unwrap(3, wrapped, 'key-i', 'artifact-version')).equals(Buffer.from(dek))).toBe(true);
    });

    it('refuses to unwrap under a never-created epoch with epoch_unavailable', async () => {
      const wrapped = await store.wrap(1, randomBytes(32), 'key-n', 'subject');
      await expect(store.unwrap(9, wrapped, 'key-n', 'subject')).rejects.toMatchObject({ code: 'epoch_unavailable' });
      await expect(store.wrap(9, randomBytes(32), 'key-n', 'subject')).rejects.toMatchObject({ code: 'epoch_unavailable' });
    });

    it('destroys an epoch: unwrap fails with epoch_unavailable, destroy is idempotent, destroyedAt is set', async () => {
      await store.createEpoch(4);
      const wrapped = await store.wrap(4, randomBytes(32), 'key-d', 'erasure');
      expect(await store.destroyedAt(4)).toBeUndefined();
      const before = Date.now();
      await store.destroyEpoch(4);
      await expect(store.unwrap(4, wrapped, 'key-d', 'erasure')).rejects.toMatchObject({ code: 'epoch_unavailable' });
      await store.destroyEpoch(4);
      await expect(store.unwrap(4, wrapped, 'key-d', 'erasure')).rejects.toMatchObject({ code: 'epoch_unavailable' });
      const at = await store.destroyedAt(4);
      expect(at).toBeInstanceOf(Date);
      // a store that deletes at once records a time no later than now; one that schedules
      // deletion (AWS KMS) may answer a future date — either way not before the call
      expect(at!.getTime()).toBeGreaterThanOrEqual(before - 5_000);
      expect(await store.destroyedAt(5)).toBeUndefined();
      // destroying an epoch that never existed is not an error
      await store.destroyEpoch(8);
    });

    it('lists existing epochs ascending, without destroyed ones', async () => {
      await store.createEpoch(7);
      await store.createEpoch(6);
      await store.createEpoch(5);
      await store.destroyEpoch(6);
      const epochs = await store.listEpochs();
      expect(epochs).toEqual([...epochs].sort((a, b) => a - b));
      expect(epochs).toEqual(expect.arrayContaining([1, 2, 3, 5, 7]));
      expect(epochs).not.toContain(4);
      expect(epochs).not.toContain(6);
      expect(epochs).not.toContain(9);
    });

    it('a second instance sees the same epochs, unwraps what the first wrapped, and sees its destroys', async () => {
      const dek = randomBytes(32);
      const wrapped = await store.wrap(5, dek, 'key-r', 'subject');
      const other = await reopen();
      expect(await other.listEpochs()).toEqual(await store.listEpochs());
      expect(Buffer.from(await other.unwrap(5, wrapped, 'key-r', 'subject')).equals(Buffer.from(dek))).toBe(true);
      // and the other way round
      const dek2 = randomBytes(32);
      const wrapped2 = await other.wrap(5, dek2, 'key-r2', 'subject');
      expect(Buffer.from(await store.unwrap(5, wrapped2, 'key-r2', 'subject')).equals(Buffer.from(dek2))).toBe(true);
      // the second instance has used epoch 5 (and may cache its handle); the first destroys it
      await store.destroyEpoch(5);
      await expect(other.unwrap(5, wrapped, 'key-r', 'subject')).rejects.toMatchObject({ code: 'epoch_unavailable' });
      expect(await other.listEpochs()).not.toContain(5);
      expect(await other.destroyedAt(5)).toBeInstanceOf(Date);
    });

    it(`round-trips ${concurrency} concurrent wraps`, async () => {
      const deks = Array.from({ length: concurrency }, () => randomBytes(32));
      const wrapped = await Promise.all(deks.map((d, i) => store.wrap(7, d, `key-c${i}`, 'subject')));
      const back = await Promise.all(wrapped.map((w, i) => store.unwrap(7, w, `key-c${i}`, 'subject')));
      for (let i = 0; i < concurrency; i++) expect(Buffer.from(back[i]!).equals(Buffer.from(deks[i]!)), `key ${i}`).toBe(true);
    });
  });
}
