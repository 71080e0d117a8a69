/** Backups: ciphertext copies that must learn of the destroyed keys (through the backup bucket's ledger chain, folded into their manifests). */
import type { BackupService } from '../../backups/service.js';
import type { KeyDestructions } from '../../vault/destructions.js';
import type { Tier } from './port.js';

export function backupsTier(d: { backups: BackupService; destructions: KeyDestructions }): Tier {
  return {
    name: 'backups',
    async contributions(scope) {
      return scope.keyId ? d.backups.holding(scope.keyId) : 0;
    },
    async erase(scope) {
      const keyIds = [...new Set([...(scope.keyId ? [scope.keyId] : []), ...(scope.otherKeys ?? [])])];
      const destroyed = (await d.destructions.ledger(keyIds)).map((r) => r.keyId);
      const written = destroyed.length ? await d.backups.propagate({ keyIds: destroyed }) : { records: 0, backups: 0, keys: 0 };
      const listed = scope.keyId ? await d.backups.holding(scope.keyId) : 0;
      const marked = scope.keyId ? await d.backups.marked(scope.keyId) : 0;
      const held = destroyed.length ? await d.backups.holdingAny(destroyed) : 0;
      return { removed: marked, left: Math.max(0, listed - marked), detail: `${held} backup(s) hold the destroyed keys and learn of them through the ledger chain (${written.records} chain record(s) written now, no manifest rewritten)` };
    },
    async probe() {
      // backups hold ciphertext only; what they still allow (wrapped copies until the epoch retires) is a residual
      return [];
    },
  };
}
