/**
 * Opens the configured key provider: the local keyring alone (the default), or an
 * external epoch store (PKCS#11 token, AWS KMS) in front of it (external.ts). The
 * store's module is loaded only when configured, so the default never loads the
 * PKCS#11 native addon or the AWS SDK.
 */
import { readFileSync } from 'node:fs';
import type { KeyProviderConfig } from '../config/index.js';
import { LetheError } from '../errors.js';
import type { EpochKeyStore } from './epoch-store.js';
import { ExternalKeyProvider } from './external.js';
import { LocalKeyringProvider } from './local.js';
import type { KeyProvider } from './provider.js';

/** Takes ownership of `rootKey` (zeroed when the provider closes, or here if opening fails). */
export async function openKeyProvider(config: { keyringDir: string; keyProvider: KeyProviderConfig }, rootKey: Uint8Array): Promise<KeyProvider> {
  const local = await LocalKeyringProvider.open(config.keyringDir, rootKey);
  if (config.keyProvider.kind === 'local') return local;
  let store: EpochKeyStore;
  try {
    store = await openEpochStore(config.keyProvider);
  } catch (e) {
    await local.close();
    throw e;
  }
  return ExternalKeyProvider.open(store, local);
}

async function openEpochStore(config: Exclude<KeyProviderConfig, { kind: 'local' }>): Promise<EpochKeyStore> {
  if (config.kind === 'pkcs11') {
    const { Pkcs11EpochStore } = await import('./pkcs11.js');
    const pin = config.pin !== undefined ? new TextEncoder().encode(config.pin) : readPin(config.pinFile!);
    try {
      return await Pkcs11EpochStore.open({ module: config.module, tokenLabel: config.tokenLabel, pin, prefix: config.prefix });
    } finally {
      pin.fill(0);
    }
  }
  const { AwsKmsEpochStore } = await import('./aws-kms.js');
  return AwsKmsEpochStore.open({
    region: config.region,
    ...(config.endpoint ? { endpoint: config.endpoint } : {}),
    aliasPrefix: config.aliasPrefix,
    deletionWindowDays: config.deletionWindowDays,
  });
}

/** The PIN file's first line, as bytes (the caller zeroes them). */
function readPin(file: string): Uint8Array {
  let raw: Buffer;
  try {
    raw = readFileSync(file);
  } catch (e) {
    throw new LetheError('validation_failed', `LETHE_PKCS11_PIN_FILE cannot be read (${(e as NodeJS.ErrnoException).code ?? 'error'}): ${file}`);
  }
  let end = raw.indexOf(0x0a);
  if (end < 0) end = raw.length;
  if (end > 0 && raw[end - 1] === 0x0d) end--;
  const pin = new Uint8Array(raw.subarray(0, end));
  raw.fill(0);
  if (pin.length === 0) throw new LetheError('validation_failed', `LETHE_PKCS11_PIN_FILE holds no PIN on its first line: ${file}`);
  return pin;
}
