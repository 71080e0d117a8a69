/**
 * POST /internal/v1/probe: the replica running an erasure's probe on a sharded
 * deployment asks this one for its part — the fingerprints scored on the indexes of
 * the shards it holds (src/erasure/probe-part.ts). Signed by the replicas' own key
 * (src/vault/replica-calls.ts), never a client token; left out of the OpenAPI
 * document. The fingerprints cross as vectors and keyed shingle hashes, never text;
 * the answer is record ids and scores.
 */
import type { Hono } from 'hono';
import { z } from 'zod';
import { fromBase64Url, toBase64Url } from '../../../crypto/index.js';
import type { ProbePart, ProbePartInput, ProbeTarget } from '../../../erasure/probe-part.js';
import { ProbeMatchSchema } from '../../../erasure/view.js';
import { LetheError } from '../../../errors.js';
import type { Services } from '../../services.js';
import { signedAnswer, verifiedBody } from './peer-call.js';

export const PEER_PROBE_PATH = '/internal/v1/probe';

const ID = z.string().min(1).max(200);
const VECTOR = z.string().max(1_000_000);
const HASHES = z.array(z.number()).max(100_000);
const SHARDS = z
  .array(z.strictObject({ shard: z.number().int().min(0).max(1023), fence: z.number().int().min(0) }))
  .min(1)
  .max(1024);

const PeerProbeRequestSchema = z.strictObject({
  target: z.strictObject({
    kind: z.enum(['subject', 'records']),
    erasureId: ID,
    subjectHash: z.string().regex(/^[0-9a-f]{2,128}$/),
    keyId: ID.nullable(),
    entryIds: z.array(ID).max(100_000).optional(),
  }),
  model: z.string().max(200),
  records: z.array(z.strictObject({ id: ID, v: VECTOR, w: HASHES, p: HASHES })).max(100_000),
  queries: z.array(VECTOR).max(10_000),
  provenance: z.array(ID).max(100_000),
  dismissed: z.array(z.strictObject({ id: ID, score: z.number(), keyId: ID.optional() })).max(100_000),
  successors: z.array(ID).max(100_000),
  similarity: z.number().min(0).max(1),
  reconcile: z.boolean(),
  shards: SHARDS,
  count: z.number().int().min(1).max(1024),
});
type PeerProbeRequest = z.infer<typeof PeerProbeRequestSchema>;

const PartSchema = z.strictObject({
  recovered: z.number(),
  matches: z.array(ProbeMatchSchema),
  dismissedMatches: z.array(z.strictObject({ id: ID, score: z.number() })),
  lapsed: z.array(ID),
  examined: z.strictObject({ shingleIndex: z.number(), vectorIndex: z.number(), provenance: z.number() }),
  cappedShingles: z.number(),
  fallbacks: z.number(),
  perRecord: z.array(z.strictObject({ weight: z.number(), weighed: z.boolean(), top: z.number() })),
  indexed: z.number().int().min(0),
  coverage: z.array(z.strictObject({ shard: z.number().int().min(0), stored: z.number().int().min(0), indexed: z.number().int().min(0) })).optional(),
});

export const PeerProbeAnswerSchema = z.strictObject({
  part: PartSchema,
  shards: z.array(z.strictObject({ shard: z.number().int(), fence: z.number().int() })),
});

const vectorOf = (text: string): Float32Array => {
  const bytes = fromBase64Url(text);
  if (!bytes || bytes.byteLength % 4 !== 0) throw new LetheError('validation_failed', 'body: a vector is not base64url float32');
  const v = new Float32Array(bytes.byteLength / 4);
  new Uint8Array(v.buffer).set(bytes);
  bytes.fill(0);
  return v;
};
const textOf = (v: Float32Array): string => toBase64Url(new Uint8Array(v.buffer, v.byteOffset, v.byteLength));

/** A probe part's request as it crosses (the asking replica's side). */
export function encodePeerProbe(
  target: ProbeTarget,
  input: ProbePartInput,
  options: { reconcile: boolean; shards: ReadonlyArray<{ shard: number; fence: number }>; count: number },
): PeerProbeRequest {
  return {
    target: {
      kind: target.kind,
      erasureId: target.erasureId,
      subjectHash: Buffer.from(target.subjectHash).toString('hex'),
      keyId: target.keyId,
      ...(target.kind === 'records' ? { entryIds: [...target.entryIds] } : {}),
    },
    model: input.model,
    records: input.records.map((r) => ({ id: r.id, v: textOf(r.vector), w: [...r.words], p: [...r.pairs] })),
    queries: input.queries.map(textOf),
    provenance: [...input.provenance],
    dismissed: [...input.dismissed].map(([id, d]) => ({ id, score: d.score, ...(d.keyId !== undefined ? { keyId: d.keyId } : {}) })),
    successors: [...input.successors],
    similarity: input.similarity,
    reconcile: options.reconcile,
    shards: [...options.shards],
    count: options.count,
  };
}

function decodePeerProbe(r: PeerProbeRequest): { target: ProbeTarget; input: ProbePartInput } {
  const common = { erasureId: r.target.erasureId, subjectHash: Uint8Array.from(Buffer.from(r.target.subjectHash, 'hex')), keyId: r.target.keyId };
  return {
    target: r.target.kind === 'subject' ? { ...common, kind: 'subject' } : { ...common, kind: 'records', entryIds: r.target.entryIds ?? [] },
    input: {
      model: r.model,
      records: r.records.map((x) => ({ id: x.id, vector: vectorOf(x.v), words: x.w, pairs: x.p })),
      queries: r.queries.map(vectorOf),
      provenance: r.provenance,
      dismissed: new Map(r.dismissed.map((d) => [d.id, { score: d.score, keyId: d.keyId }])),
      successors: new Set(r.successors),
      similarity: r.similarity,
    },
  };
}

const EMPTY_PART: ProbePart = {
  recovered: 0,
  matches: [],
  dismissedMatches: [],
  lapsed: [],
  examined: { shingleIndex: 0, vectorIndex: 0, provenance: 0 },
  cappedShingles: 0,
  fallbacks: 0,
  perRecord: [],
  indexed: 0,
};

/** The services this route calls. */
export interface Uses {
  readonly erasures: Pick<Services['erasures'], 'probeForPeer'>;
  readonly shards?: Pick<NonNullable<Services['shards']>, 'answering' | 'count'> | undefined;
  readonly replicaCalls?: Services['replicaCalls'];
  readonly config: Pick<Services['config'], 'replicaUrl'>;
}

// biome-ignore lint/suspicious/noExplicitAny: any Hono env
export function register(app: Hono<any>, services: Uses): void {
  app.post(PEER_PROBE_PATH, async (c) => {
    const request = PeerProbeRequestSchema.safeParse(await verifiedBody(c, services.replicaCalls));
    if (!request.success) {
      const issue = request.error.issues[0];
      throw new LetheError('validation_failed', `body.${issue?.path.join('.') ?? ''}: ${issue?.message ?? 'invalid'}`);
    }
    // a replica splitting by another count answers for none (the asking one names them missing)
    const answering = services.shards?.count === request.data.count ? services.shards.answering() : new Map<number, number>();
    const shards = request.data.shards.filter((s) => answering.get(s.shard) === s.fence);
    const self = services.config.replicaUrl;
    // none of them held here (a hand-over): no part, and the asking replica names them missing
    if (shards.length === 0) return signedAnswer(c, services.replicaCalls, self, { part: EMPTY_PART, shards });
    const { target, input } = decodePeerProbe(request.data);
    try {
      const part: ProbePart = await services.erasures.probeForPeer(target, input, {
        reconcile: request.data.reconcile,
        shards: new Set(shards.map((x) => x.shard)),
      });
      return signedAnswer(c, services.replicaCalls, self, { part, shards });
    } finally {
      for (const r of input.records) r.vector.fill(0);
      for (const q of input.queries) q.fill(0);
    }
  });
}
