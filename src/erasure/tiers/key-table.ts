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
      if (scope.keyId) await d.keys.destroyKey(scope.keyId, { reason: `erasure ${scope.erasureId}`, actor: 'erasure' });
      const removed = scope.keyId && (await d.destructions.get(scope.keyId)) ? 1 : 0;
      const left = (await d.keys.liveKeyOf(scope.subjectHash)) ? 1 : 0;
      return { removed, left, detail: scope.keyId ? `key ${scope.keyId} destroyed` : 'no live key' };
    },
    async probe(scope) {
      const k = await d.keys.liveKeyOf(scope.subjectHash);
      return k ? [{ kind: 'live-key' as const, keyId: k.keyId }] : [];
    },
  };
}
