/** Backups' part of an erasure: ciphertext copies that must learn of the destroyed keys (through the backup bucket's ledger chain, folded into their manifests). */
import type { Erasable, ErasureScope, ErasureTarget } from '../erasable.js';
import type { KeyDestructions } from '../vault/destructions.js';
import type { KeyService } from '../vault/keys.js';
import type { BackupService } from './service.js';

export interface BackupsErasableDeps {
  readonly backups: BackupService;
  readonly destructions: KeyDestructions;
  readonly keys: Pick<KeyService, 'keysOf'>;
}

const sameHash = (a: Uint8Array | null, b: Uint8Array) => a !== null && Buffer.from(a).equals(b);

/**
 * The subject's keys the erasure takes: its key; erasing the whole subject, its live
 * keys too (head and shards: at classification none is destroyed yet); and the keys of
 * the subject it destroyed (`otherKeys` also lists version keys and other subjects'
 * keys, whose backups hold none of the subject: left out, by the ledger's subject).
 */
async function subjectKeysOf(d: BackupsErasableDeps, target: ErasureTarget & Pick<ErasureScope, 'otherKeys'>): Promise<string[]> {
  const live = target.kind === 'subject' ? (await d.keys.keysOf(target.subjectHash)).map((k) => k.keyId) : [];
  const destroyed = (await d.destructions.ledger(target.otherKeys ?? [])).filter((r) => sameHash(r.subjectHash, target.subjectHash)).map((r) => r.keyId);
  return [...new Set([...(target.keyId ? [target.keyId] : []), ...live, ...destroyed])];
}

export function backupsErasable(d: BackupsErasableDeps): Erasable {
  // the backups listing a key of the subject that no stored chain record marks destroyed yet
  const readable: Erasable['readable'] = async (scope) => d.backups.unmarkedAny(await subjectKeysOf(d, scope));
  return {
    name: 'backups',
    // the backups listing any key of the subject, each counted once (a backup may hold the head and shards)
    async contributions(target) {
      return d.backups.holdingAny(await subjectKeysOf(d, target));
    },
    readable,
    async erase(scope) {
      const keyIds = [...new Set([...(scope.keyId ? [scope.keyId] : []), ...(scope.otherKeys ?? [])])];
      const destroyed = (await d.destructions.ledger(keyIds)).map((r) => r.keyId);
      const written = destroyed.length ? await d.backups.propagate({ keyIds: destroyed }) : { records: 0, backups: 0, keys: 0 };
      const mine = await subjectKeysOf(d, scope);
      const left = await d.backups.unmarkedAny(mine);
      const held = destroyed.length ? await d.backups.holdingAny(destroyed) : 0;
      return {
        // the backups holding the subject's keys that learned of every one of them
        removed: Math.max(0, (await d.backups.holdingAny(mine)) - left),
        left,
        detail: `${held} backup(s) hold the destroyed keys and learn of them through the ledger chain (${written.records} chain record(s) written now, no manifest rewritten)`,
      };
    },
    async probe() {
      // backups hold ciphertext only; what they still allow (wrapped copies until the epoch retires) is a residual
      return [];
    },
  };
}
