/** POST /v1/artifacts/{artifactId}/regenerate (regenerateArtifact): addition: rewrite the artifact, and every artifact above it, from the surviving sources. */
import { createRoute, type OpenAPIHono, z } from '@hono/zod-openapi';
import { MAX_SOURCES } from '../../../artifacts/service.js';
import { LetheError } from '../../../errors.js';
import type { Services } from '../../services.js';
import { RegenerationSchema } from '../../../wire/artifacts.js';
import { type AuthEnv, authorize, type TokenStore } from '../../auth.js';
import { authErrors, json, problemResponse, security } from '../../schemas.js';
import { RecordId, ArtifactIdParam, REGENERATE_ACK_WAIT_MS } from './shared.js';

/** The services this route calls. */
export interface Uses {
  readonly artifacts: Pick<Services['artifacts'], 'regenerate'>;
  readonly backups: Pick<Services['backups'], 'awaitDurable'>;
}

export const route = createRoute({
  operationId: 'regenerateArtifact',
  method: 'post',
  path: '/v1/artifacts/{artifactId}/regenerate',
  tags: ['artifacts'],
  summary: 'Addition: rewrite the artifact, and every artifact above it, from the surviving sources',
  description:
    'Sources named in `excluding`, unreadable or erased are dropped. Each affected artifact gets exactly one new version under a new key ' +
    "(the previous version's key is destroyed); one left with no surviving source is erased. 200 once the destroyed keys' records are durable in " +
    'the backup store\'s ledger chain; 202 with `destruction: "pending"` when they are not after a few seconds (the old versions are unreadable ' +
    'already; the write is retried in the background).',
  security,
  request: {
    params: ArtifactIdParam,
    body: {
      required: false,
      content: { 'application/json': { schema: z.object({ excluding: z.array(RecordId).max(MAX_SOURCES).optional() }).openapi('RegenerateRequest') } },
    },
  },
  responses: {
    200: json(RegenerationSchema, "What was rewritten and what was erased; the old versions' keys destroyed, durably"),
    202: json(
      z.object({
        regenerated: z.array(z.object({ artifactId: z.string(), version: z.number().int() })),
        removed: z.array(z.string()),
        destruction: z.literal('pending'),
      }),
      "Rewritten; the old versions' keys are unusable, their destruction records not yet durable (retried in the background)",
    ),
    404: problemResponse('not_found'),
    ...authErrors,
  },
});

export function register(app: OpenAPIHono<AuthEnv>, services: Uses, tokens: TokenStore): void {
  app.openapi({ ...route, middleware: [authorize(tokens, 'writer', 'eraser')] as const }, async (c) => {
    const { artifactId } = c.req.valid('param');
    // The body is optional. Without a content type the validator does not run (and
    // there is nothing to read); with another content type, refuse rather than
    // regenerate without the exclusions the caller meant to send.
    const type = c.req.header('content-type');
    if (type !== undefined && !/^application\/json\b/i.test(type)) {
      throw new LetheError('validation_failed', 'body: content-type must be application/json');
    }
    const body = (type === undefined ? undefined : c.req.valid('json')) ?? {};
    const result = await services.artifacts.regenerate([artifactId], { excluding: body.excluding ?? [], actor: c.get('role'), reason: 'requested' });
    // the superseded versions' keys count as destroyed once their records are durable in the ledger chain
    const durable = await services.backups.awaitDurable(undefined, REGENERATE_ACK_WAIT_MS);
    if (durable.pending.length > 0) {
      return c.json({ ...result, destruction: 'pending' as const }, 202);
    }
    return c.json({ ...result, destruction: 'durable' as const }, 200);
  });
}
