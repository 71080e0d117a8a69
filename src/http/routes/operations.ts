/** What every area's index does with its operation files: register them in order, and name the services they call together. */
import type { OpenAPIHono } from '@hono/zod-openapi';
import type { AuthEnv, TokenStore } from '../auth.js';

/** A route file: it registers its one operation on the app, with the services it declares. */
export interface Operation {
  // biome-ignore lint/suspicious/noExplicitAny: each operation declares its own narrow services; the area's UsesOf intersects them
  register(app: OpenAPIHono<AuthEnv>, services: any, tokens: TokenStore): void;
}

type Intersection<U> = (U extends unknown ? (x: U) => void : never) extends (x: infer I) => void ? I : never;

/** The services a list of operations calls, together: the intersection of their `Uses`. */
export type UsesOf<Ops extends readonly Operation[]> = Intersection<Parameters<Ops[number]['register']>[1]>;

/** Registers `operations` in order (the OpenAPI document lists them so). */
export function registerAll<Ops extends readonly Operation[]>(app: OpenAPIHono<AuthEnv>, services: UsesOf<Ops>, tokens: TokenStore, operations: Ops): void {
  for (const operation of operations) operation.register(app, services, tokens);
}
