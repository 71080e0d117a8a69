/** GET /v1/artifacts/{artifactId}/provenance (getArtifactProvenance): addition: the transitive closure of the artifact's sources and its number of distinct subjects. */
import { createRoute, type OpenAPIHono } from '@hono/zod-openapi';
import type { Services } from '../../services.js';
import { ProvenanceSchema } from '../../../wire/artifacts.js';
import { type AuthEnv, authorize, type TokenStore } from '../../auth.js';
import { authErrors, json, problemResponse, security } from '../../schemas.js';
import { ArtifactIdParam } from './shared.js';

/** The services this route calls. */
export interface Uses {
  readonly artifacts: Pick<Services['artifacts'], 'provenance'>;
}

export const route = createRoute({
  operationId: 'getArtifactProvenance',
  method: 'get',
  path: '/v1/artifacts/{artifactId}/provenance',
  tags: ['artifacts'],
  summary: "Addition: the transitive closure of the artifact's sources and its number of distinct subjects",
  security,
  request: { params: ArtifactIdParam },
  responses: {
    200: json(ProvenanceSchema, 'The closure, nearest first'),
    404: problemResponse('not_found'),
    ...authErrors,
  },
});

export function register(app: OpenAPIHono<AuthEnv>, services: Uses, tokens: TokenStore): void {
  app.openapi({ ...route, middleware: [authorize(tokens, 'writer', 'eraser')] as const }, async (c) => {
    const { artifactId } = c.req.valid('param');
    const p = await services.artifacts.provenance(artifactId);
    return c.json({ artifactId, sources: p.nodes.map((n) => ({ ...n })), subjects: p.subjects.length }, 200);
  });
}
