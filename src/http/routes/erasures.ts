/**
 * Erasure: POST /v1/erasures, GET /v1/erasures/{id}, .../events (SSE), .../report
 * (HTML), .../certificate (the signed document alone), .../redactions, .../dismissals.
 * The signing keys' routes are in certificates.ts.
 */
import { createRoute, type OpenAPIHono, z } from '@hono/zod-openapi';
import { streamSSE } from 'hono/streaming';
import { TERMINAL_STATUSES } from '../../erasure/machine.js';
import { renderReport } from '../../erasure/report/index.js';
import { DismissalRequestSchema, ErasureRequestSchema, RedactionRequestSchema } from '../../erasure/request.js';
import { CertificateViewSchema, ErasureAcceptedSchema, ErasureViewSchema } from '../../erasure/view.js';
import { type AuthEnv, authorize, type TokenStore } from '../auth.js';
import { authErrors, json, jsonBody, problemResponse, security } from '../schemas.js';
import type { Services } from '../services.js';

const ErasureIdParam = z.object({
  erasureId: z.string().min(1).openapi({ param: { name: 'erasureId', in: 'path' }, example: 'ers_3q2-7wEXAMPLE0000000000' }),
});

const ErasureRequest = ErasureRequestSchema.meta({ id: 'ErasureRequest' });
const ErasureSchema = ErasureViewSchema.meta({ id: 'Erasure' });
const Accepted = ErasureAcceptedSchema.meta({ id: 'ErasureAccepted' });
const CertificateSchema = CertificateViewSchema.meta({
  id: 'ErasureCertificate',
  description:
    'Ed25519 over the canonical JSON of `payload`; `payload.signingKeyId` names the signing key. Check it against the keys of GET /v1/certificates/keys (`lethe certificate verify --url`), never against the `publicKey` it carries.',
});

export function registerErasureRoutes(app: OpenAPIHono<AuthEnv>, services: Services, tokens: TokenStore): void {
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
      const result = await services.erasures.request(body, c.get('role'));
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
    async (c) => c.json(await services.erasures.get(c.req.valid('param').erasureId), 200),
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
      await services.erasures.status(erasureId); // 404 before the stream starts
      return streamSSE(c, async (stream) => {
        let wake: (() => void) | undefined;
        const off = services.erasures.onTransition(() => wake?.());
        stream.onAbort(() => wake?.());
        try {
          while (!stream.aborted) {
            // status first: a finished erasure's last transition commits with its status, so it is read below
            const status = await services.erasures.status(erasureId);
            for (const t of await services.erasures.transitions(erasureId, after)) {
              await stream.writeSSE({ event: 'step', id: String(t.id), data: JSON.stringify(t) });
              after = t.id;
            }
            if (TERMINAL_STATUSES.includes(status)) {
              const view = await services.erasures.get(erasureId);
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
      const view = await services.erasures.get(c.req.valid('param').erasureId);
      c.header('content-security-policy', "default-src 'none'; style-src 'unsafe-inline'; img-src data:");
      c.header('cache-control', 'no-store');
      return c.html(renderReport(view)) as never;
    },
  );

  app.openapi(
    createRoute({
      method: 'get',
      path: '/v1/erasures/{erasureId}/certificate',
      tags: ['erasure'],
      summary: 'The erasure\'s signed certificate alone (JSON), as `lethe certificate verify` reads it',
      security,
      middleware: [authorize(tokens, 'eraser')] as const,
      request: { params: ErasureIdParam },
      responses: {
        200: json(CertificateSchema, 'The certificate: { payload, signature, publicKey, algorithm }'),
        404: problemResponse('not_found: no such erasure'),
        409: problemResponse('conflict: the erasure has no certificate yet (still running, or failed)'),
        ...authErrors,
      },
    }),
    async (c) => {
      const certificate = await services.erasures.certificate(c.req.valid('param').erasureId);
      c.header('cache-control', 'no-store');
      return c.json(certificate, 200);
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
      request: { params: ErasureIdParam, body: jsonBody(RedactionRequestSchema.meta({ id: 'RedactionRequest' })) },
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
      const result = await services.erasures.redact(erasureId, c.req.valid('json').ids, c.get('role'));
      return c.json(result, 202);
    },
  );

  app.openapi(
    createRoute({
      method: 'post',
      path: '/v1/erasures/{erasureId}/dismissals',
      tags: ['erasure'],
      summary: 'Rule that records the probe named do not carry the erased subject\'s content, then probe again',
      description:
        'A stated human judgement: each ruling (record id, role, time, reason) is signed into the certificate and shown in the report. The probe is re-run without the dismissed records, then the erasure is certified again.',
      security,
      middleware: [authorize(tokens, 'eraser')] as const,
      request: { params: ErasureIdParam, body: jsonBody(DismissalRequestSchema.meta({ id: 'DismissalRequest' })) },
      responses: {
        202: json(Accepted, 'Accepted: the probe runs again in the background'),
        404: problemResponse('not_found'),
        409: problemResponse('conflict: the erasure is running or failed, its fingerprints are gone, or a record was not named by its probe or is the erased subject\'s own'),
        ...authErrors,
        400: problemResponse('validation_failed: malformed body'),
      },
    }),
    async (c) => {
      const { erasureId } = c.req.valid('param');
      const result = await services.erasures.dismiss(erasureId, c.req.valid('json'), c.get('role'));
      return c.json(result, 202);
    },
  );
}

