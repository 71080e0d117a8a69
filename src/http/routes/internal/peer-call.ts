/**
 * What the internal routes share: the replicas' signature (src/vault/replica-calls.ts),
 * checked before the body is read, and the body checked against it.
 */
import type { Context, MiddlewareHandler } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { LetheError } from '../../../errors.js';
import { REPLICA_CALL_HEADER } from '../../../vault/replica-calls.js';
import { problem } from '../../problem.js';
import type { Services } from '../../services.js';

/** The most a replica's call to another may carry (a probe part's fingerprints: a subject's records' vectors and shingles). */
export const PEER_BODY_LIMIT_BYTES = 64 * 1024 * 1024;

/** The body digest each verified call's header vouches for. */
const verified = new WeakMap<Request, Uint8Array>();

/**
 * For /internal/*: not found on a replica that is not sharded; unauthorized, before a
 * byte of the body is read, without a valid signature for this replica; then the body,
 * up to PEER_BODY_LIMIT_BYTES.
 */
export function peerCalls(services: Pick<Services, 'replicaCalls'>, self: string | undefined): MiddlewareHandler {
  const limited = bodyLimit({
    maxSize: PEER_BODY_LIMIT_BYTES,
    onError: (c) => problem(c, 'payload_too_large', `request bodies are limited to ${PEER_BODY_LIMIT_BYTES} bytes`),
  });
  return async (c, next) => {
    const calls = services.replicaCalls;
    if (!calls || !self) return problem(c, 'not_found', `no route for this ${c.req.method} request path`);
    verified.set(c.req.raw, calls.verifyHeader(c.req.header(REPLICA_CALL_HEADER), c.req.method, c.req.path, self));
    return limited(c, next);
  };
}

/** The verified call's JSON body (its digest checked against the header's). */
export async function verifiedBody(c: Context, calls: Services['replicaCalls']): Promise<unknown> {
  const digest = verified.get(c.req.raw);
  if (!calls || !digest) throw new LetheError('unauthorized', 'not a call from another replica: no valid signature');
  const body = new Uint8Array(await c.req.arrayBuffer());
  try {
    calls.verifyBody(digest, body);
    return JSON.parse(new TextDecoder().decode(body));
  } catch (e) {
    if (e instanceof SyntaxError) throw new LetheError('validation_failed', 'body: not JSON');
    throw e;
  } finally {
    body.fill(0);
  }
}
