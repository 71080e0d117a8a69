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
  /** Records' sealed embeddings were written (record id, key id): other replicas load them into their index. */
  | { readonly t: 'embeddings'; readonly r: ReadonlyArray<readonly [string, string]> };

/** Records per embeddings notification (a NOTIFY payload is limited to 8,000 bytes). */
export const EMBEDDINGS_PER_NOTIFY = 100;

/** Tells other replicas about written embeddings, in as few notifications as fit. */
export async function notifyEmbeddings(exec: Executor, records: ReadonlyArray<{ recordId: string; keyId: string }>): Promise<void> {
  for (let i = 0; i < records.length; i += EMBEDDINGS_PER_NOTIFY) {
    const r = records.slice(i, i + EMBEDDINGS_PER_NOTIFY).map((x) => [x.recordId, x.keyId] as const);
    await notify(exec, { t: 'embeddings', r });
  }
}

/** What else a replica does with notifications besides dropping cached keys (the search index). */
export interface EventHooks {
  onKeyChanged?(keyId: string): void;
  onEmbeddings?(records: ReadonlyArray<readonly [string, string]>): void;
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
      } else if (event.t === 'embeddings' && Array.isArray(event.r)) {
        hooks?.onEmbeddings?.(event.r.filter((x) => Array.isArray(x) && typeof x[0] === 'string' && typeof x[1] === 'string'));
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
