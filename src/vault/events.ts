/**
 * Replica events over PostgreSQL LISTEN/NOTIFY: one channel, JSON payloads tagged by
 * `t`. A replica that changes shared state (destroys or fences a key, retires an
 * epoch, writes embeddings) notifies inside the same transaction, so the event is
 * delivered on commit. Each module registers handlers for its own tags; the vault's
 * are `key` and `epoch`. When the listening connection is lost the listener is
 * `down` (and says since when); once it is re-established events may have been
 * missed: every `onReconnect` handler runs (the replica catches up from the
 * destruction ledger).
 */
import { sql } from 'drizzle-orm';
import { type Db, EVENTS_CHANNEL, type Executor } from '../db/client.js';
import type { Logger } from '../observability/logger.js';

/** An event: a tag and JSON fields. A NOTIFY payload is limited to 8,000 bytes. */
export interface ReplicaEvent {
  readonly t: string;
  readonly [field: string]: unknown;
}

export async function notify(exec: Executor, event: ReplicaEvent): Promise<void> {
  await exec.execute(sql`select pg_notify(${EVENTS_CHANNEL}, ${JSON.stringify(event)})`);
}

/** The listening connection: `up`, or `down` since a time (never listened: down since construction). */
export interface ListenerState {
  readonly state: 'up' | 'down';
  readonly since: Date;
}

export class ReplicaEvents {
  readonly #handlers = new Map<string, Array<(event: ReplicaEvent) => void>>();
  readonly #reconnect: Array<() => void> = [];
  readonly #logger: Logger;
  #listener: ListenerState = { state: 'down', since: new Date() };

  /** Whether this replica hears the others' events now. */
  get listener(): ListenerState {
    return this.#listener;
  }

  constructor(logger: Logger) {
    this.#logger = logger;
  }

  /** Runs `handler` for every event tagged `t` (its fields unchecked: handlers validate). */
  on(t: string, handler: (event: ReplicaEvent) => void): void {
    this.#handlers.set(t, [...(this.#handlers.get(t) ?? []), handler]);
  }

  /** Runs `fn` whenever the listening connection was re-established (events may have been missed). */
  onReconnect(fn: () => void): void {
    this.#reconnect.push(fn);
  }

  /** Starts listening; answers the function that stops. */
  async listen(db: Db): Promise<() => Promise<void>> {
    const stop = await db.listen(
      EVENTS_CHANNEL,
      (payload) => {
        let event: ReplicaEvent;
        try {
          event = JSON.parse(payload) as ReplicaEvent;
        } catch {
          this.#logger.warn('ignoring a malformed replica notification');
          return;
        }
        for (const handler of this.#handlers.get(String(event?.t)) ?? []) handler(event);
      },
      () => {
        this.#listener = { state: 'up', since: new Date() };
        this.#logger.warn('replica event listener reconnected: events may have been missed');
        for (const fn of this.#reconnect) fn();
      },
      () => {
        this.#listener = { state: 'down', since: new Date() };
        this.#logger.warn('replica event listener lost its connection: reconnecting');
      },
    );
    this.#listener = { state: 'up', since: new Date() };
    return async () => {
      this.#listener = { state: 'down', since: new Date() };
      await stop();
    };
  }
}
