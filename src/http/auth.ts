/**
 * Bearer-token roles. Tokens come from LETHE_TOKENS (role=token pairs) or, in
 * production, LETHE_TOKENS_FILE holding only SHA-256 digests (role=sha256:HEX per
 * line). Presented tokens are hashed and compared against every known digest in
 * constant time, so neither the match position nor a prefix leaks through timing.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { IncomingMessage } from 'node:http';
import type { Context, MiddlewareHandler } from 'hono';
import { ROLES, type Role } from '../config/index.js';
import { LetheError } from '../errors.js';
import { problem } from './problem.js';

export interface TokenEntry {
  readonly role: Role;
  readonly digest: Buffer;
}

export function tokenDigest(token: string): Buffer {
  return createHash('sha256').update(token, 'utf8').digest();
}

export class TokenStore {
  readonly #entries: readonly TokenEntry[];

  constructor(entries: readonly TokenEntry[]) {
    this.#entries = entries;
  }

  static fromPairs(pairs: ReadonlyArray<{ role: Role; token: string }>): TokenStore {
    return new TokenStore(pairs.map((p) => ({ role: p.role, digest: tokenDigest(p.token) })));
  }

  /** Parses a hashed-token file: `role=sha256:<64 hex>` per line, `#` comments. */
  static fromFile(file: string): TokenStore {
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (cause) {
      throw new LetheError('validation_failed', `LETHE_TOKENS_FILE cannot be read: ${(cause as Error).message}`);
    }
    const entries: TokenEntry[] = [];
    text.split('\n').forEach((raw, i) => {
      const line = raw.trim();
      if (line === '' || line.startsWith('#')) return;
      const m = /^([a-z]+)=sha256:([0-9a-f]{64})$/.exec(line);
      if (!m || !(ROLES as readonly string[]).includes(m[1]!)) {
        throw new LetheError('validation_failed', `LETHE_TOKENS_FILE line ${i + 1}: expected role=sha256:<64 hex digits> with role one of ${ROLES.join(', ')}`);
      }
      entries.push({ role: m[1] as Role, digest: Buffer.from(m[2]!, 'hex') });
    });
    return new TokenStore(entries);
  }

  get size(): number {
    return this.#entries.length;
  }

  /** The SHA-256 digest of the configured token at `index` (TokenStore.identify's `token`): what a principal's name is derived from. */
  digestOf(index: number): Buffer {
    const entry = this.#entries[index];
    if (!entry) throw new LetheError('internal', 'no configured token at that position');
    return entry.digest;
  }

  /** The role of a presented token, or undefined. Constant time in the token's content. */
  roleOf(token: string): Role | undefined {
    return this.identify(token)?.role;
  }

  /**
   * The role of a presented token and which configured token it is (`token`: its
   * position in the store, a name that is no function of the token; kept in memory
   * only, e.g. to count a token's open streams). Constant time in the token's content.
   */
  identify(token: string): { role: Role; token: number } | undefined {
    const digest = tokenDigest(token);
    let found: { role: Role; token: number } | undefined;
    this.#entries.forEach((e, i) => {
      // no early exit: every entry is compared
      if (timingSafeEqual(digest, e.digest) && found === undefined) found = { role: e.role, token: i };
    });
    return found;
  }
}

/** `role`: the caller's role; `token`: which configured token it presented (TokenStore.identify). */
export type AuthEnv = { Variables: { role: Role; token: number }; Bindings: { incoming?: IncomingMessage } };

/**
 * The Authorization header. On the Node server it is read from the raw request:
 * going through the Fetch Request would make the adapter build one (with an
 * AbortController and a body stream) for every call.
 */
function authorizationHeader(c: Context<AuthEnv>): string | undefined {
  const raw = c.env?.incoming?.headers.authorization;
  return typeof raw === 'string' ? raw : c.req.header('authorization');
}

/** The bearer token the request presents, if any (a route behind `authorize` knows it is a known one). */
export function presentedToken(c: Context<AuthEnv>): string | undefined {
  return /^Bearer +([\x21-\x7e]+)$/i.exec(authorizationHeader(c) ?? '')?.[1];
}

/** The roles allowed on a route; admin may do everything. */
export function authorize(tokens: TokenStore, ...allowed: Role[]): MiddlewareHandler<AuthEnv> {
  const roles = new Set<Role>([...allowed, 'admin']);
  return async (c, next) => {
    const presented = presentedToken(c);
    const caller = presented !== undefined ? tokens.identify(presented) : undefined;
    if (!caller) {
      return problem(c, 'unauthorized', 'a valid bearer token is required'); // with its WWW-Authenticate challenge
    }
    const { role } = caller;
    if (!roles.has(role)) return problem(c, 'forbidden', `the ${role} role may not call this endpoint`);
    c.set('role', role);
    c.set('token', caller.token);
    await next();
  };
}
