/**
 * `lethe certificate`: `verify` checks a certificate file offline against a trusted
 * set of public keys — given on the command line, in a file, or fetched from a vault
 * (GET /v1/certificates/keys, no token) — and never against the key the certificate
 * carries, which proves nothing. `public-key` and `keys` read this configuration's
 * keyring (no database); `rotate-key` is a local admin command (it opens the app, for
 * the audit row).
 */
import { readFile } from 'node:fs/promises';
import type { Command } from 'commander';
import { networkReason, normalizeBaseUrl, tlsFetch } from '../client/http.js';
import { isLoopbackHost } from '../config/tls.js';
import { certificateKeyId, verifyCertificate } from '../crypto/certificate.js';
import { fromBase64Url, zeroize } from '../crypto/index.js';
import { describeError } from '../observability/logger.js';
import type { CurrentSigningKey, SigningKey, SigningKeyList, SigningKeyRotation } from '../wire/certificates.js';
import { clientTls, config, ExitError, existingVault, out, serviceCall, serviceClient, viaService, withApp } from './shared.js';

/** `lethe certificate verify` exit codes. */
const VERIFY_EXIT = { valid: 0, invalid: 1, input: 2 } as const;

/** Why `verify` will not check a certificate against the key it carries. */
export const NO_TRUSTED_KEY =
  'a trusted key is required: a certificate carries the public key of whoever signed it, so checking it against that key only shows that someone signed it — anyone can flip it to "completed" and re-sign it with a key of their own — not that this vault did. ' +
  "Give the vault's keys: --url <vault base url> (fetches GET /v1/certificates/keys), --public-key <key> or --public-key-file <file>";

/**
 * A key a certificate may be checked against: a signing key's public part (the wire type,
 * src/wire/certificates.ts), with its state and retirement when the source listed them
 * (a key file may hold any state: it is compared, not trusted as a type).
 */
type TrustedKey = Pick<SigningKey, 'publicKey'> & {
  /** current | retired, when the source listed it (the vault's key list). */
  readonly state?: string;
  /** When the source listed it retired: a certificate it signed must be issued before. */
  readonly retiredAt?: string;
};

function collect(value: string, previous: string[] | undefined): string[] {
  return [...(previous ?? []), value];
}

function checkKey(text: string, where: string): string {
  const bytes = fromBase64Url(text);
  if (bytes?.length !== 32) throw new ExitError(`${where} is not an Ed25519 public key (32 bytes of base64url)`, VERIFY_EXIT.input);
  return text;
}

/**
 * The keys of a key file or a vault's answer: the key list (`{ keys: [{ publicKey, state }] }`,
 * as GET /v1/certificates/keys and `lethe certificate keys` print it), one key
 * (`{ publicKey }`, as `lethe certificate public-key` prints it), a JSON array of either,
 * or base64url keys separated by white space.
 */
function keysFrom(text: string, source: string): TrustedKey[] {
  const trimmed = text.trim();
  if (!trimmed.startsWith('{') && !trimmed.startsWith('[')) {
    const words = trimmed.split(/\s+/).filter((w) => w !== '');
    return words.map((w, i) => ({ publicKey: checkKey(w, `${source}: key ${i + 1}`) }));
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(trimmed);
  } catch (e) {
    throw new ExitError(`${source}: not JSON (${describeError(e).message})`, VERIFY_EXIT.input);
  }
  const list: unknown[] = Array.isArray(parsed)
    ? parsed
    : typeof parsed === 'object' && parsed !== null && Array.isArray((parsed as { keys?: unknown }).keys)
      ? (parsed as { keys: unknown[] }).keys
      : [parsed];
  return list.map((entry, i) => {
    const where = `${source}: key ${i + 1}`;
    if (typeof entry === 'string') return { publicKey: checkKey(entry, where) };
    const e = entry as { publicKey?: unknown; state?: unknown; retiredAt?: unknown } | null;
    if (typeof e !== 'object' || e === null || typeof e.publicKey !== 'string') throw new ExitError(`${where} has no publicKey`, VERIFY_EXIT.input);
    if (e.retiredAt !== undefined && e.retiredAt !== null && (typeof e.retiredAt !== 'string' || Number.isNaN(Date.parse(e.retiredAt)))) {
      throw new ExitError(`${where}: retiredAt is not a time`, VERIFY_EXIT.input);
    }
    return {
      publicKey: checkKey(e.publicKey, where),
      ...(typeof e.state === 'string' ? { state: e.state } : {}),
      ...(typeof e.retiredAt === 'string' ? { retiredAt: e.retiredAt } : {}),
    };
  });
}

/**
 * A public document of the vault at `url` (no token; exit 2 when it cannot be had). Its keys
 * decide what verifies, so over plain HTTP only from a loopback host: anyone on the path
 * could answer their own. `option` names where the URL came from.
 */
async function fromVault(url: string, path: string, option: string): Promise<string> {
  const base = normalizeBaseUrl(url);
  const bad = `${option} must be an http(s):// URL of a lethe vault`;
  if (!/^https?:\/\/\S+$/.test(base)) throw new ExitError(bad, VERIFY_EXIT.input);
  let host: string;
  try {
    host = new URL(base).hostname;
  } catch {
    throw new ExitError(bad, VERIFY_EXIT.input);
  }
  if (base.startsWith('http://') && !isLoopbackHost(host)) {
    throw new ExitError(
      `${option} ${base}: the vault's keys decide what verifies, so they are fetched over https:// only (plain http:// is allowed for a loopback host: 127.0.0.0/8, ::1, localhost); ` +
        'use https://, or keep the key list and pass it with --public-key-file',
      VERIFY_EXIT.input,
    );
  }
  // an HTTPS vault is verified like every client command verifies it (LETHE_CA_FILE, LETHE_CLIENT_CERT / _KEY)
  const tls = clientTls();
  let res: Response;
  try {
    const call = tls ? await tlsFetch(tls)() : fetch;
    res = await call(`${base}${path}`, { headers: { accept: 'application/json' }, signal: AbortSignal.timeout(30_000) });
  } catch (e) {
    throw new ExitError(`cannot fetch the vault's certificate keys from ${base}: ${networkReason(e)}`, VERIFY_EXIT.input);
  }
  const text = await res.text().catch(() => '');
  if (!res.ok) throw new ExitError(`cannot fetch the vault's certificate keys: ${base}${path} answered ${res.status}`, VERIFY_EXIT.input);
  return text;
}

/** The vault's key list (GET /v1/certificates/keys). */
async function keysFromVault(url: string): Promise<TrustedKey[]> {
  const where = `${normalizeBaseUrl(url)}/v1/certificates/keys`;
  const keys = keysFrom(await fromVault(url, '/v1/certificates/keys', '--url'), where);
  if (keys.length === 0) throw new ExitError(`${where} lists no key`, VERIFY_EXIT.input);
  return keys;
}

/** A public answer of the running service at LETHE_URL, printed as it came. */
async function printFromService(path: string): Promise<void> {
  const text = await fromVault(process.env.LETHE_URL!, path, 'LETHE_URL');
  try {
    out(JSON.parse(text));
  } catch {
    throw new ExitError(`${path}: the service's answer is not JSON`, 1);
  }
}

async function trustedKeys(opts: VerifyOptions): Promise<TrustedKey[]> {
  const keys: TrustedKey[] = (opts.publicKey ?? []).map((k) => ({ publicKey: checkKey(k, '--public-key') }));
  if (opts.publicKeyFile !== undefined) {
    let text: string;
    try {
      text = await readFile(opts.publicKeyFile, 'utf8');
    } catch (e) {
      throw new ExitError(`cannot read --public-key-file ${opts.publicKeyFile}: ${describeError(e).message}`, VERIFY_EXIT.input);
    }
    const fromFile = keysFrom(text, `--public-key-file ${opts.publicKeyFile}`);
    if (fromFile.length === 0) throw new ExitError(`--public-key-file ${opts.publicKeyFile} holds no key`, VERIFY_EXIT.input);
    keys.push(...fromFile);
  }
  if (opts.url !== undefined) keys.push(...(await keysFromVault(opts.url)));
  return keys;
}

interface VerifyOptions {
  publicKey?: string[];
  publicKeyFile?: string;
  url?: string;
}

/** `lethe certificate verify | public-key | keys | rotate-key`. */
export function addCertificate(program: Command): void {
  const certificate = program.command('certificate').description('Erasure certificates (Ed25519 over canonical JSON) and the keys that sign them.');
  certificate
    .command('verify')
    .description('Verify a certificate file against trusted keys (exit 0 valid, 1 not, 2 bad input).')
    .argument('<file>', 'a certificate as JSON: { payload, signature, publicKey, algorithm } (`lethe erasure certificate <id> -o file`)')
    .option('--url <vault base url>', 'trust the keys this vault lists (https:// unless the host is loopback)')
    .option('--public-key <key>', 'trust this Ed25519 public key, base64url (repeatable; `lethe certificate public-key`)', collect)
    .option('--public-key-file <path>', 'trust the keys in this file (`lethe certificate keys` output, or base64url keys)')
    .action(async (file: string, opts: VerifyOptions) => {
      if (!opts.url && !opts.publicKey?.length && opts.publicKeyFile === undefined) throw new ExitError(NO_TRUSTED_KEY, VERIFY_EXIT.input);
      let parsed: unknown;
      try {
        parsed = JSON.parse(await readFile(file, 'utf8'));
      } catch (e) {
        throw new ExitError(`cannot read a JSON certificate from ${file}: ${describeError(e).message}`, VERIFY_EXIT.input);
      }
      const trusted = await trustedKeys(opts);
      const result = verifyCertificate(parsed, trusted);
      const state =
        result.keyId === undefined
          ? undefined
          : trusted.find((k) => k.state !== undefined && certificateKeyId(fromBase64Url(k.publicKey)!) === result.keyId)?.state;
      out({ ...result, ...(state !== undefined ? { keyState: state } : {}) });
      if (!result.valid) throw new ExitError(`certificate does not verify: ${result.reason}`, VERIFY_EXIT.invalid);
    });
  certificate
    .command('public-key')
    .description('The current certificate-signing public key (LETHE_URL, or the local vault).')
    .action(async () => {
      if (viaService()) return printFromService('/v1/certificates/public-key');
      const [current] = await localKeys();
      const key: CurrentSigningKey = { algorithm: 'Ed25519', keyId: current!.keyId, publicKey: current!.publicKey };
      out(key);
    });
  certificate
    .command('keys')
    .description('Every certificate-signing public key, current and retired (LETHE_URL, or the local vault).')
    .action(async () => {
      if (viaService()) return printFromService('/v1/certificates/keys');
      const list: SigningKeyList = { keys: await localKeys() };
      out(list);
    });
  certificate
    .command('rotate-key')
    .description('A new certificate-signing key; the current one retires (admin).')
    .action(async () => {
      if (viaService()) {
        out(await serviceCall(serviceClient('admin').json('POST', '/v1/certificates/keys/rotate'), 1));
        return;
      }
      const rotation: SigningKeyRotation = await withApp((app) => app.certificateKeys.rotate('cli'));
      out(rotation);
    });
}

/** The signing keys of this configuration's keyring (the keyring and the root key: no database). */
async function localKeys() {
  const cfg = config();
  existingVault(cfg);
  const { loadRootKey } = await import('../keyprovider/root-key.js');
  const { LocalKeyringProvider } = await import('../keyprovider/local.js');
  const root = loadRootKey(cfg, (message) => process.stderr.write(`lethe: ${message}\n`));
  let provider: Awaited<ReturnType<typeof LocalKeyringProvider.open>>;
  try {
    // the provider owns the root key from here and zeroes it on close
    provider = await LocalKeyringProvider.open(cfg.keyringDir, root.key);
  } catch (e) {
    zeroize(root.key);
    throw e;
  }
  try {
    return await provider.listSigningKeys();
  } finally {
    await provider.close();
  }
}
