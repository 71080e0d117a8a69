/**
 * destroy: the key-table tier destroys the subject's DEK; then the tiers the
 * destruction erased (log, vector index) must report their removals; then the step
 * waits (parked, the subject still fenced) until the destruction's record is durable
 * in the backup store's ledger chain, and (bounded) until every live replica applied
 * the destruction — dropped the key's vectors from its index (acknowledgement.ts).
 * destroyKey is idempotent and tiers report cumulative figures: safe to run again.
 */
import { isLetheError } from '../../errors.js';
import { awaitReplicas, describeReplicas } from '../acknowledgement.js';
import { forgottenEntries } from '../state.js';
import { awaitDurable, eraseTier, Park, type Step, type StepContext } from './step.js';
import { TierFailure } from '../machine.js';

/** How long forgetting entries waits for a subject key another re-key or erasure holds fenced. */
const FENCED_WAIT_MS = 1000;
/** A re-key lets the forgets of its key not fingerprinted yet ahead at most this often, this long each time. */
const MAX_DEFERRALS = 3;
const DEFER_MS = 20;

/**
 * Forgetting entries: the subject's log re-keyed without them (src/log/rekey.ts) — the
 * survivors' record keys re-wrapped under a new subject key, the old key destroyed
 * with the forgotten entries' record keys wrapped under it alone. The key destroyed is
 * `state.keyId` from here on. Safe to run again: entries already under a destroyed key
 * were re-keyed out by an earlier run (or went with an erasure of the whole subject).
 * A key fenced by an erasure of the whole subject, or re-keyed under our feet, parks
 * the step for a moment; a key fenced by a re-key (another one running, or one that
 * died between its fence and its switch) is re-keyed all the same.
 */
async function rekeyWithout(ctx: StepContext, entryIds: readonly string[]): Promise<Park | undefined> {
  const { res, row, state } = ctx;
  const located = await res.log.locate(entryIds);
  const states = await res.keys.states([...new Set(located.map((e) => e.keyId))]);
  // an entry whose key went between the two looks may have been moved by another forget's re-key (a shard-mate's), not
  // destroyed with it: looked at again next run
  const went = located.filter((e) => !states.has(e.keyId));
  if (went.length > 0) {
    const now = new Map((await res.log.locate(went.map((e) => e.entryId))).map((e) => [e.entryId, e.keyId]));
    if (went.some((e) => now.get(e.entryId) !== e.keyId))
      return new Park(new Date(Date.now() + FENCED_WAIT_MS), 'an entry moved to another key during the look (another forget re-keyed its shard): trying again');
  }
  const byKey = new Map<string, string[]>();
  for (const e of located) if (states.has(e.keyId)) byKey.set(e.keyId, [...(byKey.get(e.keyId) ?? []), e.entryId]);
  for (const [keyId, ids] of byKey) {
    const wait = (why: string) => new Park(new Date(Date.now() + FENCED_WAIT_MS), `the subject's key ${keyId} ${why}: trying again in a moment`);
    // fenced by an erasure of the whole subject (open, or failed with its key fenced): that erasure takes the key over.
    // Otherwise the fence is a re-key's — running elsewhere, or left by one that died before lifting it — and
    // re-keying over it is safe: replacements serialize on the key row and the loser changes nothing.
    if (states.get(keyId) === 'fenced' && (await res.keys.creationRefusals([row.subjectHash])).size > 0)
      return wait('is fenced by an erasure of the whole subject');
    // forgets of the subject that arrived together share this re-key: the entries of the others already fingerprinted go too
    const { riders, coming } = await coalesced(ctx, keyId);
    // others under the key not fingerprinted yet are let ahead a few times (their steps before this one are quick), so
    // a burst of forgets — an agent rewriting its memories — re-keys the shard once rather than once each
    if (coming > 0 && (state.deferrals ?? 0) < MAX_DEFERRALS) {
      state.deferrals = (state.deferrals ?? 0) + 1;
      return new Park(new Date(Date.now() + DEFER_MS), `${coming} other forget(s) of the same key are being fingerprinted: re-keying with them`);
    }
    try {
      const others = riders.size > 0 ? `, with ${riders.size} other forget(s) coalesced` : '';
      const result = await res.log.rekeyKey(keyId, 'active', {
        exclude: [...ids, ...[...riders.values()].flat()],
        actor: 'erasure',
        reason: `erasure ${row.erasureId}: forget ${ids.length} entr${ids.length === 1 ? 'y' : 'ies'}${others}`,
      });
      // a forget whose entries were under several keys (shards) destroys each of them: the first is `keyId`, the others `shardKeys`
      if (state.rekeyed?.length) state.shardKeys = [...new Set([...(state.shardKeys ?? []), result.oldKeyId])];
      else state.keyId = result.oldKeyId;
      state.rekeyed = [...(state.rekeyed ?? []), result.oldKeyId];
      await ctx.checkpoint();
    } catch (e) {
      if (isLetheError(e, 'conflict')) return wait('took an append during the re-key');
      for (const code of ['key_destroyed', 'not_found', 'illegal_transition'] as const) if (isLetheError(e, code)) return wait('changed during the re-key');
      // another forget's re-key moved the entries between our look and its own: the key is gone
      if (isLetheError(e, 'validation_failed') && !(await res.keys.states([keyId])).has(keyId)) return wait('changed during the re-key');
      throw e;
    }
  }
  if (byKey.size === 0 && located[0]) state.keyId = located[0].keyId;
  return undefined;
}

/**
 * The subject's live keys other than `state.keyId` (the key-table tier's), destroyed and
 * recorded in `state.shardKeys` — its shards, and a head that replaced the classified
 * key since (another erasure's redaction re-keyed it). Safe to run again.
 */
async function destroyShards(ctx: StepContext): Promise<void> {
  const { res, row, state } = ctx;
  for (const k of await res.keys.keysOf(row.subjectHash)) {
    if (k.keyId === state.keyId) continue;
    await res.keys.destroyKey(k.keyId, { reason: `erasure ${row.erasureId}: shard`, actor: 'erasure' });
    state.shardKeys = [...new Set([...(state.shardKeys ?? []), k.keyId])];
    await ctx.checkpoint();
  }
}

/**
 * The other forgets under `keyId` whose fingerprints are taken and who have not re-keyed
 * yet (their entries, by erasure), and how many more are open but not fingerprinted yet.
 */
async function coalesced(ctx: StepContext, keyId: string): Promise<{ riders: Map<string, string[]>; coming: number }> {
  const under = await ctx.res.log.forgottenUnder(keyId, ctx.row.erasureId);
  const { fingerprinted, coming } = await ctx.res.records.openForgets([...under.keys()]);
  return { riders: new Map([...under].filter(([id]) => fingerprinted.has(id))), coming: coming.size };
}

export const destroy: Step = {
  name: 'destroy',
  async run(ctx) {
    const { res, state } = ctx;
    const forgetting = forgottenEntries(ctx.row);
    if (forgetting) {
      const waiting = await rekeyWithout(ctx, forgetting);
      if (waiting) return waiting;
    }
    const keyId = state.keyId;
    let seq: number | undefined;
    // erasing the whole subject: its shards go first, the head (the key-table tier's) last
    if (!forgetting && keyId) await destroyShards(ctx);
    const details = [await eraseTier(ctx, 'key-table')];
    if (keyId) {
      const d = await res.destructions.get(keyId);
      if (!d) throw new TierFailure(`tier key-table: key ${keyId} is not in the destruction ledger after its destruction`);
      seq = d.seq;
      state.destruction = { keyId, destroyedAt: d.destroyedAt.toISOString(), wrappedEpoch: d.wrappedEpoch, leasedUntil: d.leasedUntil?.toISOString() ?? null };
      res.failpoint?.('destroy-committed');
    }
    for (const name of ['log', 'vector-index'] as const) details.push(await eraseTier(ctx, name));
    // write-ahead: the destruction is acknowledged only once its record is durable in the backup store
    const waiting = keyId ? await awaitDurable(ctx, [keyId, ...(state.shardKeys ?? [])]) : undefined;
    if (waiting) return waiting;
    if (keyId && seq !== undefined) {
      const lagging = await awaitReplicas(ctx, keyId, seq);
      if (lagging) return lagging;
    }
    const replicas = state.replicas ? `; ${describeReplicas(state.replicas)}` : '';
    return {
      detail: keyId
        ? `${details.join('; ')} (the key was wrapped under epoch ${state.destruction?.wrappedEpoch})${replicas}`
        : 'no live key (nothing to destroy)',
    };
  },
};
