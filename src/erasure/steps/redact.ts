/**
 * redact (after POST …/redactions): other subjects' records that still carry the
 * erased content are erased for real — each named entry's subject log is re-keyed
 * without it (old key destroyed) — and what was derived from them is regenerated.
 * Safe to run again: the affected artifacts are recorded before the re-key; entries
 * already under a destroyed key are skipped; a key fenced by the other subject's own
 * open erasure stays fenced under its new id (the log's re-key keeps the state).
 */
import { regenerateDerived } from '../../artifacts/derived.js';
import { recordVersionKeys, type Step } from './step.js';
import { TierFailure } from '../machine.js';

export const redact: Step = {
  name: 'redact',
  async run(ctx) {
    const { res, row, state } = ctx;
    const ids = state.pendingRedaction ?? [];
    const round = state.redactions?.at(-1);
    // what was derived from the named records, recorded before their keys are destroyed:
    // a re-run after a crash still finds an artifact above one already regenerated
    if (round && !round.affected) {
      const touching = await res.artifacts.touchingRecords(ids);
      round.affected = touching.length ? (await res.artifacts.upwardClosure(touching.map((t) => t.artifactId))).map((a) => a.artifactId) : [];
      await ctx.checkpoint();
    }
    const located = await res.log.locate(ids);
    const states = await res.keys.states(located.map((e) => e.keyId));
    // entries whose key is already destroyed were re-keyed out by an earlier run of this step
    const byKey = new Map<string, { state: 'active' | 'fenced'; ids: string[] }>();
    for (const e of located) {
      const keyState = states.get(e.keyId);
      if (!keyState) continue;
      const group = byKey.get(e.keyId) ?? { state: keyState, ids: [] };
      group.ids.push(e.entryId);
      byKey.set(e.keyId, group);
    }
    for (const [keyId, group] of byKey) {
      const result = await res.log.rekeyKey(keyId, group.state, { exclude: group.ids, actor: 'erasure', reason: `redaction for erasure ${row.erasureId}` });
      state.redactedKeys = [...new Set([...(state.redactedKeys ?? []), result.oldKeyId])];
      await ctx.checkpoint();
    }
    if (round && !round.rekeyedAt) {
      round.rekeyedAt = new Date().toISOString();
      await ctx.checkpoint();
    }
    // what was derived from the redacted records is regenerated without them
    const pending = async () => {
      const touching = (await res.artifacts.touchingRecords(ids)).map((t) => t.artifactId);
      const stale = await res.artifacts.staleSince(round?.affected ?? [], round?.rekeyedAt ? new Date(round.rekeyedAt) : undefined);
      return [...new Set([...touching, ...stale])];
    };
    const { regenerated, removed, left } = await regenerateDerived(res, pending, {
      reason: `redaction for erasure ${row.erasureId}`,
      beforeRegenerate: (keys) => recordVersionKeys(ctx, keys),
    });
    if (left > 0) throw new TierFailure(`tier artifacts still derives ${left} artifact(s) from redacted records`);
    if (round) round.done = new Date().toISOString();
    state.pendingRedaction = [];
    return {
      detail: `${ids.length} record(s) redacted by re-keying ${byKey.size} subject log(s) (old keys destroyed); ${regenerated} artifact(s) regenerated, ${removed} removed`,
    };
  },
};
