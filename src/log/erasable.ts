/** The log's part of an erasure: frames under the subject's key, erased by the key's destruction (every copy, every version). */
import { sql } from 'drizzle-orm';
import { type Database, queryRows } from '../db/client.js';
import type { Erasable, ProbeFinding } from '../erasable.js';
import type { KeyDestructions } from '../vault/destructions.js';
import type { LogService } from './service.js';

const count = async (db: Database, query: ReturnType<typeof sql>) => Number((await queryRows<{ n: string | number }>(db, query))[0]?.n ?? 0);
const idList = (ids: readonly string[]) => JSON.stringify([...new Set(ids)]);

/** How many of the subject's entries are indexed under any of `keyIds`. */
function countByKeys(db: Database, subjectHash: Uint8Array, keyIds: readonly string[]): Promise<number> {
  return count(
    db,
    sql`select count(*) as n from log_entries where key_id in (select json_array_elements_text(${idList(keyIds)}::json)) and subject_hash = ${subjectHash}`,
  );
}

/** How many of the subject's entries are under its live keys (head and shards), each by its (key_id, seq) index. */
function countLive(db: Database, subjectHash: Uint8Array): Promise<number> {
  return count(
    db,
    sql`select count(*) as n from subject_keys k cross join lateral (select 1 from log_entries e where e.key_id = k.key_id) e
         where k.subject_hash = ${subjectHash}`,
  );
}

export function logErasable(d: { db: Database; log: Pick<LogService, 'readMany'>; destructions: KeyDestructions }): Erasable {
  const { db } = d;
  const readable: Erasable['readable'] = async (scope) => {
    switch (scope.kind) {
      case 'subject':
        // the subject's live keys by their index, then their entries by (key_id, seq): never a join that could read subject_keys whole
        return countLive(db, scope.subjectHash);
      case 'records':
        return count(
          db,
          sql`select count(*) as n from log_entries e cross join lateral (select 1 from subject_keys k where k.key_id = e.key_id offset 0) k
               where e.entry_id = any(array(select json_array_elements_text(${idList(scope.entryIds)}::json)))`,
        );
    }
  };
  return {
    name: 'log',
    async contributions(target) {
      if (target.kind === 'records') return target.entryIds.length;
      return target.keyId ? countLive(db, target.subjectHash) : 0;
    },
    readable,
    async erase(scope) {
      let removed: number;
      switch (scope.kind) {
        case 'subject':
          // the head and the shards this erasure destroyed
          removed =
            scope.keyId !== null && (await d.destructions.get(scope.keyId)) !== undefined
              ? await countByKeys(db, scope.subjectHash, [scope.keyId, ...(scope.otherKeys ?? [])])
              : 0;
          return { removed, left: await readable(scope), detail: `${removed} entr${removed === 1 ? 'y' : 'ies'} unreadable` };
        case 'records':
          // indexed under a destroyed key: their record keys went with the subject's old key
          removed = await count(
            db,
            sql`select count(*) as n from log_entries e
                 where e.entry_id = any(array(select json_array_elements_text(${idList(scope.entryIds)}::json)))
                   and not exists (select 1 from subject_keys k where k.key_id = e.key_id)`,
          );
          return {
            removed,
            left: await readable(scope),
            detail: `${removed} entr${removed === 1 ? 'y' : 'ies'} unreadable (their record keys went with the subject's old key)`,
          };
      }
    },
    async probe(_target, query) {
      const ids = query.records.filter((r) => r.type === 'entry').map((r) => r.id);
      const out: ProbeFinding[] = [];
      for (const [id, e] of await d.log.readMany(ids)) out.push({ kind: 'text', id, tier: 'log', text: e.text });
      return out;
    },
  };
}
