/**
 * Dismissing probe matches (POST /v1/erasures/{id}/dismissals): a person rules that a
 * record the probe named does not carry the erased subject's content. The ruling —
 * record id, role, time, reason — is kept in the erasure's state, signed into the
 * certificate and shown in the report as a stated human judgement; the erasure is
 * re-opened at `probe`, which scores again without the dismissed records.
 *
 * Refused (409) while the erasure runs, after it failed, once its fingerprints are
 * gone, for a record the last probe did not name as a match, and for the erased
 * subject's own records.
 */
import { LetheError } from '../errors.js';
import { isId } from '../ids.js';
import { DISMISSAL_RUN } from './machine.js';
import { assertReopenable, reopenErasure } from './reopen.js';
import type { DismissalRequest } from './request.js';
import type { ErasureResources } from './resources.js';
import { parseState } from './state.js';

export async function dismissMatches(res: ErasureResources, erasureId: string, request: DismissalRequest, role: string): Promise<void> {
  const byId = new Map<string, string>();
  for (const m of request.matches) {
    if (byId.has(m.id)) throw new LetheError('validation_failed', `matches: ${m.id} is named twice`);
    byId.set(m.id, m.reason);
  }
  const row = await res.records.row(erasureId);
  assertReopenable(row, 'dismissal');
  const entries = [...byId.keys()].filter((id) => isId('entry', id));
  const own = (await res.log.locate(entries)).filter((e) => Buffer.from(e.subjectHash).equals(Buffer.from(row.subjectHash)));
  if (own.length > 0) throw new LetheError('conflict', `matches: ${own.length} id(s) are the erased subject's own records; they cannot be dismissed`);
  const state = parseState(row.state);
  const named = new Set((state.probe?.matches ?? []).map((m) => m.id));
  const unnamed = [...byId.keys()].filter((id) => !named.has(id));
  if (unnamed.length > 0) throw new LetheError('conflict', `matches: ${unnamed.length} id(s) were not named as matches by the erasure's last probe`);
  const at = new Date().toISOString();
  await reopenErasure(res, erasureId, {
    step: 'probe',
    run: DISMISSAL_RUN,
    update: (s) => {
      s.dismissals = [...(s.dismissals ?? []), ...[...byId].map(([id, reason]) => ({ id, role, at, reason }))];
    },
    detail: `${byId.size} probe match(es) dismissed by ${role}`,
  });
}
