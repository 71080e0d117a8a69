/**
 * The erasure story and the keyring migration with epoch KEKs in AWS KMS, served by
 * local-kms (an AWS KMS-compatible server built from source by infra/local-kms.sh):
 * story.ts. A retired epoch's key is scheduled for deletion (7 days): the certificate
 * stays provisional while the key is pending, even with the vault's clock past the
 * date, and a deletion an administrator cancels is found and scheduled again. (local-kms
 * deletes a key only when its own clock passes the date, so the final step — the
 * provider answering `gone` — is shown by test/vault/epoch-gone.test.ts.)
 */
import { randomBytes } from 'node:crypto';
import { CancelKeyDeletionCommand, DescribeKeyCommand, EnableKeyCommand, KMSClient } from '@aws-sdk/client-kms';
import { afterAll, beforeAll } from 'vitest';
import { type LocalKmsServer, localKmsBinary, startLocalKms } from '../../infra/local-kms-server.js';
import { providerStory } from './story.js';

// local-kms accepts any credentials; the SDK's default chain reads these (in this process and in the CLI's)
const CREDENTIALS = { AWS_ACCESS_KEY_ID: 'AKIALETHETEST0000000', AWS_SECRET_ACCESS_KEY: 'lethe-test-secret-key-not-used-by-local-kms' };

let kms: LocalKmsServer;
const saved: Record<string, string | undefined> = {};
beforeAll(async () => {
  kms = await startLocalKms(localKmsBinary());
  for (const [k, v] of Object.entries(CREDENTIALS)) {
    saved[k] = process.env[k];
    process.env[k] = v;
  }
});
afterAll(async () => {
  for (const [k, v] of Object.entries(saved)) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
  await kms?.stop();
});

providerStory(() => ({
  name: 'aws-kms',
  deletionWindowDays: 7,
  env: () => ({
    LETHE_KEY_PROVIDER: 'aws-kms',
    LETHE_KMS_REGION: kms.region,
    LETHE_KMS_ENDPOINT: kms.endpoint,
    // one namespace per vault: the server is shared by this file's vaults
    LETHE_KMS_ALIAS_PREFIX: `t${randomBytes(4).toString('hex')}`,
    ...CREDENTIALS,
  }),
  // what an account administrator can do during the window: cancel the deletion, enable the key
  async revive(env, epoch) {
    const client = new KMSClient({
      region: kms.region,
      endpoint: kms.endpoint,
      credentials: { accessKeyId: CREDENTIALS.AWS_ACCESS_KEY_ID, secretAccessKey: CREDENTIALS.AWS_SECRET_ACCESS_KEY },
    });
    try {
      const alias = `alias/${env.LETHE_KMS_ALIAS_PREFIX}/epoch-${String(epoch).padStart(8, '0')}`;
      // local-kms resolves aliases in DescribeKey only
      const KeyId = (await client.send(new DescribeKeyCommand({ KeyId: alias }))).KeyMetadata!.Arn!;
      await client.send(new CancelKeyDeletionCommand({ KeyId }));
      await client.send(new EnableKeyCommand({ KeyId }));
    } finally {
      client.destroy();
    }
  },
}));
