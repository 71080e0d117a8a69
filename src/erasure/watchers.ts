/**
 * The events streams' watchers: one per erasure per replica, however many streams
 * follow it. A watcher holds the erasure's timeline in memory and fans every new
 * transition out to its followers; it reads the database only when woken — by a
 * notification naming the erasure (every transition row notifies on commit, on every
 * replica), by a lost listener reconnecting, or by a slow fallback poll — so a missed
 * notification only delays. It stops when its last follower leaves, and when the
 * erasure finishes, right after fanning out the final `end`.
 */
import { describeError, type Logger } from '../observability/logger.js';
import { type ErasureStatus, TERMINAL_STATUSES } from './machine.js';
import type { ErasureTransition } from './view.js';

/** What the final `end` event carries. */
export interface ErasureEnd {
  readonly erasureId: string;
  readonly status: ErasureStatus;
  readonly class: string | null;
  readonly recovered: number;
}

export type ErasureEvent = { readonly kind: 'step'; readonly transition: ErasureTransition } | { readonly kind: 'end'; readonly end: ErasureEnd };

/** Why a watcher read the database. */
export type RefreshCause = 'start' | 'notification' | 'local' | 'reconnect' | 'poll';

/** Where a watcher reads. `transitions` answers at most a page, oldest first. */
export interface WatcherSource {
  status(erasureId: string): Promise<ErasureStatus>;
  transitions(erasureId: string, afterId: number): Promise<ErasureTransition[]>;
  end(erasureId: string): Promise<ErasureEnd>;
}

export interface WatcherOptions {
  readonly source: WatcherSource;
  readonly logger: Logger;
  /** The fallback poll: how long a watcher waits without a wake-up before it reads anyway. */
  readonly fallbackMs: number;
  /** Told the number of watchers whenever it changes (the gauge). */
  readonly onCount?: (watchers: number) => void;
  /** Told every database read and why (the counter). */
  readonly onRefresh?: (cause: RefreshCause) => void;
}

/** One stream's view of a watcher: an async iterable of events; `close()` leaves (idempotent). */
export class Follower implements AsyncIterable<ErasureEvent> {
  readonly #queue: ErasureEvent[] = [];
  #waiting: ((r: IteratorResult<ErasureEvent>) => void) | undefined;
  #closed = false;
  #leave: () => void;
  /** The last transition id queued (or the Last-Event-ID it resumed after): nothing at or below it is queued again. */
  #after: number;

  constructor(afterId: number, leave: () => void) {
    this.#after = afterId;
    this.#leave = leave;
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** Queues an event (the watcher calls it): steps after the follower's last one, in order, then `end`. */
  push(event: ErasureEvent): void {
    if (this.#closed) return;
    if (event.kind === 'step') {
      if (event.transition.id <= this.#after) return;
      this.#after = event.transition.id;
    }
    const waiting = this.#waiting;
    this.#waiting = undefined;
    if (waiting) waiting({ value: event, done: false });
    else this.#queue.push(event);
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    const leave = this.#leave;
    this.#leave = () => {};
    leave();
    const waiting = this.#waiting;
    this.#waiting = undefined;
    waiting?.({ value: undefined, done: true });
  }

  [Symbol.asyncIterator](): AsyncIterator<ErasureEvent> {
    return {
      next: () => {
        const event = this.#queue.shift();
        // what was queued before an end or a close is still delivered
        if (event) return Promise.resolve({ value: event, done: false });
        if (this.#closed) return Promise.resolve({ value: undefined, done: true });
        return new Promise((resolve) => (this.#waiting = resolve));
      },
      return: () => {
        this.close();
        return Promise.resolve({ value: undefined, done: true });
      },
    };
  }
}

class Watcher {
  readonly #erasureId: string;
  readonly #options: WatcherOptions;
  readonly #stopped: () => void;
  readonly #timeline: ErasureTransition[] = [];
  readonly #followers = new Set<Follower>();
  #cursor = 0;
  #timer: NodeJS.Timeout | undefined;
  #reading = false;
  #again: RefreshCause | undefined;
  #done = false;

  constructor(erasureId: string, options: WatcherOptions, stopped: () => void) {
    this.#erasureId = erasureId;
    this.#options = options;
    this.#stopped = stopped;
  }

  /** A new follower: the timeline after `afterId` at once, then what comes. */
  follow(afterId: number): Follower {
    const follower = new Follower(afterId, () => this.#leave(follower));
    for (const transition of this.#timeline) follower.push({ kind: 'step', transition });
    this.#followers.add(follower);
    return follower;
  }

  wake(cause: RefreshCause): void {
    if (this.#done) return;
    if (this.#reading) {
      this.#again ??= cause;
      return;
    }
    void this.#read(cause);
  }

  stop(): void {
    if (this.#done) return;
    this.#done = true;
    clearTimeout(this.#timer);
    this.#stopped();
    for (const f of [...this.#followers]) f.close();
  }

  #leave(follower: Follower): void {
    this.#followers.delete(follower);
    if (this.#followers.size === 0) this.stop();
  }

  #schedule(): void {
    clearTimeout(this.#timer);
    if (this.#done) return;
    this.#timer = setTimeout(() => this.wake('poll'), this.#options.fallbackMs);
    this.#timer.unref();
  }

  async #read(cause: RefreshCause): Promise<void> {
    this.#reading = true;
    let next: RefreshCause | undefined = cause;
    try {
      while (next && !this.#done) {
        this.#again = undefined;
        this.#options.onRefresh?.(next);
        const finished = await this.#refresh();
        if (finished) return;
        next = this.#again;
      }
    } catch (e) {
      // the database did not answer: the followers wait, the fallback poll tries again
      this.#options.logger.warn({ erasureId: this.#erasureId, err: describeError(e) }, 'an erasure watcher could not read; retrying at the next poll');
    } finally {
      this.#reading = false;
      this.#schedule();
    }
  }

  /** Reads what is new and fans it out; true when the erasure finished (the watcher stopped). */
  async #refresh(): Promise<boolean> {
    const { source } = this.#options;
    // status first: a finished erasure's last transition commits with its status, so it is read below
    const status = await source.status(this.#erasureId);
    for (;;) {
      const page = await source.transitions(this.#erasureId, this.#cursor);
      if (this.#done) return true;
      for (const transition of page) this.#append(transition);
      if (page.length < PAGE) break;
    }
    if (!TERMINAL_STATUSES.includes(status)) return false;
    const end = await source.end(this.#erasureId);
    if (this.#done) return true;
    for (const f of this.#followers) f.push({ kind: 'end', end });
    this.stop();
    return true;
  }

  #append(transition: ErasureTransition): void {
    if (transition.id <= this.#cursor) return;
    this.#cursor = transition.id;
    this.#timeline.push(transition);
    for (const f of this.#followers) f.push({ kind: 'step', transition });
  }
}

/** The page size of `WatcherSource.transitions` (ErasureRecords.transitions answers at most 500). */
const PAGE = 500;

export class ErasureWatchers {
  readonly #watchers = new Map<string, Watcher>();
  readonly #options: WatcherOptions;
  /** Whether this replica hears erasure notifications; until then, its own transitions wake every watcher. */
  #notified = false;

  constructor(options: WatcherOptions) {
    this.#options = options;
  }

  /** Watchers running (one per followed erasure). */
  get size(): number {
    return this.#watchers.size;
  }

  /** Follows an erasure's events after transition `afterId`: the shared watcher, started when there is none. */
  follow(erasureId: string, afterId: number): Follower {
    let watcher = this.#watchers.get(erasureId);
    if (!watcher) {
      const created: Watcher = new Watcher(erasureId, this.#options, () => {
        if (this.#watchers.get(erasureId) === created) this.#watchers.delete(erasureId);
        this.#options.onCount?.(this.#watchers.size);
      });
      watcher = created;
      this.#watchers.set(erasureId, watcher);
      this.#options.onCount?.(this.#watchers.size);
      watcher.wake('start');
    }
    return watcher.follow(afterId);
  }

  /** A transition of this erasure committed (on any replica): its watcher, if any, reads. */
  heard(erasureId: string, cause: RefreshCause = 'notification'): void {
    this.#watchers.get(erasureId)?.wake(cause);
  }

  /** From now on the watchers wake on erasure notifications (every replica's transitions, this one's included). */
  hearNotifications(): void {
    this.#notified = true;
  }

  /** This replica committed a transition: without notifications, every watcher reads. */
  committedHere(): void {
    if (!this.#notified) this.wakeAll('local');
  }

  /** Notifications may have been missed (a listener reconnected), or no notification is heard: every watcher reads. */
  wakeAll(cause: RefreshCause): void {
    for (const watcher of this.#watchers.values()) watcher.wake(cause);
  }

  /** Stops every watcher; their followers end (the app is closing). */
  close(): void {
    for (const watcher of [...this.#watchers.values()]) watcher.stop();
  }
}
