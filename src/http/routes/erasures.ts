/**
 * Erasure: POST /v1/erasures, GET /v1/erasures/{id}, .../events (SSE), .../report
 * (HTML), .../redactions; GET /v1/certificates/public-key (no token: verifiers need it).
 */
import { createRoute, type OpenAPIHono, z } from '@hono/zod-openapi';
import { streamSSE } from 'hono/streaming';
import { MAX_PUBLIC_ATTRIBUTES, MAX_REDACTION_IDS } from '../../erasure/engine.js';
import { renderReport } from '../../erasure/report.js';
import { SUBJECT_ID_PATTERN } from '../../vault/subjects.js';
import type { Vault } from '../../vault/vault.js';
import { type AuthEnv, authorize, type TokenStore } from '../auth.js';
import { authErrors, json, jsonBody, problemResponse, security } from '../schemas.js';

const ErasureIdParam = z.object({
  erasureId: z.string().min(1).openapi({ param: { name: 'erasureId', in: 'path' }, example: 'ers_3q2-7wEXAMPLE0000000000' }),
});

const ErasureRequest = z
  .object({
    subject: z.string().regex(SUBJECT_ID_PATTERN, 'subject must be 1 to 200 characters of A-Z a-z 0-9 . _ : @ + -'),
    reason: z.string().max(2000).optional(),
    legalBasis: z.enum(['gdpr-art17', 'ccpa-1798.105', 'contract']).optional(),
    publicAttributes: z.array(z.string().min(1).max(1000)).max(MAX_PUBLIC_ATTRIBUTES).optional(),
    unlearning: z.object({ method: z.string().min(1).max(500), bound: z.number().finite().min(0) }).strict().optional(),
  })
  .strict()
  .openapi('ErasureRequest');

const Step = z.object({
  name: z.string(),
  status: z.enum(['pending', 'running', 'done', 'failed', 'skipped']),
  detail: z.string().optional(),
  startedAt: z.string().optional(),
  finishedAt: z.string().optional(),
});

const Residual = z.object({
  tier: z.string(),
  kind: z.string(),
  detail: z.string(),
  until: z.string().optional(),
  bound: z.union([z.number(), z.string()]),
});

const ErasureSchema = z
  .object({
    erasureId: z.string(),
    status: z.enum(['pending', 'running', 'completed', 'incomplete', 'failed']),
    class: z.enum(['A', 'B', 'C']).optional(),
    subjectHash: z.string(),
    legalBasis: z.string().optional(),
    createdAt: z.string(),
    finishedAt: z.string().optional(),
    steps: z.array(Step),
    residuals: z.array(Residual),
    probe: z.object({
      recovered: z.number(),
      threshold: z.number(),
      matches: z.array(z.object({ id: z.string(), tier: z.string(), score: z.number() })),
    }),
    certificate: z.object({ payload: z.record(z.string(), z.unknown()), signature: z.string(), publicKey: z.string(), algorithm: z.literal('Ed25519') }).optional(),
    certificateState: z.enum(['provisional', 'final']).optional(),
    graph: z.object({
      nodes: z.array(z.object({ id: z.string(), type: z.enum(['entry', 'artifact']), kind: z.string().optional(), erasedSubject: z.boolean(), outcome: z.string().optional() })),
      edges: z.array(z.object({ from: z.string(), to: z.string() })),
      truncated: z.boolean().optional(),
    }),
  })
  .openapi('Erasure');

const Accepted = z.object({ erasureId: z.string(), status: z.string() }).openapi('ErasureAccepted');

const TERMINAL = new Set(['completed', 'incomplete', 'failed']);

export function registerErasureRoutes(app: OpenAPIHono<AuthEnv>, vault: Vault, tokens: TokenStore): void {
  app.openapi(
    createRoute({
      method: 'post',
      path: '/v1/erasures',
      tags: ['erasure'],
      summary: 'Request the erasure of a subject (idempotent while it is open)',
      security,
      middleware: [authorize(tokens, 'eraser')] as const,
      request: { body: jsonBody(ErasureRequest) },
      responses: {
        202: json(Accepted, 'Accepted: the erasure runs in the background'),
        200: json(Accepted, 'The subject\'s erasure is already open: the same erasure'),
        404: problemResponse('not_found: lethe has never seen the subject'),
        ...authErrors,
      },
    }),
    async (c) => {
      const body = c.req.valid('json');
      const result = await vault.erasures.request(body, c.get('role'));
      return c.json({ erasureId: result.erasureId, status: result.status }, result.created ? 202 : 200);
    },
  );

  app.openapi(
    createRoute({
      method: 'get',
      path: '/v1/erasures/{erasureId}',
      tags: ['erasure'],
      summary: 'Status, class, steps, residuals, probe and certificate of an erasure',
      security,
      middleware: [authorize(tokens, 'eraser')] as const,
      request: { params: ErasureIdParam },
      responses: { 200: json(ErasureSchema, 'The erasure'), 404: problemResponse('not_found'), ...authErrors },
    }),
    async (c) => c.json((await vault.erasures.get(c.req.valid('param').erasureId)) as z.infer<typeof ErasureSchema>, 200),
  );

  app.openapi(
    createRoute({
      method: 'get',
      path: '/v1/erasures/{erasureId}/events',
      tags: ['erasure'],
      summary: 'Server-sent events of step progress, ending when the erasure finishes',
      description: 'Each transition is one `step` event (JSON: id, fromStep, toStep, status, at, detail) with its id as the event id; `Last-Event-ID` resumes. A final `end` event carries the status.',
      security,
      middleware: [authorize(tokens, 'eraser')] as const,
      request: { params: ErasureIdParam },
      responses: { 200: { description: 'text/event-stream', content: { 'text/event-stream': { schema: z.string() } } }, 404: problemResponse('not_found'), ...authErrors },
    }),
    async (c) => {
      const { erasureId } = c.req.valid('param');
      const lastId = Number(c.req.header('last-event-id') ?? 0);
      let after = Number.isInteger(lastId) && lastId > 0 ? lastId : 0;
      await vault.erasures.status(erasureId); // 404 before the stream starts
      return streamSSE(c, async (stream) => {
        let wake: (() => void) | undefined;
        const off = vault.erasures.onTransition(() => wake?.());
        stream.onAbort(() => wake?.());
        try {
          while (!stream.aborted) {
            // status first: a finished erasure's last transition commits with its status, so it is read below
            const status = await vault.erasures.status(erasureId);
            for (const t of await vault.erasures.transitions(erasureId, after)) {
              await stream.writeSSE({ event: 'step', id: String(t.id), data: JSON.stringify(t) });
              after = t.id;
            }
            if (TERMINAL.has(status)) {
              const view = await vault.erasures.get(erasureId);
              await stream.writeSSE({ event: 'end', data: JSON.stringify({ erasureId, status: view.status, class: view.class ?? null, recovered: view.probe.recovered }) });
              return;
            }
            // another replica's progress is seen by polling; our own wakes us at once
            await new Promise<void>((resolve) => {
              const timer = setTimeout(resolve, 500);
              wake = () => {
                clearTimeout(timer);
                resolve();
              };
            });
          }
        } finally {
          off();
        }
      });
    },
  );

  app.openapi(
    createRoute({
      method: 'get',
      path: '/v1/erasures/{erasureId}/report',
      tags: ['erasure'],
      summary: 'The report a data-protection officer reads (self-contained HTML with the provenance graph)',
      security,
      middleware: [authorize(tokens, 'eraser')] as const,
      request: { params: ErasureIdParam },
      responses: { 200: { description: 'text/html', content: { 'text/html': { schema: z.string() } } }, 404: problemResponse('not_found'), ...authErrors },
    }),
    async (c) => {
      const view = await vault.erasures.get(c.req.valid('param').erasureId);
      c.header('content-security-policy', "default-src 'none'; style-src 'unsafe-inline'; img-src data:");
      c.header('cache-control', 'no-store');
      return c.html(renderReport(view)) as never;
    },
  );

  app.openapi(
    createRoute({
      method: 'post',
      path: '/v1/erasures/{erasureId}/redactions',
      tags: ['erasure'],
      summary: 'Redact the erased subject\'s content from other subjects\' records, then probe again',
      description: 'Re-keys each named entry\'s subject log without it (the old key is destroyed), regenerates what was derived from it, and reruns propagate, probe and certify.',
      security,
      middleware: [authorize(tokens, 'eraser')] as const,
      request: { params: ErasureIdParam, body: jsonBody(z.object({ ids: z.array(z.string().min(1).max(100)).min(1).max(MAX_REDACTION_IDS) }).strict()) },
      responses: {
        202: json(Accepted, 'Accepted: the redaction runs in the background'),
        404: problemResponse('not_found'),
        409: problemResponse('conflict: the erasure is still running, failed, or its fingerprints are gone'),
        ...authErrors,
        400: problemResponse('validation_failed: malformed body, or an id that is not another subject\'s readable entry'),
      },
    }),
    async (c) => {
      const { erasureId } = c.req.valid('param');
      const result = await vault.erasures.redact(erasureId, c.req.valid('json').ids, c.get('role'));
      return c.json(result, 202);
    },
  );

  app.openapi(
    createRoute({
      method: 'get',
      path: '/v1/certificates/public-key',
      tags: ['erasure'],
      summary: 'The Ed25519 public key that signs erasure certificates (no token needed)',
      responses: { 200: json(z.object({ algorithm: z.literal('Ed25519'), publicKey: z.string() }).openapi('CertificateKey'), 'The key, base64url') },
    }),
    (c) => c.json({ algorithm: 'Ed25519' as const, publicKey: vault.erasures.publicKey }, 200),
  );
}

