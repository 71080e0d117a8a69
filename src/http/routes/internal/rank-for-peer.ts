/**
 * POST /internal/v1/rank: another replica of a sharded deployment asks this one to rank
 * a query over the shards it holds (src/search/sharded.ts). Signed by the replicas' own
 * key (src/vault/replica-calls.ts), never a client token; left out of the OpenAPI
 * document. No record text crosses: record ids, keys and scores only.
 */
import type { Hono } from 'hono';
import { z } from 'zod';
import { LetheError } from '../../../errors.js';
import type { PeerRankAnswer, PeerRankRequest } from '../../../search/service.js';
import type { Services } from '../../services.js';
import { signedAnswer, verifiedBody } from './peer-call.js';

export const PEER_RANK_PATH = '/internal/v1/rank';

const ID = z.string().min(1).max(200);

export const PeerRankRequestSchema = z.strictObject({
  query: z.string().max(8192),
  mode: z.enum(['hybrid', 'vector', 'lexical']),
  n: z.number().int().min(1).max(100_000),
  scope: z.strictObject({ keyIds: z.array(ID).max(100_000), ids: z.array(ID).max(100_000) }).nullable(),
  shards: z
    .array(z.strictObject({ shard: z.number().int().min(0).max(1023), fence: z.number().int().min(0) }))
    .min(1)
    .max(1024),
  count: z.number().int().min(1).max(1024),
}) satisfies z.ZodType<PeerRankRequest>;

export const PeerRankAnswerSchema = z.strictObject({
  hits: z.array(z.strictObject({ id: ID, type: z.enum(['entry', 'artifact']), keyId: ID, score: z.number() })),
  shards: z.array(z.strictObject({ shard: z.number().int().min(0), fence: z.number().int().min(0) })),
}) satisfies z.ZodType<PeerRankAnswer>;

/** The services this route calls. */
export interface Uses {
  readonly search: Pick<Services['search'], 'rankForPeer'>;
  readonly replicaCalls?: Services['replicaCalls'];
  readonly config: Pick<Services['config'], 'replicaUrl'>;
}

// biome-ignore lint/suspicious/noExplicitAny: any Hono env
export function register(app: Hono<any>, services: Uses): void {
  app.post(PEER_RANK_PATH, async (c) => {
    const parsed = await verifiedBody(c, services.replicaCalls);
    const request = PeerRankRequestSchema.safeParse(parsed);
    if (!request.success) {
      const issue = request.error.issues[0];
      throw new LetheError('validation_failed', `body.${issue?.path.join('.') ?? ''}: ${issue?.message ?? 'invalid'}`);
    }
    return signedAnswer(c, services.replicaCalls, services.config.replicaUrl, await services.search.rankForPeer(request.data));
  });
}
