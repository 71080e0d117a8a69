/**
 * Dismissing probe matches (POST /v1/erasures/{id}/dismissals): a person rules that a
 * record the probe named does not carry the erased subject's content. The ruling —
 * record id, role, time, reason — is kept in the erasure's state, signed into the
 * certificate and shown in the report as a stated human judgement; the erasure is
 * re-opened at `probe`, which scores again without the dismissed records.
 *
 * Refused (409) while the erasure runs, after it failed, once its fingerprints are
 * gone, for a record the last probe did not name as a match, and for the erased
 * subject's own records (forgetting entries: for those entries; the subject's other,
 * readable entries may be ruled on).
 */
import { LetheError } from '../errors.js';
import { isId } from '../ids.js';
import { forgottenEntries } from './forget.js';
import { DISMISSAL_RUN } from './machine.js';
import { assertReopenable, reopenErasure } from './reopen.js';
import type { DismissalRequest } from './request.js';
import type { ErasureResources } from './resources.js';
import { type ErasureState, parseState } from './state.js';
import type { ProbeMatch } from './view.js';

/** The named matches of the last probe, by id; a conflict for any id it did not name or named only as an indexed vector. */
function assertNamed(state: ErasureState, byId: ReadonlyMap<string, string>): Map<string, ProbeMatch> {
  const named = new Map((state.probe?.matches ?? []).map((m) => [m.id, m]));
  const unnamed = [...byId.keys()].filter((id) => !named.has(id));
  if (unnamed.length > 0) throw new LetheError('conflict', `matches: ${unnamed.length} id(s) were not named as matches by the erasure's last probe`);
  const stale = [...byId.keys()].filter((id) => named.get(id)!.tier === 'vector-index');
  if (stale.length > 0) {
    throw new LetheError('conflict', `matches: ${stale.length} id(s) are vectors still indexed after their key went (an index fault, not a judgement about content); they cannot be dismissed`);
  }
  return named;
}

export async function dismissMatches(res: ErasureResources, erasureId: string, request: DismissalRequest, role: string): Promise<void> {
  const byId = new Map<string, string>();
  for (const m of request.matches) {
    if (byId.has(m.id)) throw new LetheError('validation_failed', `matches: ${m.id} is named twice`);
    byId.set(m.id, m.reason);
  }
  const row = await res.records.row(erasureId);
  assertReopenable(row, 'dismissal');
  const entries = [...byId.keys()].filter((id) => isId('entry', id));
  // forgetting entries, the subject lives on: its own records are those entries alone, its others are readable records like anyone's
  const forgotten = forgottenEntries(row);
  const own = forgotten
    ? entries.filter((id) => forgotten.includes(id))
    : (await res.log.locate(entries)).filter((e) => Buffer.from(e.subjectHash).equals(Buffer.from(row.subjectHash)));
  if (own.length > 0) throw new LetheError('conflict', `matches: ${own.length} id(s) are the erased subject's own records; they cannot be dismissed`);
  const state = parseState(row.state);
  assertNamed(state, byId);
  const at = new Date().toISOString();
  await reopenErasure(res, erasureId, {
    step: 'probe',
    run: DISMISSAL_RUN,
    update: (locked) => {
      // the probe may have run again since (a redaction): the ruling stands only on matches it still names
      const named = assertNamed(locked, byId);
      locked.dismissals = [
        ...(locked.dismissals ?? []),
        ...[...byId].map(([id, reason]) => {
          const keyId = res.vectors.lexical.keyOf(id);
          return { id, role, at, reason, ruledScore: named.get(id)!.score, ...(keyId ? { keyId } : {}) };
        }),
      ];
    },
    detail: `${byId.size} probe match(es) dismissed by ${role}`,
  });
}
