/**
 * Loading the root key: LETHE_ROOT_KEY, LETHE_ROOT_KEY_FILE, or, for development
 * only, a key generated on first start in the data directory (with a loud warning,
 * and refused when NODE_ENV=production).
 */
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { ensurePrivateDir } from '../config/files.js';
import type { Config } from '../config/index.js';
import { randomBytes, toBase64Url } from '../crypto/index.js';
import { LetheError } from '../errors.js';

export interface RootKeySource {
  readonly key: Uint8Array;
  readonly origin: 'env' | 'file' | 'dev-generated' | 'dev-file';
}

export const DEV_ROOT_KEY_FILE = 'dev-root.key';

function parseKeyText(text: string, where: string): Uint8Array {
  const trimmed = text.trim();
  const bytes = Buffer.from(trimmed, /[-_]/.test(trimmed) ? 'base64url' : 'base64');
  if (bytes.length !== 32) {
    bytes.fill(0);
    throw new LetheError('validation_failed', `${where} must hold 32 bytes, base64 encoded`);
  }
  const key = new Uint8Array(bytes);
  bytes.fill(0);
  return key;
}

export function loadRootKey(config: Pick<Config, 'rootKey' | 'rootKeyFile' | 'dataDir' | 'production'>, warn: (message: string) => void): RootKeySource {
  if (config.rootKey) return { key: config.rootKey.slice(), origin: 'env' };
  if (config.rootKeyFile) {
    let text: string;
    try {
      text = readFileSync(config.rootKeyFile, 'utf8');
    } catch (cause) {
      throw new LetheError('validation_failed', `LETHE_ROOT_KEY_FILE cannot be read: ${(cause as Error).message}`);
    }
    return { key: parseKeyText(text, 'LETHE_ROOT_KEY_FILE'), origin: 'file' };
  }
  if (config.production) {
    throw new LetheError(
      'validation_failed',
      'no root key: set LETHE_ROOT_KEY or LETHE_ROOT_KEY_FILE (a development root key is never generated when NODE_ENV=production)',
    );
  }
  const file = path.join(config.dataDir, DEV_ROOT_KEY_FILE);
  const banner =
    `DEVELOPMENT ROOT KEY in ${file}: it sits next to the data it protects, so it protects nothing. ` +
    'Set LETHE_ROOT_KEY or LETHE_ROOT_KEY_FILE (kept away from the data directory and its backups) for any real use.';
  if (existsSync(file)) {
    warn(banner);
    return { key: parseKeyText(readFileSync(file, 'utf8'), file), origin: 'dev-file' };
  }
  ensurePrivateDir(config.dataDir, 'the data directory (LETHE_DATA_DIR)');
  const key = randomBytes(32);
  writeFileSync(file, `${toBase64Url(key)}\n`, { mode: 0o600, flag: 'wx' });
  chmodSync(file, 0o600);
  warn(`GENERATED A NEW ${banner}`);
  return { key, origin: 'dev-generated' };
}
