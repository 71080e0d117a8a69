/** Backups' part of an erasure: ciphertext copies that must learn of the destroyed keys (through the backup bucket's ledger chain, folded into their manifests). */
import type { Erasable } from '../erasable.js';
import type { KeyDestructions } from '../vault/destructions.js';
import type { BackupService } from './service.js';

export function backupsErasable(d: { backups: BackupService; destructions: KeyDestructions }): Erasable {
  // the backups listing the subject's key that no record marks destroyed yet
  const readable: Erasable['readable'] = async (scope) =>
    scope.keyId ? Math.max(0, (await d.backups.holding(scope.keyId)) - (await d.backups.marked(scope.keyId))) : 0;
  return {
    name: 'backups',
    async contributions(target) {
      return target.keyId ? d.backups.holding(target.keyId) : 0;
    },
    readable,
    async erase(scope) {
      const keyIds = [...new Set([...(scope.keyId ? [scope.keyId] : []), ...(scope.otherKeys ?? [])])];
      const destroyed = (await d.destructions.ledger(keyIds)).map((r) => r.keyId);
      const written = destroyed.length ? await d.backups.propagate({ keyIds: destroyed }) : { records: 0, backups: 0, keys: 0 };
      const marked = scope.keyId ? await d.backups.marked(scope.keyId) : 0;
      const held = destroyed.length ? await d.backups.holdingAny(destroyed) : 0;
      return {
        removed: marked,
        left: await readable(scope),
        detail: `${held} backup(s) hold the destroyed keys and learn of them through the ledger chain (${written.records} chain record(s) written now, no manifest rewritten)`,
      };
    },
    async probe() {
      // backups hold ciphertext only; what they still allow (wrapped copies until the epoch retires) is a residual
      return [];
    },
  };
}
