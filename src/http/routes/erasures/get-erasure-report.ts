/** GET /v1/erasures/{erasureId}/report (getErasureReport): the report a data-protection officer reads and signs (self-contained HTML; a bearer token, or a report link). */
import { createRoute, type OpenAPIHono, z } from '@hono/zod-openapi';
import type { MiddlewareHandler } from 'hono';
import { renderReport, REPORT_CSP } from '../../../erasure/report/index.js';
import { LetheError } from '../../../errors.js';
import { type AuthEnv, authorize, type TokenStore } from '../../auth.js';
import { problem } from '../../problem.js';
import { authErrors, problemResponse } from '../../schemas.js';
import type { Services } from '../../services.js';
import { ErasureIdParam } from './shared.js';

/** The services this route calls. */
export interface Uses {
  readonly erasures: Pick<Services['erasures'], 'get' | 'allTransitions'>;
  readonly reportLinks: Pick<Services['reportLinks'], 'verify'>;
}

/** Either a bearer token or a report link. */
const reportSecurity: Array<Record<string, string[]>> = [{ bearer: [] }, { reportLink: [] }];

export const route = createRoute({
  operationId: 'getErasureReport',
  method: 'get',
  path: '/v1/erasures/{erasureId}/report',
  tags: ['erasure'],
  summary: 'The report a data-protection officer reads and signs (self-contained HTML; a bearer token, or a report link)',
  description:
    'Page one in plain language (the request, what was erased, the outcome and its history, what remains, the certificate state), then the timeline in time order, ' +
    'the technical detail and an appendix with the certificate JSON and how to verify it; printable on A4. ' +
    'Opened with a report link (`exp` and `sig` from POST …/report-link) it needs no token until `exp`; such a link opens this report and nothing else. ' +
    'Answered with a strict Content-Security-Policy, `Referrer-Policy: no-referrer` and `Cache-Control: no-store`.',
  security: reportSecurity,
  request: {
    params: ErasureIdParam,
    query: z.object({
      exp: z
        .string()
        .regex(/^[0-9]{1,12}$/, 'Unix seconds')
        .optional()
        .openapi({ description: "A report link's expiry (Unix seconds), with `sig`" }),
      sig: z
        .string()
        .regex(/^[A-Za-z0-9_-]{43}$/, 'base64url')
        .optional()
        .openapi({ description: "A report link's signature, with `exp`" }),
    }),
  },
  responses: {
    200: { description: 'text/html', content: { 'text/html': { schema: z.string() } } },
    404: problemResponse('not_found'),
    ...authErrors,
    403: problemResponse("forbidden: the token's role may not read reports, or the report link is expired, forged, or for another erasure"),
  },
});

export function register(app: OpenAPIHono<AuthEnv>, services: Uses, tokens: TokenStore): void {
  app.openAPIRegistry.registerComponent('securitySchemes', 'reportLink', {
    type: 'apiKey',
    in: 'query',
    name: 'sig',
    description: 'A report link (POST /v1/erasures/{erasureId}/report-link): `sig` with its `exp`, for GET /v1/erasures/{erasureId}/report alone.',
  });
  const eraserOrApprover = authorize(tokens, 'eraser', 'approver');
  /** A bearer token of the eraser, approver (or admin) role, or a report link: it opens this erasure's report and nothing else, until it expires. */
  const reportAccess: MiddlewareHandler<AuthEnv> = async (c, next) => {
    const q = c.req.query();
    if (q.sig === undefined && q.exp === undefined) return eraserOrApprover(c, next);
    try {
      services.reportLinks.verify(c.req.param('erasureId') ?? '', q.exp, q.sig);
    } catch (e) {
      if (e instanceof LetheError) return problem(c, e.code, e.message, { 'cache-control': 'no-store', 'referrer-policy': 'no-referrer' });
      throw e;
    }
    await next();
  };
  app.openapi({ ...route, middleware: [reportAccess] as const }, async (c) => {
    const { erasureId } = c.req.valid('param');
    const view = await services.erasures.get(erasureId);
    const transitions = await services.erasures.allTransitions(erasureId);
    c.header('content-security-policy', `${REPORT_CSP}; frame-ancestors 'none'`);
    c.header('cache-control', 'no-store');
    c.header('referrer-policy', 'no-referrer');
    c.header('x-content-type-options', 'nosniff');
    return c.html(renderReport(view, { transitions })) as never;
  });
}
