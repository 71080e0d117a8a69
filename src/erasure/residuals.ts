/**
 * The residual ledger: what an erasure could not remove and how long it lasts, each
 * with a bound (a number, a date, or the honest word "unbounded"). Listed on every
 * erasure and signed into its certificate.
 */
import type { EpochService } from '../vault/epochs.js';
import type { BackupService } from '../backups/service.js';
import { describeReplicas } from './acknowledgement.js';
import type { ErasureClass } from './machine.js';
import type { ErasureState } from './state.js';
import { inEffect, type ProbeView, type Residual } from './view.js';

export interface ResidualInputs {
  readonly state: ErasureState;
  readonly cls: ErasureClass;
  readonly probe: ProbeView;
  /** The stated unlearning bound (its method is sealed with the request: never quoted here, the residual is stored in the clear and signed). */
  readonly unlearning: { readonly bound: number } | null;
  /** The erasure key kept (matches remain): its sealed fingerprints are a residual. */
  readonly fingerprintsKept: boolean;
  readonly sealKeyId: string | null;
  /** A records-scope erasure: how many entries it forgets (the subject lives on). */
  readonly forgotten?: number | undefined;
}

export async function residuals(d: { epochs: EpochService; backups: BackupService }, input: ResidualInputs): Promise<Residual[]> {
  const { state, cls, probe, unlearning } = input;
  const out: Residual[] = [];
  const replicas = state.replicas;
  const dropped = replicas
    ? `dropped from the index of the replica that ran the erasure, and ${describeReplicas(replicas)}`
    : 'dropped from the index of the replica that ran the erasure';
  out.push({
    tier: 'vector-index',
    kind: 'gist',
    detail: `The erased records' embeddings were deleted with their key and ${dropped}. Their gist stays a property of the embedding model's vector space: text elsewhere that says the same lands near it. The probe measured what remains recoverable.`,
    bound: probe.recovered,
  });
  for (const b of replicas?.behind ?? []) {
    out.push({
      tier: 'vector-index',
      kind: 'replica-lag',
      detail: b.silent
        ? `Replica ${b.replica} had applied destructions up to #${b.appliedSeq} (this one is #${replicas!.seq}) and has not sent a heartbeat since ${b.seenAt}: it is dead, or paused with the erased records' vectors in its memory. If it resumes, it catches up on the destruction ledger before it answers a search (a catch-up older than 3 s is redone first), and its destruction cursor drops the vectors within its catch-up interval (1 s).`
        : `Replica ${b.replica} was alive but had applied destructions only up to #${b.appliedSeq} (this one is #${replicas!.seq}) after ${replicas!.waits} wait(s) of ${replicas!.waitMs} ms: its index may still hold the erased records' vectors until it catches up (every 1 s while it runs).`,
      bound: `until replica ${b.replica} applies destruction #${replicas!.seq}`,
    });
  }
  if (state.destruction) out.push(...(await keyResiduals(d, state, state.destruction, input.forgotten)));
  for (const m of probe.matches) {
    out.push({
      tier: m.tier,
      kind: 'cross-subject',
      detail: `Record ${m.id} (${input.forgotten !== undefined ? 'not one of the forgotten entries' : "not the subject's"}) still carries the erased content (score ${m.score}). ${
        m.tier === 'log'
          ? "Order a redaction (POST /v1/erasures/{id}/redactions) to re-key its subject's log without it."
          : m.tier === 'artifacts'
            ? 'It is derived from surviving sources that carry the content: redact those.'
            : 'The index still holds its vector.'
      }`,
      bound: 'unbounded until redacted',
    });
  }
  // what an approved ruling keeps readable: counted out of `recovered` on two people's word, never hidden
  for (const d of probe.dismissed ?? []) {
    if (!inEffect(d) || d.score === undefined || d.lapsed) continue;
    const approved = d.approval ? `approved by ${d.approval.role} at ${d.approval.at}` : "made before dismissals needed a second person's approval";
    out.push({
      tier: d.id.startsWith('art_') ? 'artifacts' : 'log',
      kind: 'dismissed-content',
      detail: `Record ${d.id} stays readable: it scores ${d.score} against the erased content, and a ruling (proposed by ${d.role} at ${d.at}, ${approved}${d.dismissalId ? `, dismissal ${d.dismissalId}` : ''}) dismissed it as not carrying it. Revoke the ruling (POST /v1/erasures/{id}/dismissals/{dismissalId}/revoke) or redact the record to remove it.`,
      bound: 'unbounded until the record is redacted or the ruling revoked',
    });
  }
  if (probe.unindexed && probe.unindexed > 0) {
    out.push({
      tier: 'vector-index',
      kind: 'unindexed',
      detail: `${probe.unindexed} entr${probe.unindexed === 1 ? 'y' : 'ies'} registered by writers before the probe started ${probe.unindexed === 1 ? 'was' : 'were'} still waiting in the indexing queue after the probe's bounded wait: the probe did not look for the erased content in ${probe.unindexed === 1 ? 'it' : 'them'}, so nothing is certified about ${probe.unindexed === 1 ? 'it' : 'them'}.`,
      bound: `${probe.unindexed} unprobed entr${probe.unindexed === 1 ? 'y' : 'ies'}, until probed`,
    });
  }
  if (cls === 'C') {
    out.push({
      tier: 'model-weights',
      kind: 'parametric',
      detail: unlearning
        ? `The subject's records were in ${state.exposures?.length ?? 0} registered training exposure(s); the requester states an unlearning method (sealed with the request) with bound ${unlearning.bound}.`
        : `The subject's records were in ${state.exposures?.length ?? 0} registered training exposure(s) and no unlearning bound was stated: what the weights retain is bounded only by model capacity.`,
      bound: unlearning ? unlearning.bound : 'unbounded',
    });
  }
  if (input.fingerprintsKept) {
    out.push({
      tier: 'erasure',
      kind: 'fingerprints',
      detail: `The probe fingerprints (keyed shingle hashes and embeddings of the erased records) stay sealed under the erasure's key ${input.sealKeyId} so a redaction, or the revocation of a ruling, can be probed again; the key is destroyed once a probe finds no match and no dismissed match scores above the threshold.`,
      bound: 'until no probe match, and no dismissed match above the threshold, remains',
    });
  }
  return out;
}

/**
 * What the destroyed key leaves: its wrapped copies (database, backups) until its
 * epoch's KEK is gone, and the DEK in writers' memory until their leases ended.
 */
async function keyResiduals(
  d: { epochs: EpochService; backups: BackupService },
  state: ResidualInputs['state'],
  destruction: NonNullable<ResidualInputs['state']['destruction']>,
  forgotten: number | undefined,
): Promise<Residual[]> {
  const out: Residual[] = [];
  const [epoch] = await d.epochs.rows([destruction.wrappedEpoch]);
  const retired = epoch?.state === 'retired';
  const gone = epoch !== undefined && (await d.epochs.retiredEpochs()).includes(epoch.epoch);
  // every key of the subject it destroyed (head and shards, or the keys its forgotten entries were under): a backup may hold only a shard
  const backups = await d.backups.holdingAny([destruction.keyId, ...(state.shardKeys ?? [])]);
  const until = retired && epoch?.retiredAt ? epoch.retiredAt.toISOString() : undefined;
  // retired but not yet gone: the provider destroys the KEK at the end of a deletion window (AWS KMS), which its administrators could still cancel
  const bound = gone
    ? 0
    : retired
      ? `until ${until} (epoch ${destruction.wrappedEpoch}'s KEK is scheduled for deletion in the key provider then; until that date the provider's administrators can cancel the deletion)`
      : `until epoch ${destruction.wrappedEpoch} is retired (not scheduled: rotate the KEK with POST /v1/admin/kek/rotate)`;
  out.push({
    tier: 'key-table',
    kind: 'wrapped-dek',
    detail:
      `Copies of the destroyed key ${destruction.keyId}, wrapped under epoch ${destruction.wrappedEpoch}'s KEK, may remain in PostgreSQL dead tuples, WAL and database backups; they unwrap only while that epoch's KEK exists.` +
      (forgotten !== undefined
        ? ` The subject lives on under a new key: the ${forgotten} forgotten entr${forgotten === 1 ? "y's record key was" : "ies' record keys were"} wrapped under the destroyed key alone, so old copies of the entries (their frames in the object store and in backups, with the database rows holding their wrapped record keys) stay decryptable for exactly as long: until epoch ${destruction.wrappedEpoch} is retired.`
        : ''),
    ...(until ? { until } : {}),
    bound,
  });
  if (backups > 0) {
    out.push({
      tier: 'backups',
      kind: 'wrapped-dek',
      detail: `${backups} lethe backup(s) hold the destroyed key's wrapped copy${state.shardKeys?.length ? ` (or of the subject's ${state.shardKeys.length} other destroyed key(s))` : ''} in their key table and database export (their manifests mark it destroyed); it unwraps only while epoch ${destruction.wrappedEpoch}'s KEK exists.`,
      ...(until ? { until } : {}),
      bound,
    });
  }
  if (destruction.leasedUntil) {
    // when the leases really ended (drain_leases recorded it): a writer's release ends its lease before the expiry captured at destruction
    const leases = state.leases?.keyId === destruction.keyId ? state.leases : undefined;
    const ended = leases?.endedAt ?? destruction.leasedUntil;
    out.push({
      tier: 'caches',
      kind: 'lease',
      detail:
        leases?.ended === 'released'
          ? `Writers that leased the key before the fence could hold the DEK in memory until they released their leases (${leases.released} of ${leases.leases} released; the last lease ended by its writer's release); lethe refuses every write under the destroyed key.`
          : 'Writers that leased the key before the fence could hold the DEK in memory until their lease expired; lethe refuses every write under the destroyed key.',
      until: ended,
      bound: ended,
    });
  }
  return out;
}

/** Once every epoch an erasure waits on is retired, its wrapped-key residuals end at the last retirement. */
export function endWrappedCopies(list: readonly Residual[], lastRetiredAt: string): Residual[] {
  return list.map((r) => (r.kind === 'wrapped-dek' ? { ...r, bound: 0, until: lastRetiredAt } : r));
}
