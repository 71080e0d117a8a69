/** POST /v1/artifacts (writeArtifact): write a derived artifact with its provenance. */
import { createRoute, type OpenAPIHono, z } from '@hono/zod-openapi';
import type { Services } from '../../services.js';
import { type AuthEnv, authorize, type TokenStore } from '../../auth.js';
import { authErrors, json, jsonBody, problemResponse, security } from '../../schemas.js';
import { WriteArtifact } from './shared.js';

/** The services this route calls. */
export interface Uses {
  readonly artifacts: Pick<Services['artifacts'], 'write'>;
}

export const route = createRoute({
  operationId: 'writeArtifact',
  method: 'post',
  path: '/v1/artifacts',
  tags: ['artifacts'],
  summary: 'Write a derived artifact with its provenance',
  description:
    "The text is sealed under a key of its own (this version's), its embedding under the same key. Refused when a source is unknown (422), " +
    'erased (409 source_erased) or being erased (409 erasure_in_progress), and when anything a presented read fence covers was erased since the read.',
  security,
  request: { body: jsonBody(WriteArtifact) },
  responses: {
    201: json(z.object({ artifactId: z.string(), version: z.literal(1), subjects: z.number().int() }).openapi('WrittenArtifact'), 'Stored'),
    409: problemResponse('source_erased or erasure_in_progress'),
    422: problemResponse('provenance_required or unknown_source'),
    ...authErrors,
  },
});

export function register(app: OpenAPIHono<AuthEnv>, services: Uses, tokens: TokenStore): void {
  app.openapi({ ...route, middleware: [authorize(tokens, 'writer')] as const }, async (c) => {
    const body = c.req.valid('json');
    const readFences = [...(body.readFence ? [body.readFence] : []), ...(body.readFences ?? [])];
    const written = await services.artifacts.write(
      { kind: body.kind, text: body.text, sources: body.sources, generator: body.generator, readFences },
      c.get('role'),
    );
    return c.json(written, 201);
  });
}
