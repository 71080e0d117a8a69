/**
 * What an erasure's steps record, kept as JSON in `erasures.state` — ids, counts and
 * times, never content — and parsed against this shape on every read, never cast.
 * Pure: no I/O.
 */
import { z } from 'zod';
import type { ErasureTarget } from '../erasable.js';
import { LetheError } from '../errors.js';
import { STEP_NAMES, STEP_STATUSES, TIER_NAMES } from './machine.js';
import { ErasureGraphSchema, ProbeDismissalSchema, ProbeViewSchema, ResidualSchema } from './view.js';

const StepRecordSchema = z.object({
  status: z.enum(STEP_STATUSES),
  detail: z.string().optional(),
  startedAt: z.string().optional(),
  finishedAt: z.string().optional(),
});

const tierCounts = z.partialRecord(z.enum(TIER_NAMES), z.number());

/** What the steps learn, kept in `erasures.state`: ids, counts and times, never content. */
export const ErasureStateSchema = z.looseObject({
  steps: z.partialRecord(z.enum(STEP_NAMES), StepRecordSchema),
  /** The subject's key this erasure fences and destroys (null: it had none left). */
  keyId: z.string().nullable().optional(),
  /** What each tier held of the subject at classification. */
  contributions: tierCounts.optional(),
  /** What each tier reported removed. */
  removed: tierCounts.optional(),
  exposures: z.array(z.string()).optional(),
  /** The artifacts classified as affected, at their version then. */
  affected: z.array(z.object({ artifactId: z.string(), version: z.number() })).optional(),
  graph: ErasureGraphSchema.optional(),
  fingerprinted: z.number().optional(),
  destruction: z.object({ keyId: z.string(), destroyedAt: z.string(), wrappedEpoch: z.number(), leasedUntil: z.string().nullable() }).optional(),
  /** What drain_leases found when the destroyed key's leases were over: how many, how many released, when and how the last one ended. */
  leases: z
    .object({ keyId: z.string(), leases: z.number(), released: z.number(), endedAt: z.string().nullable(), ended: z.enum(['released', 'expired']).nullable() })
    .optional(),
  /** Artifact version keys the cascade and redactions destroyed (their backups are marked too). */
  versionKeys: z.array(z.string()).optional(),
  /** Keys of other subjects destroyed by redactions. */
  redactedKeys: z.array(z.string()).optional(),
  /** The subject's other keys this erasure destroyed besides `keyId`: its shards (src/vault/key-shards.ts), or more keys its forgotten entries were under. */
  shardKeys: z.array(z.string()).optional(),
  /** The keys this forget's own re-keys destroyed, in order (another forget's re-key may have destroyed the one it first classified). */
  rekeyed: z.array(z.string()).optional(),
  /** How often the destroy step let other forgets of its key be fingerprinted first (destroy.ts). */
  deferrals: z.number().int().optional(),
  redactions: z
    .array(
      z.object({
        ids: z.array(z.string()),
        orderedAt: z.string(),
        affected: z.array(z.string()).optional(),
        rekeyedAt: z.string().optional(),
        done: z.string().optional(),
      }),
    )
    .optional(),
  pendingRedaction: z.array(z.string()).optional(),
  probe: ProbeViewSchema.optional(),
  /** Times the probe parked for the index to catch up (reset when it runs). */
  indexWaits: z.number().optional(),
  /** Sharded: probes parked while a shard had no searchable owner (a takeover), bounded by MAX_SHARD_WAITS. */
  shardWaits: z.number().optional(),
  /** Sharded: when the probe first parked for shards a live replica was rebuilding (uncounted, bounded by MAX_REBUILD_WAIT_MS). */
  rebuildSince: z.string().optional(),
  /** The indexing queue's high-water mark when the probe first ran: it waits for every entry queued up to it (reset when it runs). */
  queueMark: z.number().optional(),
  /** Times the probe parked for those entries (reset when it runs). */
  queueWaits: z.number().optional(),
  /** The principal that requested the erasure (over HTTP): it may never approve a dismissal of it. */
  requestedBy: z.string().optional(),
  /** Dismissals proposed (POST …/dismissals), each with its status: only approved ones leave a match out of `recovered`. */
  dismissals: z.array(ProbeDismissalSchema).optional(),
  /** Which replicas acknowledged applying the key's destruction (src/erasure/acknowledgement.ts). */
  replicas: z
    .object({
      keyId: z.string(),
      seq: z.number(),
      checkedAt: z.string(),
      waits: z.number(),
      maxWaits: z.number(),
      waitMs: z.number(),
      applied: z.array(z.string()),
      behind: z.array(z.object({ replica: z.string(), appliedSeq: z.number(), seenAt: z.string(), listener: z.enum(['up', 'down']), silent: z.boolean() })),
    })
    .optional(),
  /** The backup bucket's ledger chain record this erasure's destructions were durable in (or a later one): the certificate names it, a witness for restores. */
  ledger: z.object({ bucket: z.string(), seq: z.number(), mac: z.string() }).optional(),
  residuals: z.array(ResidualSchema).optional(),
  wrappedEpochs: z.array(z.number()).optional(),
});
export type ErasureState = z.infer<typeof ErasureStateSchema>;

/** `erasures.state` as read from the database, checked against its shape. */
export function parseState(value: unknown): ErasureState {
  const parsed = ErasureStateSchema.safeParse(value);
  if (!parsed.success)
    throw new LetheError('internal', `an erasure's recorded state does not have its shape (${parsed.error.issues[0]?.path.join('.') ?? '?'})`);
  return parsed.data;
}

/** The entries a records-scope erasure forgets (undefined for an erasure of a whole subject). */
export function forgottenEntries(row: { readonly scope: 'subject' | 'records'; readonly entryIds: unknown }): readonly string[] | undefined {
  if (row.scope !== 'records') return undefined;
  const ids = row.entryIds;
  if (!Array.isArray(ids) || ids.length === 0 || !ids.every((id) => typeof id === 'string')) {
    throw new LetheError('internal', 'a records-scope erasure has no entry ids recorded');
  }
  return ids as string[];
}

/** What the erasure takes, as the modules' erasables read it: the whole subject, or the records it forgets (under `keyId`). */
export function targetOf(
  row: { readonly erasureId: string; readonly subjectHash: Uint8Array; readonly scope: 'subject' | 'records'; readonly entryIds: unknown },
  keyId: string | null,
): ErasureTarget {
  const base = { erasureId: row.erasureId, subjectHash: row.subjectHash, keyId };
  const entryIds = forgottenEntries(row);
  return entryIds ? { ...base, kind: 'records', entryIds } : { ...base, kind: 'subject' };
}

/** Every key this erasure destroys or destroyed: the subject's (head and shards), superseded version keys, redacted subjects' old keys. */
export function keysTaken(state: ErasureState): string[] {
  return [...new Set([...(state.keyId ? [state.keyId] : []), ...(state.shardKeys ?? []), ...(state.versionKeys ?? []), ...(state.redactedKeys ?? [])])];
}
