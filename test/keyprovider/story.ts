/**
 * The whole erasure story on an external root of trust (PKCS#11 token, AWS KMS): a
 * vault whose epoch KEKs live in the provider appends for three subjects, backs up,
 * erases one, rotates the KEK (the old epoch destroyed in the provider), turns the
 * certificate final (for AWS KMS only once the deletion window has passed), refuses a
 * restore of the pre-rotation backup, and keeps serving the others. Then the
 * migration: a vault on the local keyring moved into the provider by `lethe kek
 * migrate`. Run by pkcs11-story.test.ts and aws-kms-story.test.ts.
 */
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { queryRows } from '../../src/db/client.js';
import { ExternalKeyProvider } from '../../src/keyprovider/external.js';
import { minioEnv } from '../backups/support.js';
import { callVault, type Call, type ClassB, classB, type ErasureReply, expectLogErasedOthersKept } from '../erasure/fixtures.js';
import { ok } from '../support/http.js';
import { createTestDatabase, type TestDatabase } from '../support/pg.js';
import { runCli } from '../support/process.js';
import { openTestVault, type TestVault } from '../support/vault.js';

export interface ProviderUnderTest {
  /** The environment that selects the provider (LETHE_KEY_PROVIDER and its settings; a fresh namespace per call). */
  env(): Record<string, string>;
  /** The provider's name (KeyProvider.name). */
  readonly name: string;
  /** Days between a destroy and the KEK being gone for good (AWS KMS's deletion window); 0 when destroy is immediate. */
  readonly deletionWindowDays: number;
  /**
   * What an administrator of the provider can do during the deletion window: cancel the
   * deletion of `epoch`'s key and enable it again (for the vault using `env`). Only for
   * providers with a window.
   */
  revive?(env: Record<string, string>, epoch: number): Promise<void>;
}

const DAY_MS = 86_400_000;

export function providerStory(provider: () => ProviderUnderTest): void {
  describe('the erasure story with epoch KEKs in the provider', () => {
    let p: ProviderUnderTest;
    let tv: TestVault;
    let call: Call;
    let s: ClassB;
    let backupId = '';
    let erasureId = '';
    let firstEpoch = 0;
    let offsetMs = 0;
    const targets: TestDatabase[] = [];

    beforeAll(async () => {
      p = provider();
      tv = await openTestVault({
        extraEnv: { ...minioEnv().env, ...p.env() },
        app: { erasureWorker: false, clock: () => new Date(Date.now() + offsetMs) },
      });
      call = callVault(tv.app);
      s = await classB(tv.app, 'kp');
      backupId = (await ok<{ backupId: string }>(call('POST', '/v1/backups', { role: 'backup' }), 201)).backupId;
      erasureId = (await ok<{ erasureId: string }>(call('POST', '/v1/erasures', { role: 'eraser', body: { subject: s.A, legalBasis: 'gdpr-art17' } }), 202))
        .erasureId;
    });
    afterAll(async () => {
      await tv?.close();
      for (const db of targets) await db.drop().catch(() => {});
    });

    it('the vault runs on the provider: its only epoch is in the provider, none in the local keyring', async () => {
      expect(tv.app.provider.name).toBe(p.name);
      expect(tv.app.provider).toBeInstanceOf(ExternalKeyProvider);
      const epochs = (await tv.app.epochs.list()).filter((e) => e.state === 'active');
      expect(epochs).toHaveLength(1);
      firstEpoch = epochs[0]!.epoch;
      expect(await tv.app.provider.listEpochs()).toContain(firstEpoch);
      expect((tv.app.provider as ExternalKeyProvider).keyringEpochs()).toEqual([]);
      // nothing that could be a KEK in the keyring directory: only the signing keys and the dev files
      const files = existsSync(tv.config.keyringDir) ? readdirSync(tv.config.keyringDir) : [];
      expect(files.filter((f) => f.endsWith('.kek'))).toEqual([]);
    });

    it("erases A: completed, A's data unreadable and B's and C's kept, the certificate provisional until the epoch is retired", async () => {
      const view = await tv.app.erasures.settle(erasureId);
      expect(view.status, JSON.stringify(view.steps)).toBe('completed');
      await expectLogErasedOthersKept(call, s);
      expect(view.certificateState).toBe('provisional');
      const residual = view.residuals.find((r) => r.tier === 'key-table' && r.kind === 'wrapped-dek');
      expect(String(residual?.bound)).toContain(`until epoch ${firstEpoch} is retired`);
    });

    it('a KEK rotation destroys the old epoch in the provider; the certificate turns final once the KEK is gone for good', async () => {
      const rotated = await tv.app.epochs.rotate('admin');
      expect(rotated.retired).toEqual([firstEpoch]);
      expect(await tv.app.provider.listEpochs()).not.toContain(firstEpoch);
      expect(await tv.app.provider.listEpochs()).toContain(rotated.epoch);
      const gone = await tv.app.provider.destroyedAt(firstEpoch);
      expect(gone).toBeInstanceOf(Date);
      // A's wrapped key copy in the backup is inert
      const verified = await tv.app.backups.verify(backupId);
      expect(verified.keys.find((k) => k.keyId === s.aKeyId)).toMatchObject({ state: 'destroyed', data: 'unreadable', wrappedCopy: 'inert' });

      await tv.app.erasures.finalizeCertificates();
      const view = await ok<ErasureReply & { certificateState: string }>(call('GET', `/v1/erasures/${erasureId}`, { role: 'eraser' }), 200);
      if (p.deletionWindowDays === 0) {
        expect(await tv.app.provider.destructionState(firstEpoch)).toEqual({ state: 'gone' });
        expect(view.certificateState).toBe('final');
        expect(view.residuals.find((r) => r.tier === 'key-table' && r.kind === 'wrapped-dek')).toMatchObject({ bound: 0, until: expect.any(String) });
        return;
      }
      // the deletion is scheduled: until its date an administrator of the provider could cancel it
      expect(gone!.getTime()).toBeGreaterThan(Date.now() + (p.deletionWindowDays - 1) * DAY_MS);
      expect(await tv.app.provider.destructionState(firstEpoch)).toEqual({ state: 'pending', goneAt: gone });
      expect(view.certificateState).toBe('provisional');
      const [row] = await tv.app.epochs.rows([firstEpoch]);
      expect(row).toMatchObject({ state: 'retired' });
      expect(row!.retiredAt!.getTime()).toBe(gone!.getTime());

      // an administrator cancels the deletion and enables the key: the vault's next pass finds it and destroys it again
      await p.revive!(tv.env, firstEpoch);
      expect(await tv.app.provider.destructionState(firstEpoch)).toEqual({ state: 'present' });
      offsetMs = p.deletionWindowDays * DAY_MS + 60_000; // the vault's clock past the first date
      await tv.app.erasures.finalizeCertificates();
      const again = await tv.app.provider.destructionState(firstEpoch);
      expect(again.state).toBe('pending');
      const audited = await queryRows<{ n: string }>(
        tv.app.db.db,
        sql`select count(*) as n from audit_log where action = 'kek.epoch.redestroy' and epoch = ${firstEpoch}`,
      );
      expect(Number(audited[0]!.n)).toBe(1);
      // the date has passed by the vault's clock, but the provider still holds the key (pending): never final
      await tv.app.erasures.finalizeCertificates();
      const still = await ok<ErasureReply & { certificateState: string }>(call('GET', `/v1/erasures/${erasureId}`, { role: 'eraser' }), 200);
      expect(still.certificateState).toBe('provisional');
      const [redated] = await tv.app.epochs.rows([firstEpoch]);
      expect(redated!.retiredAt!.getTime()).toBe((again as { goneAt: Date }).goneAt.getTime());
    });

    it('the backup taken before the rotation cannot be restored: its keys are under an epoch the provider no longer holds', async () => {
      const db = await createTestDatabase();
      targets.push(db);
      const restorer = await tv.reopen({ listen: false }, { DATABASE_URL: db.url, S3_BUCKET: `lethe-rst-${Date.now().toString(36)}` });
      try {
        await expect(restorer.backups.restore(backupId, { actor: 'test' })).rejects.toMatchObject({
          code: 'conflict',
          message: expect.stringContaining(`KEK epoch ${firstEpoch}, which the ${p.name} key provider no longer holds`),
        });
      } finally {
        await restorer.close();
      }
    });

    it('keeps serving after the rotation: B reads back, a new subject gets a key under the new epoch', async () => {
      const b = await tv.app.log.get(s.b1);
      expect(JSON.stringify(b)).toContain(s.bCanary);
      const entry = await tv.app.log.append('user:kp-new', { text: 'after the rotation' }, 'writer');
      expect(JSON.stringify(await tv.app.log.get(entry.entryId))).toContain('after the rotation');
    });
  });

  describe('migration from the local keyring (`lethe kek migrate`)', () => {
    let p: ProviderUnderTest;
    let tv: TestVault;
    let providerEnv: Record<string, string>;
    const entries: string[] = [];

    beforeAll(async () => {
      p = provider();
      providerEnv = p.env();
      tv = await openTestVault({ app: { erasureWorker: false } });
      for (const subject of ['user:mig-a', 'user:mig-b']) entries.push((await tv.app.log.append(subject, { text: `memory of ${subject}` }, 'writer')).entryId);
      await tv.app.artifacts.write({ kind: 'summary', text: 'memory of user:mig-a and user:mig-b', sources: entries }, 'writer');
      await tv.app.close();
    });
    afterAll(async () => {
      await tv?.close().catch(() => {});
    });

    it('with the provider configured and the keyring not yet migrated, the old epoch still serves, and the vault says to migrate', async () => {
      const v = await tv.reopen({ erasureWorker: false }, providerEnv);
      try {
        expect(v.provider).toBeInstanceOf(ExternalKeyProvider);
        expect((v.provider as ExternalKeyProvider).keyringEpochs()).toEqual([1]);
        for (const id of entries) expect(JSON.stringify(await v.log.get(id))).toContain('memory of user:mig-');
      } finally {
        await v.close();
      }
    });

    it('migrates: every key re-wrapped under a new epoch in the provider, the keyring epoch destroyed; a second run has nothing to do', async () => {
      const env = { ...tv.env, ...providerEnv, LETHE_LOG_LEVEL: 'warn' };
      const run = await runCli(['kek', 'migrate', '--quiet'], env, { timeoutMs: 120_000 });
      expect(run.code, run.stderr).toBe(0);
      const result = JSON.parse(run.stdout) as {
        migrated: boolean;
        from: string;
        to: string;
        epoch: number;
        rewrapped: number;
        retired: number[];
        keyringEpochsLeft: number[];
      };
      expect(result).toMatchObject({ migrated: true, from: 'local-keyring', to: p.name, retired: [1], keyringEpochsLeft: [] });
      expect(result.rewrapped).toBeGreaterThanOrEqual(3); // two subject keys and the summary's version key
      expect(readdirSync(tv.config.keyringDir).filter((f) => f.endsWith('.kek'))).toEqual([]);
      expect(existsSync(path.join(tv.config.keyringDir, 'destroyed', 'epoch-00000001.json'))).toBe(true);

      const v = await tv.reopen({ erasureWorker: false }, providerEnv);
      try {
        expect((v.provider as ExternalKeyProvider).keyringEpochs()).toEqual([]);
        expect(await v.provider.listEpochs()).toEqual([result.epoch]);
        for (const id of entries) expect(JSON.stringify(await v.log.get(id))).toContain('memory of user:mig-');
      } finally {
        await v.close();
      }
      const again = await runCli(['kek', 'migrate', '--quiet'], env, { timeoutMs: 60_000 });
      expect(again.code, again.stderr).toBe(0);
      expect(JSON.parse(again.stdout)).toMatchObject({ migrated: false, to: p.name });
    });

    it('refuses to migrate when no external provider is configured (exit 2, says what to set)', async () => {
      const run = await runCli(['kek', 'migrate'], { ...tv.env, LETHE_KEY_PROVIDER: 'local' }, { timeoutMs: 60_000 });
      expect(run.code).toBe(2);
      expect(run.stderr).toContain('LETHE_KEY_PROVIDER is local');
    });
  });
}
