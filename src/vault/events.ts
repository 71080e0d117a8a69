/**
 * Replica invalidation over PostgreSQL LISTEN/NOTIFY. A replica that destroys or
 * fences a key, or retires an epoch, notifies inside the same transaction (delivered
 * on commit); every replica drops its cached copy. When the listening connection is
 * lost and re-established, notifications may have been missed, so the whole DEK cache
 * is dropped. The cache's age bound limits staleness even if notifications fail.
 */
import { sql } from 'drizzle-orm';
import { type Db, EVENTS_CHANNEL, type Executor } from '../db/client.js';
import type { KeyProvider } from '../keyprovider/provider.js';
import type { Metrics } from '../observability/metrics.js';
import type { Logger } from '../observability/logger.js';
import type { DekCache } from './cache.js';

export type VaultEvent =
  | { readonly t: 'key'; readonly keyId: string }
  | { readonly t: 'epoch'; readonly epoch: number }
  /** A record's sealed embedding was written: other replicas load it into their index. */
  | { readonly t: 'embedding'; readonly id: string };

/** What else a replica does with notifications besides dropping cached keys (the search index). */
export interface EventHooks {
  onKeyChanged?(keyId: string): void;
  onEmbedding?(recordId: string): void;
  onReconnect?(): void;
}

export async function notify(exec: Executor, event: VaultEvent): Promise<void> {
  await exec.execute(sql`select pg_notify(${EVENTS_CHANNEL}, ${JSON.stringify(event)})`);
}

export async function listenForInvalidations(deps: {
  db: Db;
  cache: DekCache;
  provider: KeyProvider;
  metrics: Metrics;
  logger: Logger;
  hooks?: EventHooks;
}): Promise<() => Promise<void>> {
  const { cache, provider, metrics, logger, hooks } = deps;
  return deps.db.listen(
    EVENTS_CHANNEL,
    (payload) => {
      let event: VaultEvent;
      try {
        event = JSON.parse(payload) as VaultEvent;
      } catch {
        logger.warn('ignoring a malformed invalidation notification');
        return;
      }
      if (event.t === 'key' && typeof event.keyId === 'string') {
        if (cache.dropKey(event.keyId)) metrics.dekCacheInvalidations.inc({ source: 'notification' });
        metrics.dekCacheEntries.set(cache.size);
        hooks?.onKeyChanged?.(event.keyId);
      } else if (event.t === 'epoch' && Number.isSafeInteger(event.epoch)) {
        provider.forget(event.epoch);
      } else if (event.t === 'embedding' && typeof event.id === 'string') {
        hooks?.onEmbedding?.(event.id);
      }
    },
    () => {
      logger.warn('invalidation listener reconnected: dropping the whole DEK cache');
      cache.clear();
      metrics.dekCacheEntries.set(0);
      hooks?.onReconnect?.();
    },
  );
}
