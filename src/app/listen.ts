/**
 * A replica that listens: its destruction cursor (started at the ledger's end before
 * anything else, so what is destroyed later is read past it), its heartbeat, the
 * other replicas' events, and the periodic backup propagation and ledger anchor checks.
 */
import type { Config } from '../config/index.js';
import type { Db } from '../db/client.js';
import type { Logger } from '../observability/logger.js';
import { DestructionCursor } from '../vault/catch-up.js';
import { ReplicaPresence } from './replica.js';
import { applyCaughtUp, handleReplicaEvents, type Parts } from './subscribers.js';
import type { Wired } from './wire.js';

export interface Listening {
  readonly presence: ReplicaPresence;
  /** Stops the periodic propagation (first: it calls the backups, which close before the rest). */
  quiet(): void;
  stop(): Promise<void>;
}

export async function listen(
  l: { config: Config; db: Db; logger: Logger; parts: Parts & { events: Wired['events'] }; onPresence: (presence: ReplicaPresence) => void },
  w: Pick<Wired, 'heartbeats' | 'erasures' | 'events' | 'vectors' | 'statistics' | 'backups'>,
): Promise<Listening> {
  const cursor = new DestructionCursor({ db: l.db.db, apply: applyCaughtUp(l.parts) });
  await cursor.start();
  const presence = new ReplicaPresence({
    replicaId: w.erasures.replica,
    cursor,
    heartbeats: w.heartbeats,
    listener: () => w.events.listener,
    rebuilding: () => w.vectors.rebuilding,
    logger: l.logger,
  });
  l.onPresence(presence);
  handleReplicaEvents(l.parts, () => presence.catchUp());
  const unlisten = await w.events.listen(l.db);
  // heartbeats from here on: the start-up rebuild shows as `index: rebuilding`
  presence.start();
  w.statistics?.start();
  // destructions this replica did not see through its own event (another replica
  // crashed mid-propagation, a key destroyed by the CLI) reach the manifests here
  w.backups.propagateSoon();
  const catchUp = setInterval(() => w.backups.propagateSoon(), l.config.backupPropagateSeconds * 1000);
  catchUp.unref();
  await w.backups.startAnchorChecks(l.config.ledgerCheckSeconds * 1000);
  return {
    presence,
    quiet() {
      clearInterval(catchUp);
    },
    async stop() {
      await presence.stop();
      await unlisten().catch(() => {});
    },
  };
}
