/** Keys: PUT /v1/subjects/{subject}/key, POST .../key/lease, DELETE .../key/lease/{leaseId}, POST /v1/keys/validity. */
import { createRoute, type OpenAPIHono, z } from '@hono/zod-openapi';
import { zeroize } from '../../crypto/index.js';
import { encodeDek, MAX_VALIDITY_IDS } from '../../vault/keys.js';
import type { Services } from '../services.js';
import { type AuthEnv, authorize, type TokenStore } from '../auth.js';
import { authErrors, idParam, json, jsonBody, KeyIdSchema, problemResponse, security, SubjectParam } from '../schemas.js';

const KeyInfo = z
  .object({
    subject: z.string(),
    keyId: z.string(),
    state: z.enum(['active', 'fenced']),
    createdAt: z.string().openapi({ format: 'date-time' }),
  })
  .openapi('SubjectKey');

const LeaseSchema = z
  .object({
    keyId: z.string(),
    dek: z.string().openapi({ description: 'base64url (no padding) of the 32-byte data key' }),
    leaseId: z.string(),
    expiresAt: z.string().openapi({ format: 'date-time' }),
  })
  .openapi('KeyLease');

const ValidityRequest = z
  .object({ keyIds: z.array(KeyIdSchema).min(1).max(MAX_VALIDITY_IDS) })
  .openapi('KeyValidityRequest');

const ValidityResponse = z
  .object({ keys: z.record(z.string(), z.enum(['active', 'destruction_pending', 'destroyed', 'unknown'])) })
  .openapi('KeyValidity');

export function registerKeyRoutes(app: OpenAPIHono<AuthEnv>, services: Services, tokens: TokenStore): void {
  app.openapi(
    createRoute({
      method: 'put',
      path: '/v1/subjects/{subject}/key',
      tags: ['keys'],
      summary: 'Create the subject\'s data key, or return the live one',
      security,
      middleware: [authorize(tokens, 'writer')] as const,
      request: { params: SubjectParam },
      responses: {
        200: json(KeyInfo, 'The subject already had a live key'),
        201: json(KeyInfo, 'A new key was created'),
        409: problemResponse('erasure_in_progress: an erasure of the subject is open; no new key until it ends'),
        410: problemResponse('subject_erased: an erasure destroyed the subject\'s key; no new key until an admin reinstates it (POST /v1/subjects/{subject}/reinstate)'),
        ...authErrors,
      },
    }),
    async (c) => {
      const { subject } = c.req.valid('param');
      const info = await services.keys.ensureKey(subject, c.get('role'));
      return c.json(
        { subject, keyId: info.keyId, state: info.state, createdAt: info.createdAt.toISOString() },
        info.created ? 201 : 200,
      );
    },
  );

  app.openapi(
    createRoute({
      method: 'post',
      path: '/v1/subjects/{subject}/key/lease',
      tags: ['keys'],
      summary: 'Lease the subject\'s data key (created if needed)',
      security,
      middleware: [authorize(tokens, 'writer')] as const,
      request: { params: SubjectParam },
      responses: {
        200: json(LeaseSchema, 'The lease'),
        409: problemResponse('erasure_in_progress'),
        410: problemResponse('subject_erased: an erasure destroyed the subject\'s key; no lease until an admin reinstates it (POST /v1/subjects/{subject}/reinstate)'),
        ...authErrors,
      },
    }),
    async (c) => {
      const { subject } = c.req.valid('param');
      const lease = await services.keys.lease(subject, c.get('role'));
      let dek: string;
      try {
        dek = encodeDek(lease.dek);
      } finally {
        zeroize(lease.dek);
      }
      c.header('cache-control', 'no-store');
      return c.json({ keyId: lease.keyId, dek, leaseId: lease.leaseId, expiresAt: lease.expiresAt.toISOString() }, 200);
    },
  );

  app.openapi(
    createRoute({
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
      middleware: [authorize(tokens, 'writer')] as const,
      request: { params: SubjectParam.extend({ leaseId: idParam('lease', 'leaseId') }) },
      responses: {
        204: { description: 'Released (or released already, or expired)' },
        404: problemResponse('not_found: lethe handed out no such lease for this subject (within the last day)'),
        ...authErrors,
      },
    }),
    async (c) => {
      const { subject, leaseId } = c.req.valid('param');
      await services.keys.releaseLease(subject, leaseId, c.get('role'));
      return c.body(null, 204);
    },
  );

  app.openapi(
    createRoute({
      method: 'post',
      path: '/v1/keys/validity',
      tags: ['keys'],
      summary: 'Which of these keys are still valid (for backup jobs)',
      security,
      middleware: [authorize(tokens, 'backup')] as const,
      request: { body: jsonBody(ValidityRequest) },
      responses: { 200: json(ValidityResponse, 'State of each key id'), ...authErrors },
    }),
    async (c) => {
      const { keyIds } = c.req.valid('json');
      return c.json({ keys: await services.keys.validity(keyIds) }, 200);
    },
  );
}
