import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isLetheError } from '../../src/errors.js';
import { createTestDatabase, type TestDatabase } from '../support/pg.js';
import { openTestVault, type TestVault, tempDir } from '../support/vault.js';

const SUBJECTS = Array.from({ length: 60 }, (_, i) => `user:${i}`);

describe('KEK rotation and epoch retirement', () => {
  let tv: TestVault;
  let restored: TestDatabase;
  const deks = new Map<string, { keyId: string; dek: string }>();

  beforeAll(async () => {
    tv = await openTestVault({ extraEnv: { LETHE_REWRAP_BATCH_SIZE: '7' } });
    for (const s of SUBJECTS) {
      const lease = await tv.app.keys.lease(s, 'writer');
      deks.set(s, { keyId: lease.keyId, dek: Buffer.from(lease.dek).toString('hex') });
    }
    restored = await createTestDatabase();
  });
  afterAll(async () => {
    await restored?.drop();
    await tv?.close();
  });

  it('after rotation and retirement, no DEK in a pg_dump taken before can be unwrapped, and every live key still works', async () => {
    const dumpFile = path.join(tempDir(), 'before-rotation.dump');
    execFileSync('pg_dump', ['--format=custom', `--file=${dumpFile}`, tv.db!.url]);

    const result = await tv.app.epochs.rotate('admin');
    expect(result).toEqual({ epoch: 2, rewrapped: SUBJECTS.length, retired: [1], resumed: false });

    // the old KEK is gone from the keyring directory
    expect(await tv.app.provider.listEpochs()).toEqual([2]);
    expect(readdirSync(tv.config.keyringDir).some((f) => f.includes('00000001'))).toBe(false);

    // restore the old backup elsewhere and try every wrapped DEK in it
    execFileSync('pg_restore', ['--no-owner', `--dbname=${restored.url}`, dumpFile]);
    const sql = postgres(restored.url, { max: 1, onnotice: () => {} });
    const oldRows = await sql<{ key_id: string; epoch: number; wrapped_dek: Buffer }[]>`select key_id, epoch, wrapped_dek from subject_keys`;
    await sql.end();
    expect(oldRows).toHaveLength(SUBJECTS.length);
    for (const row of oldRows) {
      expect(row.epoch).toBe(1);
      for (const epoch of [1, 2]) {
        const err = await tv.app.provider.unwrap(epoch, new Uint8Array(row.wrapped_dek), row.key_id, 'subject').catch((e: unknown) => e);
        expect(isLetheError(err)).toBe(true);
      }
    }
    // a fresh replica, with nothing cached, reads every live key under the new epoch
    const replica = await tv.reopen({ listen: false });
    for (const s of SUBJECTS) {
      const lease = await replica.keys.lease(s, 'writer');
      expect(lease.keyId).toBe(deks.get(s)!.keyId);
      expect(Buffer.from(lease.dek).toString('hex')).toBe(deks.get(s)!.dek);
    }
    const epochs = await tv.app.epochs.list();
    expect(epochs.map((e) => [e.epoch, e.state, e.keys])).toEqual([
      [1, 'retired', 0],
      [2, 'active', SUBJECTS.length],
    ]);
    expect(epochs[0]!.retiredAt).toBeInstanceOf(Date);
  });

  it('an interrupted rotation resumes on re-run without creating another epoch', async () => {
    let batches = 0;
    const crashing = await tv.reopen({
      listen: false,
      onRewrapBatch: () => {
        batches += 1;
        if (batches === 2) throw new Error('simulated crash');
      },
    });
    await expect(crashing.epochs.rotate('admin')).rejects.toThrow('simulated crash');
    const midway = await tv.app.epochs.list();
    expect(midway.map((e) => [e.epoch, e.state])).toEqual([
      [1, 'retired'],
      [2, 'retiring'],
      [3, 'active'],
    ]);
    expect(midway[1]!.keys).toBeGreaterThan(0);
    expect(midway[2]!.keys).toBe(14);
    // keys are readable in the middle of a rotation, from either epoch
    for (const s of SUBJECTS.slice(0, 3).concat(SUBJECTS.slice(-3))) {
      const dek = await tv.app.keys.dekFor(deks.get(s)!.keyId);
      expect(Buffer.from(dek.dek).toString('hex')).toBe(deks.get(s)!.dek);
    }

    const resumed = await tv.app.epochs.rotate('admin');
    expect(resumed).toEqual({ epoch: 3, rewrapped: SUBJECTS.length - 14, retired: [2], resumed: true });
    expect(await tv.app.provider.listEpochs()).toEqual([3]);
    for (const s of SUBJECTS) {
      const dek = await tv.app.keys.dekFor(deks.get(s)!.keyId);
      expect(Buffer.from(dek.dek).toString('hex')).toBe(deks.get(s)!.dek);
    }
  });

  it('two replicas rotating at once end with one active epoch, everything older retired, and every key readable', async () => {
    const other = await tv.reopen({ listen: false });
    const [a, b] = await Promise.all([tv.app.epochs.rotate('admin'), other.epochs.rotate('admin')]);
    const epochs = await tv.app.epochs.list();
    const active = epochs.filter((e) => e.state === 'active');
    expect(active).toHaveLength(1);
    expect(epochs.filter((e) => e.state !== 'active').every((e) => e.state === 'retired')).toBe(true);
    expect(a.rewrapped + b.rewrapped).toBeGreaterThanOrEqual(SUBJECTS.length);
    expect(await tv.app.provider.listEpochs()).toEqual([active[0]!.epoch]);
    for (const s of SUBJECTS) {
      const dek = await other.keys.dekFor(deks.get(s)!.keyId);
      expect(Buffer.from(dek.dek).toString('hex')).toBe(deks.get(s)!.dek);
    }
  });

  it('keys created while a rotation runs are wrapped under the new epoch and survive retirement', async () => {
    const slow = await tv.reopen({
      listen: false,
      onRewrapBatch: async () => {
        await tv.app.keys.lease(`late:${Math.random().toString(36).slice(2)}`, 'writer');
      },
    });
    const result = await slow.epochs.rotate('admin');
    const late = (await tv.app.epochs.list()).find((e) => e.epoch === result.epoch)!;
    expect(late.keys).toBeGreaterThan(SUBJECTS.length);
    expect((await tv.app.epochs.list()).filter((e) => e.state === 'retiring')).toEqual([]);
  });

  it('a vault started with the wrong root key refuses to start instead of writing under a new keyring', async () => {
    const err = await tv.reopen({ listen: false }, { LETHE_ROOT_KEY: Buffer.alloc(32, 7).toString('base64') }).catch((e: unknown) => e);
    expect(isLetheError(err, 'epoch_unavailable')).toBe(true);
    expect(existsSync(tv.config.keyringDir)).toBe(true);
  });
});
