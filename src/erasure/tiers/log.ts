/** The episodic log: frames under the subject's key. Erased by the key's destruction (every copy, every version). */
import type { LogService } from '../../log/service.js';
import type { KeyDestructions } from '../../vault/destructions.js';
import type { ProbeFinding, Tier } from './port.js';

export function logTier(d: { log: LogService; destructions: KeyDestructions }): Tier {
  return {
    name: 'log',
    async contributions(scope) {
      if (scope.entryIds) return scope.entryIds.length;
      return scope.keyId ? d.log.countByKey(scope.keyId) : 0;
    },
    async erase(scope) {
      if (scope.entryIds) {
        const removed = await d.log.countErasedOf(scope.entryIds);
        const left = await d.log.countReadableOf(scope.entryIds);
        return { removed, left, detail: `${removed} entr${removed === 1 ? 'y' : 'ies'} unreadable (their record keys went with the subject's old key)` };
      }
      const destroyed = scope.keyId !== null && (await d.destructions.get(scope.keyId)) !== undefined;
      const removed = destroyed && scope.keyId ? await d.log.countByKey(scope.keyId) : 0;
      const left = await d.log.countReadable(scope.subjectHash);
      return { removed, left, detail: `${removed} entr${removed === 1 ? 'y' : 'ies'} unreadable` };
    },
    async probe(_scope, query) {
      const ids = query.records.filter((r) => r.type === 'entry').map((r) => r.id);
      const out: ProbeFinding[] = [];
      for (const [id, e] of await d.log.readMany(ids)) out.push({ kind: 'text', id, tier: 'log', text: e.text });
      return out;
    },
  };
}
