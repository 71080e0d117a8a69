/**
 * Prometheus metrics, one registry per service instance (tests run several in one
 * process). Labels never carry key ids, subject ids or tokens.
 */
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';

export interface Metrics {
  readonly registry: Registry;
  readonly httpRequests: Counter<'method' | 'route' | 'status'>;
  readonly httpDuration: Histogram<'method' | 'route'>;
  readonly leases: Counter<'outcome'>;
  readonly keysCreated: Counter;
  readonly keysDestroyed: Counter;
  readonly dekCacheEntries: Gauge;
  readonly dekCacheLookups: Counter<'result'>;
  readonly dekCacheInvalidations: Counter<'source'>;
  readonly rewrapped: Counter;
  readonly indexVectors: Gauge;
  /** Age of the oldest entry waiting in the indexing queue (0 when empty); read at scrape through `searchQueueSource`. */
  readonly searchLag: Gauge;
  /** Entries waiting in the indexing queue; read at scrape with `searchLag`. */
  readonly searchQueued: Gauge;
  /** Where the two gauges above read the queue (the log's indexer sets it; unset: they stay 0). */
  searchQueueSource: (() => Promise<{ readonly queued: number; readonly lagSeconds: number }>) | undefined;
  /** Per entry, from its enqueueing to its embedding published on the replica that indexed it. */
  readonly searchIndexDelay: Histogram;
  /** Writer-registered entries the indexer refused (the frame did not open, or the payload broke the entry schema), by reason. */
  readonly entriesRefused: Counter<'reason'>;
  readonly artifactsWritten: Counter<'operation'>;
  /** Erasure step attempts that failed and will be retried, by step and kind (unavailable, database, deadline, conflict, other). */
  readonly erasureStepRetries: Counter<'step' | 'kind'>;
  readonly erasureWatchers: Gauge;
  readonly erasureWatcherRefreshes: Counter<'cause'>;
  readonly erasureStreams: Gauge;
  /** Provisional certificates the finalizer refused to sign final (the erasure disagreed with what was signed and audited), by reason. */
  readonly certificateRefusals: Counter<'reason'>;
  /** Rejections of dropped connections nothing waited for, which the serving process carried on past, by origin (src/app/rejections.ts). */
  readonly orphanedRejections: Counter<'origin'>;
  /** 1 while the backup bucket's ledger chain lacks a record this database stored or its head was rolled back (src/backups/anchor.ts). */
  readonly ledgerChainCut: Gauge;
}

export function createMetrics(options: { defaultMetrics?: boolean } = {}): Metrics {
  const registry = new Registry();
  if (options.defaultMetrics) collectDefaultMetrics({ register: registry, prefix: 'lethe_' });
  const registers = [registry];
  // the queue is read once per scrape for both gauges (a failed read leaves the last values)
  let queueRead: Promise<{ queued: number; lagSeconds: number } | undefined> | undefined;
  const readQueue = (): Promise<{ queued: number; lagSeconds: number } | undefined> => {
    queueRead ??= (metrics.searchQueueSource?.() ?? Promise.resolve(undefined))
      .catch(() => undefined)
      .finally(() => setImmediate(() => (queueRead = undefined)));
    return queueRead;
  };
  const metrics: Metrics = {
    registry,
    httpRequests: new Counter({
      name: 'lethe_http_requests_total',
      help: 'HTTP requests by method, route pattern and status',
      labelNames: ['method', 'route', 'status'],
      registers,
    }),
    httpDuration: new Histogram({
      name: 'lethe_http_request_duration_seconds',
      help: 'HTTP request duration by method and route pattern',
      labelNames: ['method', 'route'],
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers,
    }),
    leases: new Counter({ name: 'lethe_key_leases_total', help: 'Key lease requests by outcome', labelNames: ['outcome'], registers }),
    keysCreated: new Counter({ name: 'lethe_keys_created_total', help: 'Subject keys created', registers }),
    keysDestroyed: new Counter({ name: 'lethe_keys_destroyed_total', help: 'Subject keys destroyed by this replica', registers }),
    dekCacheEntries: new Gauge({ name: 'lethe_dek_cache_entries', help: 'DEKs held in the in-memory cache', registers }),
    dekCacheLookups: new Counter({
      name: 'lethe_dek_cache_lookups_total',
      help: 'DEK cache lookups by result',
      labelNames: ['result'],
      registers,
    }),
    dekCacheInvalidations: new Counter({
      name: 'lethe_dek_cache_invalidations_total',
      help: 'Cached DEKs dropped because a key was destroyed or fenced (source: local or replica notification)',
      labelNames: ['source'],
      registers,
    }),
    rewrapped: new Counter({ name: 'lethe_dek_rewrapped_total', help: 'DEKs re-wrapped under a new KEK epoch', registers }),
    indexVectors: new Gauge({ name: 'lethe_index_vectors', help: 'Vectors in the in-memory search index', registers }),
    searchLag: new Gauge({
      name: 'lethe_search_lag_seconds',
      help: 'Age of the oldest writer-registered entry not yet searchable (waiting in the indexing queue); 0 when the queue is empty',
      registers,
      async collect() {
        const q = await readQueue();
        if (q) this.set(q.lagSeconds);
      },
    }),
    searchQueued: new Gauge({
      name: 'lethe_search_queue_entries',
      help: 'Writer-registered entries waiting in the indexing queue (not yet searchable)',
      registers,
      async collect() {
        const q = await readQueue();
        if (q) this.set(q.queued);
      },
    }),
    searchQueueSource: undefined,
    searchIndexDelay: new Histogram({
      name: 'lethe_search_index_delay_seconds',
      help: 'Per entry, from its registration (enqueued) to its embedding published in the index of the replica that indexed it',
      buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300],
      registers,
    }),
    entriesRefused: new Counter({
      name: 'lethe_log_entries_refused_total',
      help: 'Writer-registered entries the indexer refused and quarantined (frame_unopened: the frame did not open under its key; payload_refused: the entry schema refused it)',
      labelNames: ['reason'],
      registers,
    }),
    artifactsWritten: new Counter({
      name: 'lethe_artifact_versions_total',
      help: 'Artifact versions by operation (write, regenerate, erase)',
      labelNames: ['operation'],
      registers,
    }),
    ...erasureMetrics(registers),
    orphanedRejections: new Counter({
      name: 'lethe_orphaned_rejections_total',
      help: 'Calls that failed when their connection dropped after nothing waited for them any more, by origin (database, object-store, kms, unknown); the process carried on',
      labelNames: ['origin'],
      registers,
    }),
    ledgerChainCut: new Gauge({
      name: 'lethe_ledger_chain_cut',
      help: "1 while the backup bucket's ledger chain lacks a record this database stored there, or its head names an older record: someone removed destruction records",
      registers,
    }),
  };
  return metrics;
}

/** The erasure engine's metrics: step retries, watchers and their reads, events streams, certificate refusals. */
function erasureMetrics(registers: Registry[]) {
  return {
    erasureStepRetries: new Counter({
      name: 'lethe_erasure_step_retries_total',
      help: 'Erasure step attempts that failed and will be retried, by step and kind of failure (unavailable, database, deadline, conflict, other)',
      labelNames: ['step', 'kind'],
      registers,
    }),
    erasureWatchers: new Gauge({
      name: 'lethe_erasure_watchers',
      help: 'Erasure watchers running on this replica (one per erasure its events streams follow)',
      registers,
    }),
    erasureWatcherRefreshes: new Counter({
      name: 'lethe_erasure_watcher_refreshes_total',
      help: 'Database reads by erasure watchers, by what woke them (start, notification, local, reconnect, poll)',
      labelNames: ['cause'],
      registers,
    }),
    erasureStreams: new Gauge({
      name: 'lethe_erasure_event_streams',
      help: 'Open erasure events streams (GET /v1/erasures/{id}/events) on this replica',
      registers,
    }),
    certificateRefusals: new Counter({
      name: 'lethe_certificate_refusals_total',
      help: 'Provisional certificates the finalizer refused to sign final because the erasure disagreed with what the vault signed and audited (signature, audit, digest, outcome): an alarm',
      labelNames: ['reason'],
      registers,
    }),
  };
}
