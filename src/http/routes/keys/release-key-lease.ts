/** DELETE /v1/subjects/{subject}/key/lease/{leaseId} (releaseKeyLease): release a lease: the writer is done with the data key. */
import { createRoute, type OpenAPIHono } from '@hono/zod-openapi';
import type { Services } from '../../services.js';
import { type AuthEnv, authorize, type TokenStore } from '../../auth.js';
import { authErrors, idParam, problemResponse, security, SubjectParam } from '../../schemas.js';

/** The services this route calls. */
export interface Uses {
  readonly keys: Pick<Services['keys'], 'releaseLease'>;
}

export const route = createRoute({
  operationId: 'releaseKeyLease',
  method: 'delete',
  path: '/v1/subjects/{subject}/key/lease/{leaseId}',
  tags: ['keys'],
  summary: 'Release a lease: the writer is done with the data key',
  description:
    'The writer has zeroed the DEK it leased and will not use it again. Recorded in the audit log; an erasure of the subject waiting for its ' +
    'leases (drain_leases) waits no longer for this one — and ends as soon as the last outstanding lease is released or expires. Works for a ' +
    'lease of a key destroyed meanwhile (an erasure in progress). Idempotent: releasing again, or releasing an expired lease, answers 204 too. ' +
    'A lease is known for a day after it was handed out.',
  security,
  request: { params: SubjectParam.extend({ leaseId: idParam('lease', 'leaseId') }) },
  responses: {
    204: { description: 'Released (or released already, or expired)' },
    404: problemResponse('not_found: lethe handed out no such lease for this subject (within the last day)'),
    ...authErrors,
  },
});

export function register(app: OpenAPIHono<AuthEnv>, services: Uses, tokens: TokenStore): void {
  app.openapi({ ...route, middleware: [authorize(tokens, 'writer')] as const }, async (c) => {
    const { subject, leaseId } = c.req.valid('param');
    await services.keys.releaseLease(subject, leaseId, c.get('role'));
    return c.body(null, 204);
  });
}
