/** The key table: the subject's wrapped DEK. Erased by destroying the key (row gone, ledger row, replicas told). */
import type { KeyDestructions } from '../../vault/destructions.js';
import type { KeyService } from '../../vault/keys.js';
import type { Tier } from './port.js';

export function keyTableTier(d: { keys: KeyService; destructions: KeyDestructions }): Tier {
  return {
    name: 'key-table',
    async contributions(scope) {
      return scope.keyId ? 1 : 0;
    },
    async erase(scope) {
      if (scope.entryIds) {
        // forgetting entries: the destroy step re-keyed the subject (the log's re-key destroys the old key); the subject keeps its new key
        const removed = scope.keyId && (await d.destructions.get(scope.keyId)) ? 1 : 0;
        const left = scope.keyId && (await d.keys.states([scope.keyId])).has(scope.keyId) ? 1 : 0;
        return { removed, left, detail: scope.keyId ? `key ${scope.keyId} destroyed; the subject lives on under a new key` : 'no live key' };
      }
      if (scope.keyId) await d.keys.destroyKey(scope.keyId, { reason: `erasure ${scope.erasureId}`, actor: 'erasure' });
      const removed = scope.keyId && (await d.destructions.get(scope.keyId)) ? 1 : 0;
      const left = (await d.keys.liveKeyOf(scope.subjectHash)) ? 1 : 0;
      return { removed, left, detail: scope.keyId ? `key ${scope.keyId} destroyed` : 'no live key' };
    },
    async probe(scope) {
      // a living subject (forgetting some of its entries) has a live key, rightly
      if (scope.entryIds) return [];
      const k = await d.keys.liveKeyOf(scope.subjectHash);
      return k ? [{ kind: 'live-key' as const, keyId: k.keyId }] : [];
    },
  };
}
