/**
 * Object Lock is only as strong as the credential that could bypass it. On a real
 * MinIO: the ledger chain is retained in compliance mode by default; a serving replica
 * probes with a canary whether its own credential can remove a retained version and
 * says so (`/readyz` `ledgerLock: bypassable`; production refuses to start unless
 * accepted); the least-privilege policy in infra/minio/lethe-policy.json (applied as an
 * STS session policy over MinIO's root user) lets lethe do its work and cannot remove
 * a ledger version even in governance mode.
 */
import { readFileSync } from 'node:fs';
import { Client } from 'minio';
import { AssumeRoleProvider } from 'minio/dist/esm/AssumeRoleProvider.mjs';
import { afterAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { openApp } from '../../src/app/open.js';
import { chainRecordKey, LEDGER_HEAD_KEY } from '../../src/backups/ledger-chain.js';
import { manifestKey } from '../../src/backups/manifest.js';
import { loadConfig } from '../../src/config/index.js';
import { createLogger } from '../../src/observability/logger.js';
import { callVault, tag } from '../erasure/fixtures.js';
import { createTestDatabase, type TestDatabase } from '../support/pg.js';
import { openTestVault, tempDir, testEnv, type TestVault } from '../support/vault.js';
import { allVersions, minioClient } from './support.js';

const minio = () => inject('minio');

function env(lock: 'governance' | 'compliance' | undefined, buckets = { live: `lethe-lk-${tag(4)}`, backup: `lethe-lkb-${tag(4)}` }): Record<string, string> {
  const m = minio();
  return {
    S3_ENDPOINT: m.endpoint,
    S3_ACCESS_KEY: m.accessKey,
    S3_SECRET_KEY: m.secretKey,
    S3_BUCKET: buckets.live,
    S3_BACKUP_BUCKET: buckets.backup,
    LETHE_BACKUP_PROPAGATE_SECONDS: '86400',
    ...(lock ? { LETHE_LEDGER_LOCK: lock } : {}),
  };
}

type Ready = { status: string; checks: Record<string, string>; warnings?: string[] };

describe("the ledger's Object Lock against lethe's own credential", () => {
  const vaults: TestVault[] = [];
  const dbs: TestDatabase[] = [];
  afterAll(async () => {
    for (const v of vaults) await v.close().catch(() => {});
    for (const d of dbs) await d.drop().catch(() => {});
  });

  it('retains the chain in compliance mode by default: the canary finds even the root credential cannot remove a version', async () => {
    const tv = await openTestVault({ extraEnv: env(undefined) });
    vaults.push(tv);
    expect(tv.config.ledgerLock?.mode).toBe('compliance');
    expect(await tv.app.backups.probeLedgerLock()).toBe('enforced');
    const ready = (await (await callVault(tv.app)('GET', '/readyz', { role: 'none' })).json()) as Ready;
    expect(ready.checks.ledgerLock).toBe('ok');
    // and a record of the chain, and a manifest (a witness of the chain's reach), retained so, cannot be removed with the bypass either
    await tv.app.log.append(`user:lk-${tag()}`, { text: 'compliance' }, 'writer');
    const { backupId } = await tv.app.backups.run();
    const client = minioClient();
    for (const key of [chainRecordKey(0), manifestKey(backupId)]) {
      const [v] = await allVersions(client, tv.config.backupBucket, key);
      expect(await client.getObjectRetention(tv.config.backupBucket, key, { versionId: v!.versionId })).toMatchObject({ mode: 'COMPLIANCE' });
      await expect(client.removeObject(tv.config.backupBucket, key, { versionId: v!.versionId, governanceBypass: true })).rejects.toThrow();
    }
  });

  it("reports ledgerLock: bypassable in governance mode with MinIO's root credential, and refuses to start in production unless accepted", async () => {
    const tv = await openTestVault({ extraEnv: env('governance') });
    vaults.push(tv);
    const ready = (await (await callVault(tv.app)('GET', '/readyz', { role: 'none' })).json()) as Ready;
    expect(ready.checks.ledgerLock).toBe('bypassable');
    expect(ready.warnings?.join(' ')).toMatch(/own credential can remove retained versions of the ledger chain/);

    const db = await createTestDatabase();
    dbs.push(db);
    const base = testEnv({ databaseUrl: db.url, dataDir: tempDir(), extra: { ...env('governance'), NODE_ENV: 'production', LETHE_AUTO_MIGRATE: 'true' } });
    const logger = createLogger('silent');
    await expect(openApp(loadConfig(base), { logger })).rejects.toThrow(/can remove versions of the ledger chain .* LETHE_ACCEPT_BYPASSABLE_LEDGER_LOCK=true/);
    const accepted = await openApp(loadConfig({ ...base, LETHE_ACCEPT_BYPASSABLE_LEDGER_LOCK: 'true' }), { logger });
    await accepted.close();
  });

  it('with the least-privilege policy (infra/minio/lethe-policy.json) lethe works, and even in governance mode no ledger version can be removed', async () => {
    const buckets = { live: `lethe-lp-${tag(4)}`, backup: `lethe-lpb-${tag(4)}` };
    const policy = readFileSync(new URL('../../infra/minio/lethe-policy.json', import.meta.url), 'utf8')
      .replaceAll('arn:aws:s3:::lethe-backups', `arn:aws:s3:::${buckets.backup}`)
      .replaceAll('arn:aws:s3:::lethe/', `arn:aws:s3:::${buckets.live}/`)
      .replaceAll('arn:aws:s3:::lethe"', `arn:aws:s3:::${buckets.live}"`);
    const m = minio();
    const credentials = await new AssumeRoleProvider({
      stsEndpoint: m.endpoint,
      accessKey: m.accessKey,
      secretKey: m.secretKey,
      policy: JSON.stringify(JSON.parse(policy)),
    }).getCredentials();
    const restricted = {
      ...env('governance', buckets),
      S3_ACCESS_KEY: credentials.getAccessKey(),
      S3_SECRET_KEY: credentials.getSecretKey(),
      S3_SESSION_TOKEN: credentials.getSessionToken() ?? '',
    };
    const tv = await openTestVault({ extraEnv: restricted });
    vaults.push(tv);
    expect(await tv.app.backups.probeLedgerLock()).toBe('enforced');
    const ready = (await (await callVault(tv.app)('GET', '/readyz', { role: 'none' })).json()) as Ready;
    expect(ready.checks.ledgerLock).toBe('ok');

    // its work: appends, a backup, a destruction durable in the chain, a restore check
    const a = await tv.app.log.append(`user:lp-${tag()}`, { text: `least privilege ${tag()}` }, 'writer');
    const { backupId } = await tv.app.backups.run();
    await tv.app.keys.destroyKey(a.keyId, { reason: 'erasure', actor: 'eraser' });
    expect((await tv.app.backups.awaitDurable([a.keyId], 30_000)).pending).toEqual([]);
    expect(await tv.app.backups.verify(backupId)).toMatchObject({ ok: true });

    // what it cannot do: remove a version of a record or of the head, with or without the bypass, nor hide one
    const url = new URL(m.endpoint);
    const as = new Client({
      endPoint: url.hostname,
      port: Number(url.port),
      useSSL: false,
      accessKey: credentials.getAccessKey(),
      secretKey: credentials.getSecretKey(),
      sessionToken: credentials.getSessionToken(),
    });
    for (const key of [chainRecordKey(1), LEDGER_HEAD_KEY]) {
      const [v] = await allVersions(minioClient(), buckets.backup, key);
      await expect(as.removeObject(buckets.backup, key, { versionId: v!.versionId, governanceBypass: true })).rejects.toMatchObject({ code: 'AccessDenied' });
      await expect(as.removeObject(buckets.backup, key, { versionId: v!.versionId })).rejects.toMatchObject({
        code: expect.stringMatching(/AccessDenied|ObjectLocked|InvalidRequest/),
      });
      await expect(as.removeObject(buckets.backup, key)).rejects.toMatchObject({ code: 'AccessDenied' });
    }
    expect(await tv.app.backups.checkAnchor()).toBeUndefined();
  });
});
