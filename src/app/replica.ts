/**
 * This replica's presence: the destruction cursor's periodic catch-up (every
 * CATCH_UP_MS, and at once when the listener reconnects), and the heartbeat row
 * (every HEARTBEAT_MS, and at once when the cursor moved) saying whether the listener
 * is up, whether the indexes are whole and which destruction it applied last. The
 * erasure engine asks it which replicas applied a destruction.
 */
import { LetheError } from '../errors.js';
import type { Logger } from '../observability/logger.js';
import { describeError } from '../observability/logger.js';
import type { DestructionCursor } from '../vault/catch-up.js';
import type { ListenerState } from '../vault/events.js';
import { type Acknowledgement, HEARTBEAT_MS, type ReplicaHeartbeats } from '../vault/replicas.js';

/** How often a replica reads the destruction ledger past its cursor (a missed notification is applied within this, plus one query). */
export const CATCH_UP_MS = 1000;
/**
 * A replica whose last catch-up is older than this (it was paused, or the ledger did
 * not answer) catches up before it answers from memory (`fresh`): a replica that wakes
 * from a pause never serves a search from before a destruction it slept through.
 */
export const STALE_MS = 3 * CATCH_UP_MS;

export interface PresenceDeps {
  readonly replicaId: string;
  readonly cursor: DestructionCursor;
  readonly heartbeats: ReplicaHeartbeats;
  readonly listener: () => ListenerState;
  readonly rebuilding: () => boolean;
  readonly logger: Logger;
}

export class ReplicaPresence {
  readonly #d: PresenceDeps;
  readonly startedAt = new Date();
  #catchUpTimer: NodeJS.Timeout | undefined;
  #beatTimer: NodeJS.Timeout | undefined;
  #beating: Promise<void> | undefined;
  #beatAgain = false;
  #lastCatchUp: Date | undefined;
  #lastBeatSeq = -1;
  #stopped = false;

  constructor(deps: PresenceDeps) {
    this.#d = deps;
  }

  get replicaId(): string {
    return this.#d.replicaId;
  }

  /** When the cursor last read the ledger. */
  get lastCatchUp(): Date | undefined {
    return this.#lastCatchUp;
  }

  get appliedSeq(): number {
    return this.#d.cursor.applied;
  }

  /** What /readyz reports. */
  status(): { replicaId: string; listener: ListenerState; index: 'ready' | 'rebuilding'; appliedSeq: number; lastCatchUpAt: Date | undefined } {
    return {
      replicaId: this.#d.replicaId,
      listener: this.#d.listener(),
      index: this.#d.rebuilding() ? 'rebuilding' : 'ready',
      appliedSeq: this.#d.cursor.applied,
      lastCatchUpAt: this.#lastCatchUp,
    };
  }

  start(): void {
    const catchUp = () => {
      if (this.#stopped) return;
      void this.catchUp().finally(() => {
        if (this.#stopped) return;
        this.#catchUpTimer = setTimeout(catchUp, CATCH_UP_MS);
        this.#catchUpTimer.unref();
      });
    };
    let beats = 0;
    const beat = () => {
      if (this.#stopped) return;
      // now and then, rows of replicas gone for good (silent for FORGET_AFTER_MS) are deleted
      if (++beats % 30 === 0) void this.#d.heartbeats.forget().catch(() => {});
      void this.beat().finally(() => {
        if (this.#stopped) return;
        this.#beatTimer = setTimeout(beat, HEARTBEAT_MS);
        this.#beatTimer.unref();
      });
    };
    beat();
    catchUp();
  }

  /** Reads the ledger past the cursor now; beats at once when that moved the cursor. Never throws (logged). */
  async catchUp(): Promise<void> {
    try {
      await this.#d.cursor.catchUp();
      // when the pass began, not when it ended: a pass that was in flight across a pause read the ledger before it
      const startedAt = this.#d.cursor.lastPassStartedAt;
      if (startedAt !== undefined) this.#lastCatchUp = new Date(startedAt);
      if (this.#d.cursor.applied !== this.#lastBeatSeq) await this.beat();
    } catch (e) {
      this.#d.logger.warn({ err: describeError(e) }, 'could not catch up on key destructions');
    }
  }

  /**
   * Before answering from the in-memory indexes: catches up first when the last
   * catch-up is older than STALE_MS, and refuses (`unavailable`) when the ledger
   * cannot be read — never an answer that may predate a destruction by more than that.
   */
  async fresh(): Promise<void> {
    if (this.#isFresh()) return;
    await this.catchUp();
    // the pass joined may have begun before a pause: then one that begins now
    if (!this.#isFresh()) await this.catchUp();
    if (!this.#isFresh()) {
      throw new LetheError('unavailable', 'this replica could not confirm it applied every key destruction (the destruction ledger did not answer); try again');
    }
  }

  #isFresh(): boolean {
    return this.#lastCatchUp !== undefined && Date.now() - this.#lastCatchUp.getTime() <= STALE_MS;
  }

  /** Upserts this replica's heartbeat row now (one write at a time; a call meanwhile writes again after it). Never throws (logged). */
  async beat(): Promise<void> {
    if (this.#beating) {
      this.#beatAgain = true;
      return this.#beating;
    }
    this.#beating = (async () => {
      do {
        this.#beatAgain = false;
        if (this.#stopped) return;
        const appliedSeq = this.#d.cursor.applied;
        try {
          await this.#d.heartbeats.beat(this.#d.replicaId, this.startedAt, {
            listener: this.#d.listener().state,
            index: this.#d.rebuilding() ? 'rebuilding' : 'ready',
            appliedSeq,
          });
          this.#lastBeatSeq = appliedSeq;
        } catch (e) {
          this.#d.logger.warn({ err: describeError(e) }, "could not write this replica's heartbeat");
        }
      } while (this.#beatAgain);
    })().finally(() => {
      this.#beating = undefined;
    });
    return this.#beating;
  }

  /** Which replicas applied destruction `seq`: this one catches up and beats first, so it answers for itself now. */
  async acknowledge(seq: number): Promise<Acknowledgement> {
    await this.catchUp();
    if (this.#lastBeatSeq < seq) await this.beat();
    return this.#d.heartbeats.acknowledgement(seq);
  }

  /** A clean shutdown: the timers stop and the row goes (nothing waits for a replica that is gone). */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#catchUpTimer);
    clearTimeout(this.#beatTimer);
    await this.#beating?.catch(() => {});
    await this.#d.heartbeats
      .remove(this.#d.replicaId)
      .catch((e: unknown) => this.#d.logger.warn({ err: describeError(e) }, "could not remove this replica's heartbeat"));
  }
}
