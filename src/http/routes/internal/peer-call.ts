/**
 * What the internal routes share: the replicas' signature (src/vault/replica-calls.ts),
 * checked before the body is read, the body checked against it, and the answer signed
 * for the call it answers.
 */
import type { Context, MiddlewareHandler } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { LetheError } from '../../../errors.js';
import { REPLICA_ANSWER_HEADER, REPLICA_CALL_HEADER } from '../../../vault/replica-calls.js';
import { problem } from '../../problem.js';
import type { Services } from '../../services.js';

/** The most a replica's call to another may carry (a probe part's fingerprints: a subject's records' vectors and shingles). */
export const PEER_BODY_LIMIT_BYTES = 64 * 1024 * 1024;

/** Each verified call's signature header and the body digest it vouches for (by its context: the body limit may replace the request). */
const verified = new WeakMap<Context, { readonly header: string; readonly digest: Uint8Array }>();

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
    const header = c.req.header(REPLICA_CALL_HEADER) ?? '';
    verified.set(c, { header, digest: calls.verifyHeader(header, c.req.method, c.req.path, self) });
    return limited(c, next);
  };
}

/** The verified call's JSON body (its digest checked against the header's). */
export async function verifiedBody(c: Context, calls: Services['replicaCalls']): Promise<unknown> {
  const call = verified.get(c);
  if (!calls || !call) throw new LetheError('unauthorized', 'not a call from another replica: no valid signature');
  const body = new Uint8Array(await c.req.arrayBuffer());
  try {
    calls.verifyBody(call.digest, body);
    return JSON.parse(new TextDecoder().decode(body));
  } catch (e) {
    if (e instanceof SyntaxError) throw new LetheError('validation_failed', 'body: not JSON');
    throw e;
  } finally {
    body.fill(0);
  }
}

/** The answer as JSON, signed for the call it answers (the caller checks it came from the replica it called). */
export function signedAnswer(c: Context, calls: Services['replicaCalls'], self: string | undefined, value: unknown): Response {
  const call = verified.get(c);
  if (!calls || !call || !self) throw new LetheError('unauthorized', 'not a call from another replica: no valid signature');
  const body = new TextEncoder().encode(JSON.stringify(value));
  return new Response(body, {
    status: 200,
    headers: { 'content-type': 'application/json', 'cache-control': 'no-store', [REPLICA_ANSWER_HEADER]: calls.signAnswer(call.header, self, body) },
  });
}
