/** GET /v1/artifacts/{artifactId} (getArtifact): the artifact's current version, with a read fence. */
import { createRoute, type OpenAPIHono } from '@hono/zod-openapi';
import type { Services } from '../../services.js';
import { type AuthEnv, authorize, type TokenStore } from '../../auth.js';
import { authErrors, json, problemResponse, security } from '../../schemas.js';
import { ArtifactIdParam, ArtifactSchema } from './shared.js';

/** The services this route calls. */
export interface Uses {
  readonly artifacts: Pick<Services['artifacts'], 'get'>;
}

export const route = createRoute({
  operationId: 'getArtifact',
  method: 'get',
  path: '/v1/artifacts/{artifactId}',
  tags: ['artifacts'],
  summary: "The artifact's current version, with a read fence",
  security,
  request: { params: ArtifactIdParam },
  responses: {
    200: json(ArtifactSchema, 'The current version'),
    404: problemResponse('not_found'),
    409: problemResponse('erasure_in_progress: the artifact is derived from records being erased; served again once regenerated'),
    410: problemResponse('artifact_erased: no source survived an erasure'),
    ...authErrors,
  },
});

export function register(app: OpenAPIHono<AuthEnv>, services: Uses, tokens: TokenStore): void {
  app.openapi({ ...route, middleware: [authorize(tokens, 'writer')] as const }, async (c) => {
    const a = await services.artifacts.get(c.req.valid('param').artifactId);
    c.header('cache-control', 'no-store');
    return c.json({ ...a, createdAt: a.createdAt.toISOString(), updatedAt: a.updatedAt.toISOString() }, 200);
  });
}
