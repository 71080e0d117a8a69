/** The caller of a route: its role, and the principal behind its token (never the token). */
import type { Context } from 'hono';
import type { Actor } from '../erasure/request.js';
import type { AuthEnv, TokenStore } from './auth.js';
import type { Services } from './services.js';

export function actorOf(services: { readonly principals: Pick<Services['principals'], 'name'> }, tokens: TokenStore): (c: Context<AuthEnv>) => Actor {
  return (c) => ({ role: c.get('role'), principal: services.principals.name(tokens.digestOf(c.get('token'))) });
}
