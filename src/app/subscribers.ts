/**
 * Who hears what, in one place: the in-process subscribers to the vault's key
 * destruction event, the check every key creation runs, and the handlers of other
 * replicas' events. Each module exposes what it does on the news; only here are
 * they connected.
 */
import { describeError } from '../observability/logger.js';
import { embeddingsOfEvent } from '../vectors/embeddings.js';
import type { App } from './app.js';

export type Parts = Pick<App, 'keys' | 'destructions' | 'vectors' | 'log' | 'backups' | 'erasures' | 'cache' | 'provider' | 'metrics' | 'logger'>;

/**
 * A key destruction, wherever it was committed:
 * - its sealed embeddings go in the destruction's own transaction (vectors), and so
 *   do the queue rows of its entries not indexed yet (log: they are never indexed);
 * - the index drops its vectors on every replica (vectors);
 * - the backups that hold it learn of it now (backups; the replica that destroyed
 *   the key writes the manifests, the periodic catch-up covers a crash in between).
 * And no key is created for a subject while its erasure is open, nor after it erased
 * the subject until an admin reinstates it (erasure). A released lease wakes the
 * subject's erasure waiting for its leases (erasure).
 */
export function subscribe(app: Parts): void {
  app.destructions.within((tx, keyIds) => app.vectors.deleteSealedUnder(tx, keyIds));
  app.destructions.within((tx, keyIds) => app.log.dropQueuedUnder(tx, keyIds));
  app.destructions.subscribe((keyIds, origin) => {
    for (const keyId of keyIds) app.vectors.removeKey(keyId);
    if (origin === 'local') app.backups.propagateSoon(keyIds);
  });
  app.keys.guardCreation((tx, subjectHash) => app.erasures.refuseKeyCreation(tx, subjectHash), app.erasures.keyCreationRefusals);
  // a released lease: the subject's erasure waiting at drain_leases looks again now (a lost wake only delays it to the lease's expiry)
  app.keys.onLeaseReleased((subjectHash) =>
    app.erasures
      .leasesReleased(subjectHash)
      .catch((e: unknown) => app.logger.warn({ err: describeError(e) }, 'could not wake an erasure after a lease release')),
  );
}

/**
 * What this replica does with destructions its destruction cursor read from the
 * ledger (src/vault/catch-up.ts): each key's cached DEK goes, and a destruction not
 * published here yet (its notification missed) is published now — the indexes drop
 * its records.
 */
export function applyCaughtUp(app: Pick<Parts, 'cache' | 'metrics' | 'logger' | 'destructions' | 'vectors'>): (keyIds: readonly string[]) => Promise<void> {
  const { cache, metrics, logger } = app;
  return async (keyIds) => {
    let dropped = 0;
    for (const keyId of keyIds) if (cache.dropKey(keyId)) dropped++;
    if (dropped > 0) metrics.dekCacheInvalidations.inc({ source: 'catch-up' }, dropped);
    metrics.dekCacheEntries.set(cache.size);
    const missed = app.destructions.caughtUp(keyIds);
    if (missed > 0) logger.warn({ missed }, 'applied key destructions read from the ledger: their notifications were missed');
    // applied means out of the answers and out of native memory too: the graph's copies of the removed vectors overwritten
    if (keyIds.length > 0) await app.vectors.scrubbed();
  };
}

/**
 * What this replica does with the other replicas' events (see vault/events.ts). On a
 * reconnect, `catchUp` reads the destruction ledger past this replica's cursor (no
 * full DEK cache clear, no rebuild), and the index is reconciled against the stored
 * rows (embeddings other replicas wrote meanwhile are loaded).
 */
export function handleReplicaEvents(app: Parts & { events: App['events'] }, catchUp: () => Promise<void>): void {
  const { events, cache, metrics, logger } = app;
  events.on('key', (event) => {
    if (typeof event.keyId !== 'string') return;
    const keyId = event.keyId;
    // fenced, unfenced or destroyed: a cached DEK is stale either way
    if (cache.dropKey(keyId)) metrics.dekCacheInvalidations.inc({ source: 'notification' });
    metrics.dekCacheEntries.set(cache.size);
    void app.destructions.heard(keyId).catch((e: unknown) => logger.warn({ err: describeError(e) }, 'could not check a key after a notification'));
    // a destruction's seq is read from the ledger: the cursor moves (and the heartbeat says so) at once, not at its next tick
    void catchUp();
  });
  events.on('epoch', (event) => {
    if (typeof event.epoch === 'number' && Number.isSafeInteger(event.epoch)) app.provider.forget(event.epoch);
  });
  events.on('embeddings', (event) => app.vectors.loadWritten(embeddingsOfEvent(event)));
  // the erasure events streams' watchers wake on every replica's transitions (this one's included)
  events.on('erasure', (event) => {
    if (typeof event.erasureId === 'string') app.erasures.watchers.heard(event.erasureId);
  });
  app.erasures.watchers.hearNotifications();
  events.onReconnect(() => {
    logger.warn('catching up on key destructions and reconciling the search index: notifications may have been missed');
    void catchUp()
      .then(() => app.vectors.reconcile())
      .catch((e: unknown) => logger.error({ err: describeError(e) }, 'search index reconcile failed'));
    app.erasures.watchers.wakeAll('reconnect');
  });
}
