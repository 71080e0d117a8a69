/**
 * Who hears what, in one place: the in-process subscribers to the vault's key
 * destruction event, the check every key creation runs, and the handlers of other
 * replicas' events. Each module exposes what it does on the news; only here are
 * they connected.
 */
import { describeError } from '../observability/logger.js';
import { embeddingsOfEvent } from '../vectors/embeddings.js';
import type { App } from './open.js';

type Parts = Pick<App, 'keys' | 'destructions' | 'vectors' | 'backups' | 'erasures' | 'cache' | 'provider' | 'metrics' | 'logger'>;

/**
 * A key destruction, wherever it was committed:
 * - its sealed embeddings go in the destruction's own transaction (vectors);
 * - the index drops its vectors on every replica (vectors);
 * - the backups that hold it learn of it now (backups; the replica that destroyed
 *   the key writes the manifests, the periodic catch-up covers a crash in between).
 * And no key is created for a subject while its erasure is open (erasure).
 */
export function subscribe(app: Parts): void {
  app.destructions.within((tx, keyIds) => app.vectors.deleteSealedUnder(tx, keyIds));
  app.destructions.subscribe((keyIds, origin) => {
    for (const keyId of keyIds) app.vectors.removeKey(keyId);
    if (origin === 'local') app.backups.propagateSoon(keyIds);
  });
  app.keys.guardCreation((tx, subjectHash) => app.erasures.refuseKeyWhileOpen(tx, subjectHash));
}

/** What this replica does with the other replicas' events (see vault/events.ts). */
export function handleReplicaEvents(app: Parts & { events: App['events'] }): void {
  const { events, cache, metrics, logger } = app;
  events.on('key', (event) => {
    if (typeof event.keyId !== 'string') return;
    const keyId = event.keyId;
    // fenced, unfenced or destroyed: a cached DEK is stale either way
    if (cache.dropKey(keyId)) metrics.dekCacheInvalidations.inc({ source: 'notification' });
    metrics.dekCacheEntries.set(cache.size);
    void app.destructions.heard(keyId).catch((e: unknown) => logger.warn({ err: describeError(e) }, 'could not check a key after a notification'));
  });
  events.on('epoch', (event) => {
    if (typeof event.epoch === 'number' && Number.isSafeInteger(event.epoch)) app.provider.forget(event.epoch);
  });
  events.on('embeddings', (event) => app.vectors.loadWritten(embeddingsOfEvent(event)));
  events.onReconnect(() => {
    logger.warn('dropping the whole DEK cache and rebuilding the search index: notifications may have been missed');
    cache.clear();
    metrics.dekCacheEntries.set(0);
    void app.vectors.rebuild().catch((e: unknown) => logger.error({ err: describeError(e) }, 'search index rebuild failed'));
  });
}
