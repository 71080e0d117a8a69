import { fork } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import pkcs11js from 'pkcs11js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSoftHsmToken, type SoftHsmToken } from '../../infra/softhsm.js';
import { randomBytes } from '../../src/crypto/index.js';
import { epochKeyTemplate, Pkcs11EpochStore } from '../../src/keyprovider/pkcs11.js';
import { epochStoreContract } from './epoch-store-contract.js';

// SoftHSM reads its token directory at C_Initialize: every token this process uses is
// made before the first store opens (top-level await), in one shared token directory.
const token: SoftHsmToken = await createSoftHsmToken();
const other: SoftHsmToken = await createSoftHsmToken({ label: `lethe-other-${process.pid}` });
let prefixes = 0;
const freshPrefix = () => `t${process.pid}-${++prefixes}`;
const openStore = (prefix: string, extra: { pin?: string | Uint8Array; sessions?: number } = {}) =>
  Pkcs11EpochStore.open({
    module: token.module,
    tokenLabel: token.tokenLabel,
    pin: extra.pin ?? token.pin,
    prefix,
    ...(extra.sessions ? { sessions: extra.sessions } : {}),
  });

afterAll(async () => {
  await token.cleanup();
  await other.cleanup();
});

epochStoreContract('pkcs11 (SoftHSM2)', async () => {
  const prefix = freshPrefix();
  const store = await openStore(prefix);
  return {
    store,
    reopen: () => openStore(prefix, { pin: new TextEncoder().encode(token.pin), sessions: 2 }),
    cleanup: () => store.close(),
  };
});

/** Direct access to the token, beside the store (the store keeps the module initialized and the token logged in). */
function rawSession(): { lib: InstanceType<typeof pkcs11js.PKCS11>; session: Buffer; find(label: string, cls?: number): Buffer[]; close(): void } {
  const lib = new pkcs11js.PKCS11();
  lib.load(token.module);
  try {
    lib.C_Initialize({ flags: pkcs11js.CKF_OS_LOCKING_OK });
  } catch (e) {
    if ((e as { code?: number }).code !== pkcs11js.CKR_CRYPTOKI_ALREADY_INITIALIZED) throw e;
  }
  const slot = lib.C_GetSlotList(true).find((s) => lib.C_GetTokenInfo(s).label.trim() === token.tokenLabel)!;
  const session = lib.C_OpenSession(slot, pkcs11js.CKF_SERIAL_SESSION | pkcs11js.CKF_RW_SESSION);
  return {
    lib,
    session,
    find(label, cls = pkcs11js.CKO_SECRET_KEY) {
      lib.C_FindObjectsInit(session, [
        { type: pkcs11js.CKA_CLASS, value: cls },
        { type: pkcs11js.CKA_LABEL, value: label },
      ]);
      const found = lib.C_FindObjects(session, 16);
      lib.C_FindObjectsFinal(session);
      return found;
    },
    close() {
      lib.C_CloseSession(session);
    },
  };
}

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = path.join(dir, name);
    return statSync(p).isDirectory() ? filesUnder(p) : [p];
  });
}

describe('the PKCS#11 epoch store on SoftHSM2', () => {
  let store: Pkcs11EpochStore;
  let prefix: string;

  beforeAll(async () => {
    prefix = freshPrefix();
    store = await openStore(prefix);
  });
  afterAll(async () => {
    await store.close();
  });

  it('generates epoch KEKs inside the token: sensitive, not extractable, private, token objects', async () => {
    await store.createEpoch(1);
    const raw = rawSession();
    try {
      const [key] = raw.find(`${prefix}-epoch-00000001`);
      expect(key).toBeDefined();
      expect(() => raw.lib.C_GetAttributeValue(raw.session, key!, [{ type: pkcs11js.CKA_VALUE }])).toThrow(/CKR_ATTRIBUTE_SENSITIVE/);
      const attrs = raw.lib.C_GetAttributeValue(raw.session, key!, [
        { type: pkcs11js.CKA_EXTRACTABLE },
        { type: pkcs11js.CKA_SENSITIVE },
        { type: pkcs11js.CKA_TOKEN },
        { type: pkcs11js.CKA_PRIVATE },
        { type: pkcs11js.CKA_VALUE_LEN },
        { type: pkcs11js.CKA_KEY_TYPE },
      ]);
      // booleans are one byte, CK_ULONG values eight (little-endian here)
      expect(attrs.map((a) => (a.value.length === 8 ? Number(a.value.readBigUInt64LE(0)) : a.value[0]))).toEqual([0, 1, 1, 1, 32, pkcs11js.CKK_AES]);
    } finally {
      raw.close();
    }
  });

  it('leaves no plaintext DEK in the token directory after wraps', async () => {
    const deks = Array.from({ length: 20 }, () => randomBytes(32));
    for (const [i, dek] of deks.entries()) await store.wrap(1, dek, `scan-${i}`, 'subject');
    const files = filesUnder(token.dir);
    expect(files.length).toBeGreaterThan(0);
    const contents = files.map((f) => readFileSync(f));
    for (const dek of deks) for (const c of contents) expect(c.includes(Buffer.from(dek))).toBe(false);
  });

  it('writes a tombstone holding only the time of destruction and the destroyed key ids; a wrap under a destroyed key of a number taken again is told apart', async () => {
    await store.createEpoch(2);
    const before = await store.wrap(2, randomBytes(32), 'tomb-a', 'subject');
    const kid = Buffer.from(before.subarray(1, 17)).toString('hex');
    await store.destroyEpoch(2);
    const raw = rawSession();
    try {
      const [tomb] = raw.find(`${prefix}-destroyed-00000002`, pkcs11js.CKO_DATA);
      const [value] = raw.lib.C_GetAttributeValue(raw.session, tomb!, [{ type: pkcs11js.CKA_VALUE }]);
      const [time, kids] = value!.value.toString('utf8').split('\n');
      expect(time).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      expect(kids).toBe(kid);
      expect((await store.destroyedAt(2))?.toISOString()).toBe(time);
      expect(raw.find(`${prefix}-epoch-00000002`)).toEqual([]);
    } finally {
      raw.close();
    }
    // the number taken again (a fresh database on this token and prefix): a new key; the old wrap is another KEK's, not damage
    await store.createEpoch(2);
    await expect(store.unwrap(2, before, 'tomb-a', 'subject')).rejects.toMatchObject({ code: 'key_commitment_mismatch' });
    const damaged = before.slice();
    damaged[5]! ^= 0x01; // inside the key id: names no key this epoch ever had
    await expect(store.unwrap(2, damaged, 'tomb-a', 'subject')).rejects.toMatchObject({ code: 'decrypt_failed' });
  });

  it('keeps both keys of an epoch created twice at once (a replica race), unwraps under each, destroys both', async () => {
    await store.createEpoch(3);
    const before = await store.wrap(3, randomBytes(32), 'race-a', 'subject');
    // what a racing replica leaves: a second key object under the same label
    const raw = rawSession();
    try {
      // CKA_ID of zeros sorts first: new wraps use it
      raw.lib.C_GenerateKey(raw.session, { mechanism: pkcs11js.CKM_AES_KEY_GEN }, epochKeyTemplate(`${prefix}-epoch-00000003`, Buffer.alloc(16, 0)));
      const replica = await openStore(prefix, { sessions: 1 });
      try {
        const dek = randomBytes(32);
        const after = await replica.wrap(3, dek, 'race-b', 'subject');
        expect(Buffer.from(after.subarray(1, 17)).equals(Buffer.alloc(16, 0))).toBe(true);
        expect(Buffer.from(await store.unwrap(3, after, 'race-b', 'subject')).equals(Buffer.from(dek))).toBe(true);
        expect(await replica.unwrap(3, before, 'race-a', 'subject')).toHaveLength(32);
        expect((await replica.listEpochs()).filter((e) => e === 3)).toEqual([3]);
        await store.destroyEpoch(3);
        expect(raw.find(`${prefix}-epoch-00000003`)).toEqual([]);
        await expect(replica.unwrap(3, after, 'race-b', 'subject')).rejects.toMatchObject({ code: 'epoch_unavailable' });
        await expect(store.unwrap(3, before, 'race-a', 'subject')).rejects.toMatchObject({ code: 'epoch_unavailable' });
      } finally {
        await replica.close();
      }
    } finally {
      raw.close();
    }
  });

  it('a replica in another process unwraps under the epoch until this one destroys it, then gets epoch_unavailable', async () => {
    await store.createEpoch(4);
    const dek = randomBytes(32);
    const wrapped = Buffer.from(await store.wrap(4, dek, 'xproc', 'subject')).toString('base64');
    const child = fork(
      path.join(import.meta.dirname, 'pkcs11-replica.ts'),
      [JSON.stringify({ module: token.module, tokenLabel: token.tokenLabel, pin: token.pin, prefix })],
      {
        execArgv: ['--import', 'tsx'],
        env: process.env,
      },
    );
    const replies: Array<Record<string, unknown>> = [];
    const waiters: Array<(m: Record<string, unknown>) => void> = [];
    child.on('message', (m: Record<string, unknown>) => (waiters.shift() ?? ((x) => replies.push(x)))(m));
    const next = () => new Promise<Record<string, unknown>>((resolve) => (replies.length > 0 ? resolve(replies.shift()!) : waiters.push(resolve)));
    try {
      expect(await next()).toEqual({ ready: true });
      child.send({ op: 'unwrap', epoch: 4, wrapped, keyId: 'xproc' });
      expect(await next()).toEqual({ ok: Buffer.from(dek).toString('base64') }); // the replica now holds the key's handle
      await store.destroyEpoch(4);
      child.send({ op: 'unwrap', epoch: 4, wrapped, keyId: 'xproc' });
      expect(await next()).toEqual({ code: 'epoch_unavailable' });
    } finally {
      const exited = new Promise((r) => child.once('exit', r));
      child.send({ op: 'stop' });
      await exited;
    }
  });

  it('keeps deployments with different prefixes apart on one token', async () => {
    const elsewhere = await openStore(freshPrefix());
    try {
      await elsewhere.createEpoch(7);
      expect(await elsewhere.listEpochs()).toEqual([7]);
      expect(await store.listEpochs()).not.toContain(7);
      const wrapped = await elsewhere.wrap(7, randomBytes(32), 'k', 'subject');
      await expect(store.unwrap(7, wrapped, 'k', 'subject')).rejects.toMatchObject({ code: 'epoch_unavailable' });
    } finally {
      await elsewhere.close();
    }
  });

  it('refuses malformed wraps with envelope_malformed', async () => {
    const wrapped = await store.wrap(1, randomBytes(32), 'm', 'subject');
    const versioned = wrapped.slice();
    versioned[0] = 2;
    for (const bad of [versioned, wrapped.slice(0, 76), new Uint8Array([...wrapped, 0])]) {
      await expect(store.unwrap(1, bad, 'm', 'subject')).rejects.toMatchObject({ code: 'envelope_malformed' });
    }
  });

  it('refuses a wrong PIN with a clear error that does not contain the PIN', async () => {
    const wrongPin = 'not-the-pin-93751';
    // while this token is logged in (the store above is open): the PIN is still checked
    const err = await openStore(freshPrefix(), { pin: wrongPin }).then(
      () => undefined,
      (e: unknown) => e as Error & { code?: string },
    );
    expect(err?.code).toBe('validation_failed');
    expect(err?.message).toMatch(/refused the PIN/);
    expect(err?.message).not.toContain(wrongPin);
    expect(err?.message).not.toContain(token.pin);
  });

  it('refuses a wrong PIN on a token nobody is logged in to (CKR_PIN_INCORRECT from the token)', async () => {
    const wrongPin = 'wrong-pin-48213';
    const err = await Pkcs11EpochStore.open({ module: other.module, tokenLabel: other.tokenLabel, pin: wrongPin, prefix: 'x' }).then(
      () => undefined,
      (e: unknown) => e as Error & { code?: string },
    );
    expect(err?.message).toMatch(/CKR_PIN_INCORRECT/);
    expect(err?.message).not.toContain(wrongPin);
    expect(JSON.stringify(err)).not.toContain(wrongPin);
    // and the right PIN opens it
    const ok = await Pkcs11EpochStore.open({ module: other.module, tokenLabel: other.tokenLabel, pin: other.pin, prefix: 'x' });
    await ok.close();
  });

  it('names the tokens present when the token label is unknown', async () => {
    const err = await Pkcs11EpochStore.open({ module: token.module, tokenLabel: 'no-such-token', pin: token.pin, prefix: 'x' }).then(
      () => undefined,
      (e: unknown) => e as Error & { code?: string },
    );
    expect(err?.code).toBe('validation_failed');
    expect(err?.message).toMatch(/^no token labelled "no-such-token" in the PKCS#11 module .*; tokens present: /);
    expect(err?.message).toContain(`"${token.tokenLabel}"`);
    expect(err?.message).toContain(`"${other.tokenLabel}"`);
    expect(err?.message).not.toContain('""'); // the free slot SoftHSM offers is not a token to name
    expect(err?.message).not.toContain(token.pin);
  });

  it('says so when the module cannot be loaded', async () => {
    for (const module of ['/nonexistent/libpkcs11.so', '/etc/hostname']) {
      const err = await Pkcs11EpochStore.open({ module, tokenLabel: token.tokenLabel, pin: token.pin, prefix: 'x' }).then(
        () => undefined,
        (e: unknown) => e as Error & { code?: string },
      );
      expect(err?.code).toBe('validation_failed');
      expect(err?.message).toContain(`the PKCS#11 module ${module} cannot be loaded`);
      expect(err?.message).not.toContain(token.pin);
    }
  });

  it('refuses a bad prefix and works after close of another store on the same token', async () => {
    await expect(Pkcs11EpochStore.open({ module: token.module, tokenLabel: token.tokenLabel, pin: token.pin, prefix: 'a b' })).rejects.toMatchObject({
      code: 'validation_failed',
    });
    const second = await openStore(prefix, { sessions: 1 });
    await second.close();
    // the first store is still logged in and working
    const dek = randomBytes(32);
    expect(Buffer.from(await store.unwrap(1, await store.wrap(1, dek, 'after', 'erasure'), 'after', 'erasure')).equals(Buffer.from(dek))).toBe(true);
    await expect(second.wrap(1, dek, 'x', 'subject')).rejects.toMatchObject({ code: 'unavailable' });
  });
});
