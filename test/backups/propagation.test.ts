/**
 * Propagation when the replica that destroyed a key could not write the backup
 * bucket's ledger chain (its backup bucket is elsewhere): another replica catches up
 * at start-up or on its periodic tick; and two replicas catching up at once write the
 * chain record once. No manifest is rewritten: the backup learns of the destruction
 * through the chain, folded into its manifest. PostgreSQL and a real, versioned MinIO.
 */
import { Writable } from 'node:stream';
import postgres from 'postgres';
import type { Client } from 'minio';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chainRecordKey } from '../../src/backups/ledger-chain.js';
import { manifestKey } from '../../src/backups/manifest.js';
import { createLogger } from '../../src/observability/logger.js';
import type { App } from '../../src/app/open.js';
import { openTestVault, type TestVault } from '../support/vault.js';
import { allVersions, hex, keyState, ledgerHolds, ledgerRecordOf, minioClient, minioEnv, storedManifest, until } from './support.js';

const FAILED = 'backup ledger write failed';

describe('propagating destructions the destroying replica could not write', () => {
  let tv: TestVault;
  let client: Client;
  /** A replica whose backup bucket is not the backups' one, and holds a damaged chain: its own propagation fails (and says so in its log). */
  let broken: App;
  const brokenLog: Array<{ msg?: string }> = [];
  const { env, backupBucket } = minioEnv();

  const versionOf = async (vault: App, backupId: string) => (await vault.backups.list()).find((b) => b.backupId === backupId)?.manifestVersion;

  /** A subject with one entry, and a backup holding its key. */
  async function backedUpSubject(): Promise<{ keyId: string; backupId: string }> {
    const { keyId } = await tv.app.log.append(`user:p-${hex()}`, { text: 'Something worth backing up.' }, 'writer');
    const { backupId } = await tv.app.backups.run();
    expect(keyState(await storedManifest(tv.app.backups.store, backupId), keyId)?.state).toBe('active');
    return { keyId, backupId };
  }

  /** Destroys the key on the broken replica and waits for its propagation attempt to have failed. */
  async function destroyWithoutPropagating(keyId: string, backupId: string, options: { othersRunning?: boolean } = {}): Promise<void> {
    const failedBefore = brokenLog.filter((l) => l.msg?.startsWith(FAILED)).length;
    await broken.keys.destroyKey(keyId, { reason: 'erasure', actor: 'eraser' });
    await until(
      'the broken replica to give up propagating',
      async () => brokenLog.filter((l) => l.msg?.startsWith(FAILED)).length,
      (n) => n > failedBefore,
    );
    if (options.othersRunning) return; // a ticking replica may already have caught up
    expect(await versionOf(tv.app, backupId)).toBe(1);
    expect(await ledgerHolds(tv.app.backups.store, keyId)).toBe(false);
  }

  /** The folded manifest marks it, through the chain; the stored base is never rewritten. */
  const untilMarked = (keyId: string, backupId: string) =>
    until(
      `${keyId} marked destroyed in ${backupId}`,
      async () => ({
        listed: await versionOf(tv.app, backupId),
        base: keyState(await storedManifest(tv.app.backups.store, backupId), keyId)?.state,
        folded: keyState(await tv.app.backups.manifest(backupId), keyId)?.state,
        ledger: await ledgerHolds(tv.app.backups.store, keyId),
      }),
      (s) => s.listed === 1 && s.base === 'active' && s.folded === 'destroyed' && s.ledger,
    );

  beforeAll(async () => {
    // this replica never ticks during the test: it catches up only when told to
    tv = await openTestVault({ extraEnv: { ...env, LETHE_BACKUP_PROPAGATE_SECONDS: '86400' } });
    client = minioClient();
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        for (const line of chunk.toString('utf8').split('\n')) if (line.trim()) brokenLog.push(JSON.parse(line) as { msg?: string });
        done();
      },
    });
    broken = await tv.reopen({ listen: false, logger: createLogger('warn', sink) }, { S3_BACKUP_BUCKET: `lethe-elsewhere-${hex()}` });
    // its bucket holds a chain record without a head: it refuses to write a chain there, every time
    await broken.backups.store.put(chainRecordKey(0), Buffer.from('not a ledger record'));
  });
  afterAll(async () => {
    await tv?.close();
  });

  it('writes the chain record once, and no manifest version, when two replicas catch up on the same destruction at once', async () => {
    const { keyId, backupId } = await backedUpSubject();
    await destroyWithoutPropagating(keyId, backupId);
    const other = await tv.reopen({ listen: false });

    // hold the bucket's chain lock so both catch-ups wait on it before either writes
    const sql = postgres(tv.db!.url, { max: 2, onnotice: () => {} });
    let results: Array<{ backups: number; keys: number }> = [];
    try {
      let both!: Promise<Array<{ backups: number; keys: number }>>;
      await sql.begin(async (tx) => {
        await tx`select pg_advisory_xact_lock(hashtext(${`lethe-ledger-chain:${backupBucket}`}))`;
        both = Promise.all([tv.app.backups.propagate(), other.backups.propagate()]);
        await until(
          'both catch-ups to wait on the chain lock',
          async () => Number((await sql`select count(*)::int as n from pg_stat_activity where datname = ${tv.db!.name} and wait_event_type = 'Lock'`)[0]!.n),
          (n) => n >= 2,
        );
      });
      results = await both;
    } finally {
      await sql.end({ timeout: 1 });
    }
    // one of them wrote it, reaching the one backup that holds the key
    expect(results.map((r) => r.keys).sort()).toEqual([0, 1]);
    expect(results.reduce((n, r) => n + r.backups, 0)).toBe(1);

    const m = await storedManifest(tv.app.backups.store, backupId);
    expect(keyState(m, keyId)?.state).toBe('active');
    expect(m.version).toBe(1);
    expect(keyState(await tv.app.backups.manifest(backupId), keyId)?.state).toBe('destroyed');
    expect(await versionOf(tv.app, backupId)).toBe(1);
    expect(await allVersions(client, backupBucket, manifestKey(backupId))).toHaveLength(1);
    // the chain record holding the destruction was written once
    const record = await ledgerRecordOf(tv.app.backups.store, keyId);
    expect(record).toBeDefined();
    expect(await allVersions(client, backupBucket, record!)).toHaveLength(1);
  });

  it('counts the backups holding a key and those that have learned of its destruction', async () => {
    const { keyId, backupId } = await backedUpSubject();
    const { keyId: unbacked } = await tv.app.log.append(`user:p-${hex()}`, { text: 'Written after the backup.' }, 'writer');
    const b = tv.app.backups;
    await destroyWithoutPropagating(keyId, backupId);
    expect({ holding: await b.holding(keyId), marked: await b.marked(keyId) }).toEqual({ holding: 1, marked: 0 });

    await b.propagate({ keyIds: [keyId] });
    expect({ holding: await b.holding(keyId), marked: await b.marked(keyId) }).toEqual({ holding: 1, marked: 1 });
    expect(await b.holdingAny([keyId, unbacked])).toBe(1);
    expect({ holding: await b.holding(unbacked), marked: await b.marked(unbacked), any: await b.holdingAny([unbacked]) }).toEqual({
      holding: 0,
      marked: 0,
      any: 0,
    });
    expect(await b.holdingAny([])).toBe(0);
  });

  it('marks a destruction at start-up of a replica when the destroying replica could not', async () => {
    const { keyId, backupId } = await backedUpSubject();
    await destroyWithoutPropagating(keyId, backupId);
    const starting = await tv.reopen();
    try {
      await untilMarked(keyId, backupId);
    } finally {
      await starting.close();
    }
  });

  it('marks a destruction on the periodic catch-up of a replica already running', async () => {
    const ticking = await tv.reopen({}, { LETHE_BACKUP_PROPAGATE_SECONDS: '1' });
    try {
      const { keyId, backupId } = await backedUpSubject();
      await destroyWithoutPropagating(keyId, backupId, { othersRunning: true });
      await untilMarked(keyId, backupId);
    } finally {
      await ticking.close();
    }
  });
});
