/** What the indexer's operation files share: its limits, options and results, and the context the façade (indexer.ts) hands each of them. */
import type { SealedCache } from '../storage/sealed-cache.js';
import type { LogDeps } from './deps.js';

/** Queue rows one claim takes (a writer's segment holds up to ~255 entries of 512 B). */
export const BATCH = 256;
/** Texts per embedder call (the seal workers' too). */
export { EMBED_CHUNK } from '../vectors/sealing.js';
/** How long a claim holds its rows; a worker that has not committed by then loses them to the next claim. */
export const CLAIM_SECONDS = 30;
/** Failed attempts of a batch retried at once, before the backoff. */
export const FREE_RETRIES = 2;
/** The longest a batch that failed waits before it is claimed again. */
export const MAX_BACKOFF_SECONDS = 300;
/** How often an idle worker looks at the queue (a registration on this replica wakes it at once). */
export const POLL_MS = 500;
/** Batches a replica works on at once: the store and the database answer one while the other is sealed. */
export const CONCURRENCY = 2;

/** Why the indexer refused an entry: the class and the top-level field, never anything of the content. */
export type Refusal = 'frame_unopened' | 'segment_missing' | `payload_refused:${string}`;

export interface IndexerOptions {
  readonly batchSize?: number;
  /** Batches one replica works on at once (default CONCURRENCY): one fetches and seals while another commits. */
  readonly concurrency?: number;
  readonly claimSeconds?: number;
  readonly pollMs?: number;
  /** Tests: runs after a batch is sealed, before its commit (throw: the batch fails). */
  readonly afterSeal?: () => void | Promise<void>;
  /** Tests: runs inside the commit's transaction after the embeddings' insert (throw: it rolls back). */
  readonly beforeCommit?: () => void | Promise<void>;
  /** Tests: runs after a batch's commit, before this replica publishes its vectors. */
  readonly afterCommit?: () => void | Promise<void>;
  /** LETHE_FAILPOINT (tests): `indexer-sealed`, `indexer-inserted` kill the process there. */
  readonly failpoint?: (name: string) => void;
}

/** What the indexer works with: the log's own dependencies (deps.ts). */
/** The log's, and the cache of sealed frames reads consult (the frames indexed are filled in). */
export type IndexerDeps = LogDeps & { readonly frames?: SealedCache | undefined };

export interface Claimed {
  entry_id: string;
  key_id: string;
  seq: number;
  segment: string;
  frame_offset: number;
  frame_length: number;
  wrapped_key: Uint8Array | null;
}

export interface QueueStatus {
  /** Entries waiting (claimed or not). */
  readonly queued: number;
  /** Age of the oldest, in seconds; 0 when none waits. */
  readonly lagSeconds: number;
}

/** The outcome of one batch. */
export interface BatchResult {
  readonly claimed: number;
  readonly indexed: number;
  readonly refused: number;
  /** Left to be claimed again (the key moved meanwhile, the store did not answer). */
  readonly released: number;
}

/** What the Indexer façade hands its operation files (indexer-*.ts): its deps, options and every piece of its state. */
export interface IndexerContext {
  readonly d: IndexerDeps;
  readonly o: Required<Pick<IndexerOptions, 'batchSize' | 'claimSeconds' | 'pollMs' | 'concurrency'>> & IndexerOptions;
  /** Names this replica's claims (with a counter: one per batch). */
  readonly replica: string;
  claims: number;
  running: boolean;
  loop: Promise<void> | undefined;
  readonly wakers: Set<() => void>;
  woken: boolean;
  lastPassAt: Date | undefined;
  /** Batches between their commit's start and their vectors published: what `waitIndexed` waits for once the queue reads drained. */
  readonly publishing: Set<Promise<unknown>>;
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
