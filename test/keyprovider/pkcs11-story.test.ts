/**
 * The erasure story and the keyring migration with epoch KEKs in a real PKCS#11 token
 * (SoftHSM2, initialised by the harness in a temporary SOFTHSM2_CONF): story.ts.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll } from 'vitest';
import { createSoftHsmToken, type SoftHsmToken } from '../../infra/softhsm.js';
import { providerStory } from './story.js';

let token: SoftHsmToken;
beforeAll(async () => {
  token = await createSoftHsmToken();
});
afterAll(async () => {
  await token?.cleanup().catch(() => {});
});

providerStory(() => ({
  name: 'pkcs11',
  deletionWindowDays: 0,
  env: () => ({
    LETHE_KEY_PROVIDER: 'pkcs11',
    LETHE_PKCS11_MODULE: token.module,
    LETHE_PKCS11_TOKEN_LABEL: token.tokenLabel,
    LETHE_PKCS11_PIN: token.pin,
    // one namespace per vault: the token is shared by this file's vaults
    LETHE_PKCS11_KEY_PREFIX: `t${randomBytes(4).toString('hex')}`,
    // the CLI child processes read the same SoftHSM configuration
    SOFTHSM2_CONF: token.conf,
  }),
}));
