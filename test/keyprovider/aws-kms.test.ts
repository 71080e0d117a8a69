/**
 * The AWS KMS epoch store against a real local-kms server (infra/local-kms.sh builds it
 * from source the first time), started for this file: the shared EpochKeyStore
 * contract, then what is particular to KMS. local-kms checks no credentials, so there
 * is no test of refused credentials here (see src/keyprovider/README.md).
 */
import { randomBytes as nodeRandomBytes } from 'node:crypto';
import { createServer as createHttpServer, request as httpRequest, type Server } from 'node:http';
import { createServer as createTcpServer, type Socket } from 'node:net';
import { DecryptCommand, DescribeKeyCommand, KMSClient, ListAliasesCommand, ListKeysCommand } from '@aws-sdk/client-kms';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../infra/local-server.js';
import { localKmsBinary, type LocalKmsServer, startLocalKms } from '../../infra/local-kms-server.js';
import { randomBytes, zeroize } from '../../src/crypto/index.js';
import { AwsKmsEpochStore, type AwsKmsEpochStoreOptions } from '../../src/keyprovider/aws-kms.js';
import { epochStoreContract } from './epoch-store-contract.js';

const CREDENTIALS = { accessKeyId: 'lethe-test-access', secretAccessKey: `lethe-test-secret-${process.pid}` };
let kms: LocalKmsServer;
let raw: KMSClient;

beforeAll(async () => {
  kms = await startLocalKms(localKmsBinary());
  raw = new KMSClient({ region: kms.region, endpoint: kms.endpoint, credentials: CREDENTIALS });
});

afterAll(async () => {
  raw?.destroy();
  await kms?.stop();
});

function prefix(): string {
  return `lethe-test/${nodeRandomBytes(6).toString('hex')}`;
}

function openStore(aliasPrefix: string, more: Partial<AwsKmsEpochStoreOptions> = {}): Promise<AwsKmsEpochStore> {
  return AwsKmsEpochStore.open({ region: kms.region, endpoint: kms.endpoint, credentials: CREDENTIALS, aliasPrefix, ...more });
}

async function keyOf(aliasPrefix: string, epoch: number) {
  const out = await raw.send(new DescribeKeyCommand({ KeyId: `alias/${aliasPrefix}/epoch-${String(epoch).padStart(8, '0')}` }));
  return out.KeyMetadata!;
}

async function rejection(p: Promise<unknown>): Promise<{ code?: string; message: string; retryable?: boolean; name?: string }> {
  return p.then(
    () => {
      throw new Error('expected a rejection');
    },
    (e: unknown) => e as { code?: string; message: string; retryable?: boolean },
  );
}

epochStoreContract(
  'aws-kms (local-kms)',
  async () => {
    const p = prefix();
    const store = await openStore(p);
    return { store, reopen: () => openStore(p), cleanup: () => store.close() };
  },
  {
    // local-kms copies the key's ARN into its CiphertextBlob and, given the KeyId, never checks that copy:
    // a flipped byte there is accepted. AWS KMS authenticates its whole blob (AWS KMS cryptographic
    // details), so against local-kms the check flips lethe's own header (layout byte, the key id it
    // names) and the blob's sealed tail (ciphertext and tag), which both authenticate.
    tamperPositions: (w) => [0, 8, w.length - 40, w.length - 20, w.length - 1],
  },
);

describe('AwsKmsEpochStore against local-kms', () => {
  it('names the store aws-kms and keeps one enabled symmetric key per epoch under its alias, tagged and described', async () => {
    const p = prefix();
    const store = await openStore(p);
    try {
      expect(store.name).toBe('aws-kms');
      await store.createEpoch(12);
      const key = await keyOf(p, 12);
      expect(key.KeyState).toBe('Enabled');
      expect(key.KeySpec ?? key.CustomerMasterKeySpec).toBe('SYMMETRIC_DEFAULT');
      expect(key.KeyUsage).toBe('ENCRYPT_DECRYPT');
      expect(key.Description).toContain('lethe KEK, epoch 12');
      expect(await store.listEpochs()).toEqual([12]);
    } finally {
      await store.close();
    }
  });

  it('binds the encryption context: KMS refuses the blob under another key id, purpose or epoch, and opens it under the right one', async () => {
    const p = prefix();
    const store = await openStore(p);
    try {
      await store.createEpoch(1);
      await store.createEpoch(2);
      const dek = randomBytes(32);
      const wrapped = await store.wrap(1, dek, 'key-ctx', 'subject');
      // the layout: "LK", version 1, the length and id of the KMS key that made it, then the CiphertextBlob
      expect([...wrapped.subarray(0, 3)]).toEqual([0x4c, 0x4b, 0x01]);
      const arn1 = (await keyOf(p, 1)).Arn!;
      const arn2 = (await keyOf(p, 2)).Arn!;
      const kek = arn1.slice(arn1.lastIndexOf('/') + 1);
      expect(wrapped[3]).toBe(kek.length);
      expect(Buffer.from(wrapped.subarray(4, 4 + kek.length)).toString()).toBe(kek);
      const blob = wrapped.subarray(4 + kek.length);
      const right: Record<string, string> = { lethe: 'wrapped-key', keyId: 'key-ctx', purpose: 'subject', epoch: '1', kek };
      const opened = await raw.send(new DecryptCommand({ KeyId: arn1, CiphertextBlob: blob, EncryptionContext: right }));
      expect(Buffer.from(opened.Plaintext!).equals(Buffer.from(dek))).toBe(true);
      const wrongs: Record<string, string>[] = [
        { ...right, keyId: 'key-other' },
        { ...right, purpose: 'erasure' },
        { ...right, epoch: '2' },
        { keyId: 'key-ctx', purpose: 'subject', epoch: '1', kek },
        { lethe: 'wrapped-key', keyId: 'key-ctx', purpose: 'subject', epoch: '1' },
        {},
      ];
      for (const wrong of wrongs) {
        const err = await rejection(raw.send(new DecryptCommand({ KeyId: arn1, CiphertextBlob: blob, EncryptionContext: wrong })));
        expect(err.name, JSON.stringify(wrong)).toBe('InvalidCiphertextException');
      }
      // the right context under another epoch's key is refused too (the store always names the key)
      const err = await rejection(raw.send(new DecryptCommand({ KeyId: arn2, CiphertextBlob: blob, EncryptionContext: right })));
      expect(['InvalidCiphertextException', 'IncorrectKeyException']).toContain(err.name);
      // and through the store, a header it does not know is malformed
      const badHeader = wrapped.slice();
      badHeader[2] = 0x02;
      expect((await rejection(store.unwrap(1, badHeader, 'key-ctx', 'subject'))).code).toBe('envelope_malformed');
    } finally {
      await store.close();
    }
  });

  it('destroys by scheduling deletion with the configured window: destroyedAt is about now + window, and unwrap then fails with epoch_unavailable naming the date', async () => {
    const p = prefix();
    const store = await openStore(p, { deletionWindowDays: 9 });
    const fresh = await openStore(p, { deletionWindowDays: 9 });
    try {
      await store.createEpoch(3);
      const wrapped = await store.wrap(3, randomBytes(32), 'key-del', 'erasure');
      // the second instance has the epoch's key cached before the destroy
      await fresh.wrap(3, randomBytes(32), 'key-warm', 'subject');
      const before = Date.now();
      await store.destroyEpoch(3);
      const key = await keyOf(p, 3);
      expect(key.KeyState).toBe('PendingDeletion');
      const at = await store.destroyedAt(3);
      const nineDays = 9 * 24 * 3600_000;
      // local-kms adds 9 calendar days in its local time zone: allow a daylight-saving hour either way
      expect(Math.abs(at!.getTime() - (before + nineDays))).toBeLessThan(3600_000 + 60_000);
      expect(at!.getTime()).toBe(key.DeletionDate!.getTime());
      const err = await rejection(store.unwrap(3, wrapped, 'key-del', 'erasure'));
      expect(err.code).toBe('epoch_unavailable');
      expect(err.message).toContain(`scheduled for deletion on ${at!.toISOString()}`);
      // refused by KMS itself for an instance that still had the key cached
      expect((await rejection(fresh.unwrap(3, wrapped, 'key-del', 'erasure'))).code).toBe('epoch_unavailable');
      expect((await rejection(fresh.wrap(3, randomBytes(32), 'key-x', 'subject'))).code).toBe('epoch_unavailable');
      // idempotent, and the date does not move
      await fresh.destroyEpoch(3);
      expect((await store.destroyedAt(3))!.getTime()).toBe(at!.getTime());
      // the number taken again (a fresh database on this prefix, as on a local keyring): a new key under the alias,
      // and what the old key wrapped is refused as made under another key, never opened
      await store.createEpoch(3);
      expect(await store.listEpochs()).toContain(3);
      // what was destroyed is still the old key: pending until its date, never the new key's "present"
      expect(await store.destructionState(3)).toEqual({ state: 'pending', goneAt: at });
      expect((await rejection(store.unwrap(3, wrapped, 'key-del', 'erasure'))).code).toBe('key_commitment_mismatch');
      const again = await store.wrap(3, randomBytes(32), 'key-again', 'subject');
      zeroize(await store.unwrap(3, again, 'key-again', 'subject'));
    } finally {
      await store.close();
      await fresh.close();
    }
  });

  it('two replicas creating the same epoch at once end with one key; every losing key is scheduled for deletion', async () => {
    const p = prefix();
    const stores = await Promise.all([1, 2, 3, 4].map(() => openStore(p)));
    try {
      await Promise.all(stores.map((s) => s.createEpoch(21)));
      const winner = await keyOf(p, 21);
      expect(winner.KeyState).toBe('Enabled');
      // every key made for this epoch: the alias's, and the losers' (pending deletion)
      const ids: string[] = [];
      for (let marker: string | undefined, first = true; first || marker; first = false) {
        const page = await raw.send(new ListKeysCommand({ Limit: 100, ...(marker ? { Marker: marker } : {}) }));
        ids.push(...(page.Keys ?? []).map((k) => k.KeyId!));
        marker = page.Truncated ? page.NextMarker : undefined;
      }
      const mine = [];
      for (const id of ids) {
        const meta = (await raw.send(new DescribeKeyCommand({ KeyId: id }))).KeyMetadata!;
        if (meta.Description?.includes(`alias/${p}/epoch-00000021`)) mine.push(meta);
      }
      expect(mine.filter((k) => k.KeyState === 'Enabled').map((k) => k.Arn)).toEqual([winner.Arn]);
      expect(mine.filter((k) => k.KeyState !== 'Enabled').every((k) => k.KeyState === 'PendingDeletion')).toBe(true);
      // each replica wraps under the winner: the others unwrap it
      for (const [i, s] of stores.entries()) {
        const dek = randomBytes(32);
        const w = await s.wrap(21, dek, `key-race-${i}`, 'subject');
        const other = stores[(i + 1) % stores.length]!;
        expect(Buffer.from(await other.unwrap(21, w, `key-race-${i}`, 'subject')).equals(Buffer.from(dek))).toBe(true);
      }
    } finally {
      for (const s of stores) await s.close();
    }
  });

  it('lists epochs across ListAliases pages, only under its own prefix', async () => {
    const p = prefix();
    const store = await openStore(p);
    const neighbour = await openStore(`${p}-other`);
    try {
      const epochs = Array.from({ length: 105 }, (_, i) => i + 1);
      await Promise.all(epochs.map((e) => store.createEpoch(e)));
      await neighbour.createEpoch(500);
      const aliases = await raw.send(new ListAliasesCommand({ Limit: 100 }));
      expect(aliases.Truncated).toBe(true);
      expect(await store.listEpochs()).toEqual(epochs);
      expect(await neighbour.listEpochs()).toEqual([500]);
    } finally {
      await store.close();
      await neighbour.close();
    }
  });

  it('keeps at most `concurrency` KMS calls in flight', async () => {
    let inFlight = 0;
    let most = 0;
    const target = new URL(kms.endpoint);
    const proxy: Server = createHttpServer((req, res) => {
      inFlight++;
      most = Math.max(most, inFlight);
      const out = httpRequest({ host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers }, (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
        answer.on('end', () => inFlight--);
      });
      req.pipe(out);
    });
    const port = await freePort();
    await new Promise<void>((r) => proxy.listen(port, '127.0.0.1', r));
    const store = await AwsKmsEpochStore.open({
      region: kms.region,
      endpoint: `http://127.0.0.1:${port}`,
      credentials: CREDENTIALS,
      aliasPrefix: prefix(),
      concurrency: 3,
    });
    try {
      await store.createEpoch(1);
      most = 0;
      const deks = Array.from({ length: 60 }, () => randomBytes(32));
      const wrapped = await Promise.all(deks.map((d, i) => store.wrap(1, d, `key-${i}`, 'subject')));
      const back = await Promise.all(wrapped.map((w, i) => store.unwrap(1, w, `key-${i}`, 'subject')));
      expect(back.every((b, i) => Buffer.from(b).equals(Buffer.from(deks[i]!)))).toBe(true);
      expect(most).toBeGreaterThan(1);
      expect(most).toBeLessThanOrEqual(3);
    } finally {
      await store.close();
      await new Promise((r) => proxy.close(r));
    }
  });

  it('an endpoint that refuses connections fails open() with a clear, retryable unavailable error in bounded time, without the credentials', async () => {
    const port = await freePort();
    const started = Date.now();
    const err = await rejection(
      AwsKmsEpochStore.open({ region: 'eu-west-2', endpoint: `http://127.0.0.1:${port}`, credentials: CREDENTIALS, aliasPrefix: 'lethe-test/x' }),
    );
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(err.code).toBe('unavailable');
    expect(err.retryable).toBe(true);
    expect(err.message).toContain(`AWS KMS at http://127.0.0.1:${port} did not answer ListAliases (ECONNREFUSED)`);
    expect(JSON.stringify({ ...err, message: err.message })).not.toContain(CREDENTIALS.secretAccessKey);
    expect(JSON.stringify({ ...err, message: err.message })).not.toContain(CREDENTIALS.accessKeyId);
  });

  it('a server that accepts and never answers fails a call within the request timeout times the attempts', async () => {
    const sockets: Socket[] = [];
    const silent = createTcpServer((s) => sockets.push(s));
    const port = await freePort();
    await new Promise<void>((r) => silent.listen(port, '127.0.0.1', r));
    try {
      const started = Date.now();
      const err = await rejection(
        AwsKmsEpochStore.open({
          region: 'eu-west-2',
          endpoint: `http://127.0.0.1:${port}`,
          credentials: CREDENTIALS,
          aliasPrefix: 'lethe-test/x',
          requestTimeoutMs: 400,
          maxAttempts: 2,
        }),
      );
      const took = Date.now() - started;
      expect(err.code).toBe('unavailable');
      expect(err.message).toContain(`AWS KMS at http://127.0.0.1:${port} did not answer ListAliases`);
      expect(took).toBeGreaterThanOrEqual(700);
      expect(took).toBeLessThan(5_000);
    } finally {
      for (const s of sockets) s.destroy();
      await new Promise((r) => silent.close(r));
    }
  });

  it('a KMS that goes away after open() turns wrap and unwrap into unavailable, not a crash', async () => {
    const second = await startLocalKms(localKmsBinary());
    const store = await AwsKmsEpochStore.open({
      region: second.region,
      endpoint: second.endpoint,
      credentials: CREDENTIALS,
      aliasPrefix: prefix(),
      maxAttempts: 2,
    });
    try {
      await store.createEpoch(1);
      const wrapped = await store.wrap(1, randomBytes(32), 'key-gone', 'subject');
      await second.stop();
      const started = Date.now();
      const err = await rejection(store.unwrap(1, wrapped, 'key-gone', 'subject'));
      expect(err.code).toBe('unavailable');
      expect(err.message).toMatch(/did not answer Decrypt \((ECONNREFUSED|ECONNRESET)\)/);
      expect((await rejection(store.wrap(1, randomBytes(32), 'key-gone', 'subject'))).code).toBe('unavailable');
      expect(Date.now() - started).toBeLessThan(10_000);
    } finally {
      await store.close();
      await second.stop();
    }
  });

  it('refuses bad options with validation_failed', async () => {
    for (const bad of [
      { aliasPrefix: 'aws/lethe' },
      { aliasPrefix: 'has space' },
      { aliasPrefix: '' },
      { deletionWindowDays: 6 },
      { deletionWindowDays: 31 },
      { concurrency: 0 },
    ]) {
      const err = await rejection(openStore('lethe-test/ok', bad));
      expect(err.code, JSON.stringify(bad)).toBe('validation_failed');
    }
    const store = await openStore(prefix());
    try {
      expect((await rejection(store.createEpoch(0))).code).toBe('validation_failed');
      await store.createEpoch(1);
      expect((await rejection(store.wrap(1, randomBytes(16), 'k', 'subject'))).code).toBe('validation_failed');
    } finally {
      await store.close();
    }
  });
});
