/**
 * The `Lethe` facade's calls: one `ServiceClient` (http.ts, the one HTTP caller) per
 * role, made on first use, each call answered within the facade's timeout; and the
 * cursor pagination every list shares (`limit`, `cursor` → `nextCursor`).
 */
import { parseTokenPairs } from '../config/token-pairs.js';
import { LetheError } from '../errors.js';
import { type CallOptions, type Fetch, ServiceClient, type TlsOptions } from './http.js';

/** The service's roles; `admin` may call every route. */
export type Role = 'writer' | 'eraser' | 'approver' | 'backup' | 'admin';

export interface RoleTokens {
  readonly writer?: string;
  readonly eraser?: string;
  /** Approves dismissals: a second principal, so another token than the eraser's. */
  readonly approver?: string;
  readonly backup?: string;
  readonly admin?: string;
}

/**
 * The tokens of LETHE_TOKENS (`role=token,…`, the variable the service reads too), for
 * `new Lethe({ baseUrl, tokens: tokensFromEnv() })`; a LetheError naming the variable when it is malformed.
 */
export function tokensFromEnv(value: string | undefined = process.env.LETHE_TOKENS): RoleTokens {
  const parsed = parseTokenPairs(value ?? '');
  if ('problem' in parsed) throw new LetheError('validation_failed', `LETHE_TOKENS: ${parsed.problem}`);
  return Object.fromEntries(parsed.pairs.map((p) => [p.role, p.token]));
}

/** Calls the service as a role: `tokens[role]`, else `token`, else `tokens.admin`. */
export class RoleCalls {
  readonly baseUrl: string;
  readonly #baseUrlOption: string;
  readonly #clients = new Map<Role, ServiceClient>();
  readonly #token: string | undefined;
  readonly #tokens: RoleTokens;
  readonly #timeoutMs: number;
  /** The facade's TLS options, handed to every role's client and to writers built from it. */
  readonly tls: TlsOptions | undefined;
  readonly #fetchOption: Fetch | undefined;

  constructor(options: {
    baseUrl: string;
    token?: string | undefined;
    tokens?: RoleTokens | undefined;
    timeoutMs?: number | undefined;
    tls?: TlsOptions | undefined;
    fetch?: Fetch | undefined;
  }) {
    this.#token = options.token;
    this.#tokens = options.tokens ?? {};
    if (this.#token === undefined && Object.values(this.#tokens).every((t) => t === undefined)) {
      throw new LetheError('validation_failed', 'give a token (used for every role) or tokens per role (writer, eraser, approver, backup, admin)');
    }
    if (!/^https?:\/\/\S+$/.test(options.baseUrl)) throw new LetheError('validation_failed', 'baseUrl must be an http(s):// URL of a lethe service');
    this.#timeoutMs = options.timeoutMs ?? 30_000;
    this.#baseUrlOption = options.baseUrl;
    this.tls = options.tls;
    this.#fetchOption = options.fetch;
    // checked now: a bad base URL or token is refused before any call (ServiceClient redacts the token from any message)
    this.baseUrl = this.client(this.#anyRole()).baseUrl;
  }

  /** The token a role's calls carry (what a LetheWriter built from this facade is handed). */
  tokenFor(role: Role): string {
    const token = this.#tokens[role] ?? this.#token ?? this.#tokens.admin;
    if (token === undefined) throw new LetheError('validation_failed', `no token for the ${role} role: give tokens.${role}, token, or tokens.admin`);
    return token;
  }

  client(role: Role): ServiceClient {
    let client = this.#clients.get(role);
    if (!client) {
      // no client-wide timeout: event streams last as long as their erasure; each call below has one
      client = new ServiceClient({
        baseUrl: this.#baseUrlOption,
        token: this.tokenFor(role),
        ...(this.tls ? { tls: this.tls } : {}),
        ...(this.#fetchOption ? { fetch: this.#fetchOption } : {}),
      });
      this.#clients.set(role, client);
    }
    return client;
  }

  /** Any role this facade has a token for (for routes that need none). */
  anyClient(): ServiceClient {
    return this.client(this.#anyRole());
  }

  /** The JSON answer of a call, within the facade's timeout unless the call names its own. */
  json<T>(role: Role, method: string, path: string, options: CallOptions = {}): Promise<T> {
    return this.client(role).json<T>(method, path, { timeoutMs: this.#timeoutMs, ...options });
  }

  /** The answer of a call (2xx), within the facade's timeout unless the call names its own. */
  request(role: Role, method: string, path: string, options: CallOptions = {}): Promise<Response> {
    return this.client(role).request(method, path, { timeoutMs: this.#timeoutMs, ...options });
  }

  /** A DELETE whose answer has no body to read (204). */
  delete(role: Role, path: string, options: CallOptions = {}): Promise<void> {
    return this.client(role).delete(path, { timeoutMs: this.#timeoutMs, ...options });
  }

  #anyRole(): Role {
    for (const role of ['writer', 'eraser', 'approver', 'backup', 'admin'] as const)
      if (this.#tokens[role] !== undefined || this.#token !== undefined) return role;
    return 'admin';
  }
}

/** One page of a list: the items under the list's own key, and the cursor of the next page (null: the last). */
export interface PageOptions {
  /** Items per page, 1–1000 (the service's default: 100). */
  readonly limit?: number;
  /** The `nextCursor` of the previous page. */
  readonly cursor?: string;
}

/** `?limit=…&cursor=…&…` of the options that are set ('' when none). */
export function query(params: Readonly<Record<string, string | number | undefined>>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined) q.set(k, String(v));
  const s = q.toString();
  return s === '' ? '' : `?${s}`;
}

/** Page options of a call that follows every page. */
export type ListOptions = Omit<PageOptions, 'cursor'>;

/** `options` with the cursor of the page to fetch. */
export const withCursor = <O extends object>(options: O, cursor: string | undefined): O & { cursor?: string } => ({
  ...options,
  ...(cursor !== undefined ? { cursor } : {}),
});

/**
 * Every page of a list, following `nextCursor` until it is null (or absent: a service
 * without pagination answers everything at once).
 */
export async function* followPages<P extends { readonly nextCursor?: string | null }>(
  fetchPage: (cursor: string | undefined) => Promise<P>,
  first?: string,
): AsyncGenerator<P> {
  let cursor = first;
  for (;;) {
    const page = await fetchPage(cursor);
    yield page;
    const next = page.nextCursor ?? null;
    if (next === null) return;
    if (next === cursor) throw new LetheError('internal', 'the service answered the cursor it was given as the next one');
    cursor = next;
  }
}

/** A path segment: encoded, so that no id or subject can reach another route. */
export const seg = (value: string): string => encodeURIComponent(value);
