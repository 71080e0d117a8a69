/**
 * The vector tier's replica acknowledgement: a destroyed key's vectors leave every
 * replica's in-memory index when that replica applies the destruction (notification,
 * or its destruction cursor within CATCH_UP_MS). Each replica's heartbeat row names the
 * last destruction it applied (`applied_seq`, every lower one too). The destroy step
 * parks — REPLICA_WAIT_MS at a time, at most MAX_REPLICA_WAITS times — until every
 * live replica's applied_seq reaches the destruction's seq (polling in place for up to
 * IN_PLACE_MS first: a replica that heard the notification acknowledges at once). What it checked is
 * recorded (`state.replicas`) and signed: the replicas that applied it, and every
 * replica still behind after the bound (alive and lagging, or silent: not seen for
 * DEAD_AFTER_BEATS heartbeats — dead, or paused with the vectors in memory), which
 * the residual ledger names. A replica that runs no heartbeat (a process opened
 * without listening) is not seen: it is none of the serving replicas.
 */
import type { ReplicaRow } from '../vault/replicas.js';
import type { ErasureState } from './state.js';
import { Park, type StepContext } from './steps/step.js';

export const MAX_REPLICA_WAITS = 10;
export const REPLICA_WAIT_MS = 1000;
/** How long the step polls in place (a replica hearing the notification acknowledges within milliseconds) before it parks. */
const IN_PLACE_MS = 2000;
const POLL_MS = 100;

export type ReplicaCheck = NonNullable<ErasureState['replicas']>;

function behind(r: ReplicaRow, silent: boolean): ReplicaCheck['behind'][number] {
  return { replica: r.replicaId, appliedSeq: r.appliedSeq, seenAt: r.seenAt.toISOString(), listener: r.listener, silent };
}

/** Parks while a live replica has not applied destruction `seq` (bounded); records what was checked either way. */
export async function awaitReplicas(ctx: StepContext, keyId: string, seq: number): Promise<Park | undefined> {
  const { res, state } = ctx;
  let ack = await res.replicas.acknowledge(seq);
  for (const deadline = Date.now() + IN_PLACE_MS; ack.lagging.length > 0 && Date.now() < deadline; ) {
    await new Promise((r) => setTimeout(r, POLL_MS));
    ack = await res.replicas.acknowledge(seq);
  }
  const previous = state.replicas;
  const waits = previous?.keyId === keyId ? previous.waits : 0;
  const check: ReplicaCheck = {
    keyId,
    seq,
    checkedAt: ack.checkedAt.toISOString(),
    waits,
    maxWaits: MAX_REPLICA_WAITS,
    waitMs: REPLICA_WAIT_MS,
    applied: ack.applied.map((r) => r.replicaId),
    behind: [...ack.lagging.map((r) => behind(r, false)), ...ack.silent.map((r) => behind(r, true))],
  };
  if (ack.lagging.length > 0 && waits < MAX_REPLICA_WAITS) {
    state.replicas = { ...check, waits: waits + 1 };
    const names = ack.lagging.map((r) => `${r.replicaId} (applied #${r.appliedSeq})`).join(', ');
    return new Park(
      new Date(Date.now() + REPLICA_WAIT_MS),
      `waiting for ${ack.lagging.length} live replica(s) to apply destruction #${seq} and drop its vectors: ${names} (${waits + 1} of ${MAX_REPLICA_WAITS})`,
    );
  }
  state.replicas = check;
  return undefined;
}

/** The sentence the destroy step and the residual ledger say about the replicas. */
export function describeReplicas(check: ReplicaCheck): string {
  const applied = check.applied.length
    ? `${check.applied.length} live replica(s) acknowledged applying destruction #${check.seq} (applied_seq ≥ ${check.seq}) by ${check.checkedAt}: ${check.applied.join(', ')}`
    : `no live replica had a heartbeat row acknowledging destruction #${check.seq} by ${check.checkedAt}`;
  const behind = check.behind.map((b) => `${b.replica} (${b.silent ? `silent since ${b.seenAt}` : 'alive'}, applied #${b.appliedSeq})`);
  return behind.length ? `${applied}; still behind after ${check.waits} wait(s): ${behind.join(', ')}` : applied;
}
