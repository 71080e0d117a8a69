/** What the internal routes share: a call's body, once its replica signature verifies (src/vault/replica-calls.ts), parsed as JSON. */
import type { Context } from 'hono';
import { LetheError } from '../../../errors.js';
import { REPLICA_CALL_HEADER } from '../../../vault/replica-calls.js';
import type { Services } from '../../services.js';

/** The verified call's JSON body; not_found on a replica that is not sharded, unauthorized without a valid signature. */
export async function verifiedBody(c: Context, calls: Services['replicaCalls'], path: string): Promise<unknown> {
  if (!calls) throw new LetheError('not_found', 'no route for this POST request path');
  const header = c.req.header(REPLICA_CALL_HEADER);
  calls.plausible(header);
  const body = new Uint8Array(await c.req.arrayBuffer());
  calls.verify(header, 'POST', path, body);
  try {
    return JSON.parse(new TextDecoder().decode(body));
  } catch {
    throw new LetheError('validation_failed', 'body: not JSON');
  } finally {
    body.fill(0);
  }
}
