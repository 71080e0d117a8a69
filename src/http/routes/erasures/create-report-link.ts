/** POST /v1/erasures/{erasureId}/report-link (createReportLink): a shareable link to the erasure's report that opens without a token until it expires. */
import { createRoute, type OpenAPIHono, z } from '@hono/zod-openapi';
import { DEFAULT_LINK_SECONDS, MAX_LINK_SECONDS, MIN_LINK_SECONDS } from '../../../erasure/report-link.js';
import { type AuthEnv, authorize, type TokenStore } from '../../auth.js';
import { authErrors, json, problemResponse, security } from '../../schemas.js';
import type { Services } from '../../services.js';
import { ReportLinkSchema } from '../../../wire/erasures.js';
import { ErasureIdParam } from './shared.js';

/** The services this route calls. */
export interface Uses {
  readonly reportLinks: Pick<Services['reportLinks'], 'issue'>;
}

export const route = createRoute({
  operationId: 'createReportLink',
  method: 'post',
  path: '/v1/erasures/{erasureId}/report-link',
  tags: ['erasure'],
  summary: "A shareable link to the erasure's report that opens without a token until it expires",
  description:
    `Answers \`GET /v1/erasures/{erasureId}/report?exp=…&sig=…\`: an HMAC-SHA256 under a vault key used for nothing else, binding the erasure id and the expiry. ` +
    `It opens this report alone, and only until \`expiresAt\` (default ${DEFAULT_LINK_SECONDS / 86400} days, at most ${MAX_LINK_SECONDS / 86400}); it cannot be revoked sooner, so keep it short. ` +
    'Anyone holding the link can read the report: share it as you would the report. Audited as erasure.report.link.',
  security,
  request: {
    params: ErasureIdParam,
    body: {
      required: false,
      content: {
        'application/json': {
          schema: z
            .object({
              expiresInSeconds: z
                .number()
                .int('must be a whole number of seconds')
                .min(MIN_LINK_SECONDS, `at least ${MIN_LINK_SECONDS}`)
                .max(MAX_LINK_SECONDS, `at most ${MAX_LINK_SECONDS} (30 days)`)
                .optional()
                .openapi({ description: `How long the link lasts, in seconds (default ${DEFAULT_LINK_SECONDS}: 7 days)` }),
            })
            .strict()
            .meta({ id: 'ReportLinkRequest' }),
        },
      },
    },
  },
  responses: {
    201: json(ReportLinkSchema, 'The link'),
    404: problemResponse('not_found'),
    ...authErrors,
  },
});

export function register(app: OpenAPIHono<AuthEnv>, services: Uses, tokens: TokenStore): void {
  const eraserOnly = authorize(tokens, 'eraser');
  app.openapi({ ...route, middleware: [eraserOnly] as const }, async (c) => {
    const { erasureId } = c.req.valid('param');
    const body = (c.req.valid('json') ?? {}) as { expiresInSeconds?: number };
    const link = await services.reportLinks.issue(erasureId, body.expiresInSeconds, c.get('role'));
    c.header('cache-control', 'no-store');
    return c.json({ url: new URL(link.path, c.req.url).toString(), path: link.path, expiresAt: link.expiresAt.toISOString() }, 201);
  });
}
