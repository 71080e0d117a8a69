/**
 * What the parts of the CLI share: printing JSON, the error that ends a command with
 * an exit code, the configuration, opening the app (loaded on first use), and calling
 * the running service as a role (its failures in the CLI's words and exit codes).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { type Config, loadConfig, type Role, tokenPairs } from '../config/index.js';
import { isLoopbackHost } from '../config/tls.js';
import { isLetheError } from '../errors.js';
import { createLogger, type Logger } from '../observability/logger.js';
import type { App } from '../app/open.js';
import { normalizeBaseUrl, ServiceClient, ServiceError, type TlsOptions, UnreachableError } from '../client/http.js';

// The app (the vault, the services, the database client) loads on first use: the commands
// that are HTTP clients of a running service (backup run, erase, erasure …) start without it.
export const openApp: typeof import('../app/open.js').openApp = async (...args) => (await import('../app/open.js')).openApp(...args);

export function out(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

/** Ends the command: `lethe: <message>` on stderr and this exit code. */
export class ExitError extends Error {
  constructor(
    message: string,
    readonly exitCode: number,
  ) {
    super(message);
  }
}

/** This process's configuration; a variable that looks like lethe's and is not is said on stderr. */
export function config(): Config {
  const cfg = loadConfig(process.env);
  for (const warning of cfg.warnings) process.stderr.write(`lethe: warning: ${warning}\n`);
  return cfg;
}

/** Which folder a local command's vault is in, and which setting chose it (for its messages). */
function vaultFolder(cfg: Config): string {
  if (process.env.LETHE_KEYRING_DIR?.trim()) return `${cfg.keyringDir} (LETHE_KEYRING_DIR)`;
  if (process.env.LETHE_DATA_DIR?.trim()) return `${cfg.dataDir} (LETHE_DATA_DIR)`;
  return `${cfg.dataDir} (the default: LETHE_DATA_DIR is unset)`;
}

/**
 * A local command opens an existing vault, never creates one (only `serve` and `migrate`
 * do): its keyring folder must exist and hold something. Exit 2 naming the vault it would have used.
 */
export function existingVault(cfg: Config): void {
  // an empty folder (a volume mounted, a start that failed) is no vault either
  let entries: string[] = [];
  try {
    entries = readdirSync(cfg.keyringDir);
  } catch {
    // missing, or not a folder
  }
  if (entries.length > 0) return;
  throw new ExitError(
    `no vault at ${vaultFolder(cfg)}: nothing was created. Point LETHE_DATA_DIR (or --data-dir) at a vault's folder, set LETHE_URL to ask a running service, or create one with \`lethe migrate\``,
    2,
  );
}

/** Whether a command that can ask a running service does (LETHE_URL is set) rather than open a local vault. */
export function viaService(): boolean {
  return Boolean(process.env.LETHE_URL?.trim());
}

/** Opens the app (no listening, no workers), runs `fn`, closes it; the vault must exist unless `create` (migrate). */
export async function withApp<T>(fn: (app: App, logger: Logger) => Promise<T>, options: { create?: boolean } = {}): Promise<T> {
  const cfg = config();
  if (!options.create) existingVault(cfg);
  const logger = createLogger(cfg.logLevel === 'info' ? 'warn' : cfg.logLevel);
  const app = await openApp(cfg, { logger, listen: false });
  try {
    return await fn(app, logger);
  } finally {
    await app.close();
  }
}

/** A PEM file named by `variable`, read now; exit 2 naming the variable when it cannot be read (never its contents). */
function pemFile(variable: string): Buffer | undefined {
  const file = process.env[variable]?.trim();
  if (!file) return undefined;
  try {
    return readFileSync(file);
  } catch (e) {
    throw new ExitError(`${variable}: cannot read ${file} (${(e as NodeJS.ErrnoException).code ?? 'error'})`, 2);
  }
}

/**
 * How the client commands verify an HTTPS service: LETHE_CA_FILE (the CA its certificate
 * must chain to, instead of the system's roots) and LETHE_CLIENT_CERT / LETHE_CLIENT_KEY
 * (a client certificate, for a service that requires one). Undefined when none is set.
 */
export function clientTls(): TlsOptions | undefined {
  const ca = pemFile('LETHE_CA_FILE');
  const cert = pemFile('LETHE_CLIENT_CERT');
  const key = pemFile('LETHE_CLIENT_KEY');
  if ((cert === undefined) !== (key === undefined)) throw new ExitError('set both LETHE_CLIENT_CERT and LETHE_CLIENT_KEY, or neither', 2);
  if (ca === undefined && cert === undefined) return undefined;
  return { ...(ca ? { ca } : {}), ...(cert && key ? { cert, key } : {}) };
}

/**
 * The role's token from LETHE_TOKENS, the service's own variable (`role=token,…`; never from
 * the command line, where `ps` shows it); exit 2 naming the variable when it has none.
 */
export function roleToken(role: Role): string {
  const variable = 'LETHE_TOKENS';
  const parsed = tokenPairs.safeParse(process.env[variable]?.trim() || undefined);
  if (!parsed.success) throw new ExitError(`${variable}: ${parsed.error.issues[0]?.message ?? 'invalid'}`, 2);
  const token = parsed.data.find((p) => p.role === role)?.token;
  if (!token) throw new ExitError(`${variable} has no ${role} token: add ${role}=<a token of the ${role} role> to it (role=token pairs, comma-separated)`, 2);
  return token;
}

/**
 * The running service as a role: LETHE_URL (default http://127.0.0.1:8787) and the
 * role's token (roleToken), verified with `clientTls()`; exit 2 when any is unusable.
 */
export function serviceClient(role: Role): ServiceClient {
  const base = normalizeBaseUrl(process.env.LETHE_URL ?? 'http://127.0.0.1:8787');
  const variable = 'LETHE_TOKENS';
  const token = roleToken(role);
  if (!/^https?:\/\/\S+$/.test(base)) throw new ExitError('LETHE_URL must be an http(s):// URL', 2);
  checkTokenTransport(base);
  try {
    const tls = clientTls();
    return new ServiceClient({ baseUrl: base, token, timeoutMs: 3_600_000, ...(tls ? { tls } : {}) });
  } catch (e) {
    if (isLetheError(e, 'validation_failed'))
      throw new ExitError(`${e.message.startsWith('tls:') ? 'LETHE_CA_FILE, LETHE_CLIENT_CERT' : variable}: ${e.message}`, 2);
    throw e;
  }
}

/**
 * A token goes to LETHE_URL over https://, or plain http:// to a loopback host only (anyone on
 * the path would read it), and never with credentials in the URL (they would be echoed in messages).
 */
function checkTokenTransport(base: string): void {
  let url: URL;
  try {
    url = new URL(base);
  } catch {
    throw new ExitError('LETHE_URL must be an http(s):// URL', 2);
  }
  if (url.username || url.password) throw new ExitError('LETHE_URL must not carry credentials (user:password@): the token is the credential', 2);
  if (url.protocol === 'http:' && !isLoopbackHost(url.hostname))
    throw new ExitError(`LETHE_URL ${url.origin}: a token is sent over https:// only, or plain http:// to a loopback host (127.0.0.0/8, ::1, localhost)`, 2);
}

/** What the CLI says when the service did not answer. */
export function unreachable(e: UnreachableError): string {
  return `the service at ${e.baseUrl} ${e.reason.startsWith('its TLS certificate') ? 'was refused' : 'did not answer'}: ${e.reason}`;
}

/** The client's failures in the CLI's words, ending the command with `exit`: an error answer or no answer. */
export function serviceExit(e: unknown, exit: number): unknown {
  if (e instanceof ServiceError)
    return new ExitError(`the service answered ${e.status}${e.problem?.code ? ` ${e.problem.code}` : ''}: ${e.problem?.detail ?? 'no detail'}`, exit);
  if (e instanceof UnreachableError) return new ExitError(unreachable(e), exit);
  return e;
}

/** A call to the service whose failure ends the command with `exit`. */
export async function serviceCall<T>(call: Promise<T>, exit: number): Promise<T> {
  try {
    return await call;
  } catch (e) {
    throw serviceExit(e, exit);
  }
}
