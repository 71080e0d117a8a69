/**
 * What every backup operation works with: lethe's database, the vault services keys
 * are read through, and the two buckets. The façade (service.ts) builds it once from
 * its constructor's deps and hands it to each operation, so none takes a long list of
 * arguments and none holds state of its own.
 */
import type { ArtifactService } from '../artifacts/service.js';
import type { KeyedHasher } from '../crypto/index.js';
import type { Database } from '../db/client.js';
import type { KeyProvider } from '../keyprovider/provider.js';
import type { Logger } from '../observability/logger.js';
import type { ObjectStore } from '../storage/store.js';
import type { AuditLog } from '../vault/audit.js';
import type { KeyDestructions } from '../vault/destructions.js';
import type { KeyService } from '../vault/keys.js';
import type { VersionKeys } from '../vault/version-keys.js';
import type { Executor } from '../db/client.js';

export interface BackupContext {
  readonly db: Database;
  /** Key states for a backup's manifest; live DEKs for verify. */
  readonly keys: KeyService;
  /** Artifact-version keys, for verify. */
  readonly versionKeys: VersionKeys;
  /** Regenerates the artifacts a restore finds stale. */
  readonly artifacts: ArtifactService;
  /** Unwraps a backup's own key-table copies (verify); the epochs it holds (restore). */
  readonly provider: KeyProvider;
  /** Records a restore in the restored audit chain. */
  readonly audit: AuditLog;
  /** The live bucket: objects are copied from it and restored into it. */
  readonly live: ObjectStore;
  /** The backup bucket (or folder). */
  readonly backup: ObjectStore;
  readonly logger: Logger;
  /** Marks destructions durable once their ledger chain record is stored. */
  readonly destructions: KeyDestructions;
  /** MACs the ledger chain, its head and every manifest version (the `ledger-chain` subkey). */
  readonly ledgerMac: KeyedHasher;
  /** Object Lock retention for the ledger chain's objects, when the bucket allows it; undefined: off. */
  readonly ledgerLock: { readonly mode: 'governance' | 'compliance'; readonly days: number } | undefined;
  /** Checks the bucket's chain still holds what this database stored, and mirrors each head (anchor.ts). */
  readonly anchor: ChainAnchor;
  /** Test fault injection: kill the process at a named point (never honoured in production). */
  readonly failpoint?: ((name: string) => void) | undefined;
}

/** What the running service found when it last compared the bucket's chain with what it stored. */
export interface AnchorState {
  readonly state: 'ok' | 'cut' | 'unchecked';
  /** What is wrong, when cut: the record or head missing, replaced, or rolled back. */
  readonly problem?: string;
  readonly checkedAt: Date | null;
}

/** What the chain and the service ask of the anchor (anchor.ts `LedgerAnchor`). */
/** A point of the chain someone saw: record `seq` with MAC `mac`, in `bucket` when it says. */
export interface Witness {
  /** What saw it, for messages: "the manifest of backup …", "certificate of erasure …". */
  readonly source: string;
  readonly bucket?: string;
  readonly seq: number;
  readonly mac: string;
}

export interface ChainAnchor {
  readonly state: AnchorState;
  check(db?: Executor, options?: { sweep?: boolean }): Promise<string | undefined>;
  mirror(head: Uint8Array): Promise<void>;
  mirrored(): Promise<Witness | undefined>;
}
