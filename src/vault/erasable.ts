/** The key table's part of an erasure: the subject's wrapped DEK, erased by destroying the key (row gone, ledger row, replicas told). */
import type { Erasable } from '../erasable.js';
import type { KeyDestructions } from './destructions.js';
import type { KeyService } from './keys.js';

export function keyTableErasable(d: { keys: KeyService; destructions: KeyDestructions }): Erasable {
  const destroyed = async (keyId: string | null) => (keyId && (await d.destructions.get(keyId)) ? 1 : 0);
  const readable: Erasable['readable'] = async (scope) => {
    switch (scope.kind) {
      case 'subject':
        return (await d.keys.keysOf(scope.subjectHash)).length;
      case 'records':
        // the subject lives on under a new key; only the key the records were under must be gone
        return scope.keyId && (await d.keys.states([scope.keyId])).has(scope.keyId) ? 1 : 0;
    }
  };
  return {
    name: 'key-table',
    async contributions(target) {
      return target.keyId ? 1 : 0;
    },
    readable,
    async erase(scope) {
      switch (scope.kind) {
        case 'subject':
          if (scope.keyId) await d.keys.destroyKey(scope.keyId, { reason: `erasure ${scope.erasureId}`, actor: 'erasure' });
          return { removed: await destroyed(scope.keyId), left: await readable(scope), detail: scope.keyId ? `key ${scope.keyId} destroyed` : 'no live key' };
        case 'records':
          // the destroy step re-keyed the subject (the log's re-key destroys the old key)
          return {
            removed: await destroyed(scope.keyId),
            left: await readable(scope),
            detail: scope.keyId ? `key ${scope.keyId} destroyed; the subject lives on under a new key` : 'no live key',
          };
      }
    },
    async probe(target) {
      // a living subject (forgetting some of its records) has a live key, rightly
      if (target.kind === 'records') return [];
      return (await d.keys.keysOf(target.subjectHash)).map((k) => ({ kind: 'live-key' as const, keyId: k.keyId }));
    },
  };
}
