/**
 * Ordering a redaction (POST /v1/erasures/{id}/redactions): the named records are
 * other subjects' readable log entries that still carry the erased content (the
 * probe named them). The order re-opens a finished erasure at `redact`, which then
 * runs propagate, probe and certify again. Refused while the erasure runs, after it
 * failed, once its fingerprints were destroyed, and for anything but another
 * subject's readable entry (forgetting entries: any readable entry but those forgotten,
 * the living subject's others included). A redaction destroys the named records'
 * keys under this erasure's certificate, so it takes only records the last probe named
 * (a match, or a dismissed match): 422 `not_a_match` for any other, unless an admin
 * overrides with a reason (audited as `erasure.redaction.override`, in the re-open's
 * transaction).
 */
import { LetheError } from '../errors.js';
import { isId } from '../ids.js';
import { forgottenEntries } from './state.js';
import { REDACTION_RUN } from './machine.js';
import { assertReopenable, reopenErasure } from './reopen.js';
import { type Actor, MAX_REDACTION_IDS } from './request.js';
import type { ErasureResources } from './resources.js';
import { type ErasureState, parseState } from './state.js';

/** The records the last probe named (its matches and its dismissed matches): what a redaction may take. */
function unnamed(state: ErasureState, ids: readonly string[]): string[] {
  const named = new Set([...(state.probe?.matches ?? []).map((m) => m.id), ...(state.probe?.dismissed ?? []).map((d) => d.id)]);
  return ids.filter((id) => !named.has(id));
}

export async function orderRedaction(
  res: ErasureResources,
  erasureId: string,
  ids: readonly string[],
  actor: Actor,
  override?: { readonly reason: string },
): Promise<void> {
  if (override && actor.role !== 'admin') throw new LetheError('forbidden', 'override: only an admin may redact records the last probe did not name');
  const unique = [...new Set(ids)];
  if (unique.length === 0) throw new LetheError('validation_failed', 'ids: name at least one entry');
  if (unique.length > MAX_REDACTION_IDS) throw new LetheError('validation_failed', `ids: at most ${MAX_REDACTION_IDS} entries per redaction`);
  const row = await res.records.row(erasureId);
  assertReopenable(row, 'redaction');
  const notEntries = unique.filter((id) => !isId('entry', id));
  if (notEntries.length > 0) {
    throw new LetheError(
      'validation_failed',
      `ids: ${notEntries.length} id(s) are not log entries (derived artifacts are regenerated from their sources: redact the sources)`,
    );
  }
  const located = await res.log.locate(unique);
  if (located.length !== unique.length) throw new LetheError('validation_failed', `ids: ${unique.length - located.length} id(s) are not entries lethe holds`);
  // forgetting entries, the subject lives on: its own entries are those forgotten; its others are readable and may be redacted
  const forgotten = forgottenEntries(row);
  const own = forgotten
    ? located.filter((e) => forgotten.includes(e.entryId))
    : located.filter((e) => Buffer.from(e.subjectHash).equals(Buffer.from(row.subjectHash)));
  if (own.length > 0) throw new LetheError('validation_failed', `ids: ${own.length} id(s) are the erased subject's own entries (already unreadable)`);
  const live = await res.keys.states(located.map((e) => e.keyId));
  const dead = located.filter((e) => !live.has(e.keyId));
  if (dead.length > 0) throw new LetheError('validation_failed', `ids: ${dead.length} id(s) are already unreadable (their key was destroyed)`);
  const notNamed = (state: ErasureState): string[] => {
    const others = unnamed(state, unique);
    if (others.length > 0 && !override) {
      throw new LetheError(
        'not_a_match',
        `ids: ${others.join(', ')} ${others.length === 1 ? 'was' : 'were'} not named by the erasure's last probe: a redaction takes only the records it named (an admin may override with a reason)`,
      );
    }
    return others;
  };
  const others = notNamed(parseState(row.state));
  const orderedAt = new Date().toISOString();
  await reopenErasure(res, erasureId, {
    step: 'redact',
    run: REDACTION_RUN,
    update: (state) => {
      // the probe may have run again since: checked again under the lock
      notNamed(state);
      state.pendingRedaction = unique;
      state.redactions = [...(state.redactions ?? []), { ids: unique, orderedAt }];
    },
    detail: `redaction of ${unique.length} record(s) ordered by ${actor.role}${override ? ' (an admin override: records the last probe did not name)' : ''}`,
    ...(override
      ? {
          audit: {
            actor: actor.role,
            action: 'erasure.redaction.override' as const,
            detail: {
              erasureId,
              records: unique.length,
              unnamed: others.length,
              reason: override.reason,
              ...(actor.principal ? { principal: actor.principal } : {}),
            },
          },
        }
      : {}),
  });
}
