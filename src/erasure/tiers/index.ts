/** The five tiers an erasure reaches, each built on its module's service. */
import type { ArtifactService } from '../../artifacts/service.js';
import type { BackupService } from '../../backups/service.js';
import type { LogService } from '../../log/service.js';
import type { KeyDestructions } from '../../vault/destructions.js';
import type { KeyService } from '../../vault/keys.js';
import type { Vectors } from '../../vectors/service.js';
import type { TierName } from '../machine.js';
import { artifactsTier } from './artifacts.js';
import { backupsTier } from './backups.js';
import { keyTableTier } from './key-table.js';
import { logTier } from './log.js';
import type { Tier } from './port.js';
import { vectorIndexTier } from './vector-index.js';

export interface TierDeps {
  readonly keys: KeyService;
  readonly destructions: KeyDestructions;
  readonly log: LogService;
  readonly vectors: Vectors;
  readonly artifacts: ArtifactService;
  readonly backups: BackupService;
  readonly failpoint?: ((name: string) => void) | undefined;
}

export type Tiers = Readonly<Record<TierName, Tier>>;

export function createTiers(d: TierDeps): Tiers {
  return {
    'key-table': keyTableTier(d),
    log: logTier(d),
    'vector-index': vectorIndexTier(d),
    artifacts: artifactsTier(d),
    backups: backupsTier(d),
  };
}
