/**
 * The writer's sequence numbers, per subject: a block reserved from the service (up to
 * `reserveBlock` numbers, fewer when the subject's head key has less room: a key holds
 * a shard of entries) is handed out in order. Appends that find the block spent wait in
 * line: each reservation serves the first in line, so a key moving never wakes every
 * waiting append at once.
 */
import type { Reservation } from '../wire/log.js';

interface Waiter {
  readonly resolve: (r: { keyId: string; seq: number }) => void;
  readonly reject: (e: unknown) => void;
}

export class SequenceLine {
  readonly #reserve: (subject: string) => Promise<Reservation>;
  readonly #blocks = new Map<string, { keyId: string; next: number; end: number }>();
  readonly #reserving = new Map<string, Promise<void>>();
  /** Appends waiting, per subject: a queue read from `at` (shifting a long array would cost its length each time). */
  readonly #waiting = new Map<string, { items: Waiter[]; at: number }>();

  constructor(reserve: (subject: string) => Promise<Reservation>) {
    this.#reserve = reserve;
  }

  /** The subject's next reserved sequence number and the key it is under. */
  next(subject: string): Promise<{ keyId: string; seq: number }> {
    const block = this.#blocks.get(subject);
    if (block && block.next < block.end) return Promise.resolve({ keyId: block.keyId, seq: block.next++ });
    return new Promise((resolve, reject) => {
      const line = this.#waiting.get(subject) ?? { items: [], at: 0 };
      line.items.push({ resolve, reject });
      this.#waiting.set(subject, line);
      if (!this.#reserving.has(subject))
        this.#reserving.set(
          subject,
          this.#fill(subject).finally(() => this.#reserving.delete(subject)),
        );
    });
  }

  /** The key of the subject's current block, if it has one. */
  keyOf(subject: string): string | undefined {
    return this.#blocks.get(subject)?.keyId;
  }

  /** Forgets the subject's block (its key went). */
  drop(subject: string): void {
    this.#blocks.delete(subject);
  }

  /** True while a reservation is in flight. */
  get busy(): boolean {
    return this.#reserving.size > 0;
  }

  /** Reserves blocks until everyone in the subject's line has a number; a refusal fails the whole line. */
  async #fill(subject: string): Promise<void> {
    const waiting = (line: { items: Waiter[]; at: number } | undefined) => (line ? line.items.length - line.at : 0);
    try {
      for (let line = this.#waiting.get(subject); line && waiting(line) > 0; line = this.#waiting.get(subject)) {
        const r = await this.#reserve(subject);
        const block = { keyId: r.keyId, next: r.firstSeq, end: r.firstSeq + r.count };
        this.#blocks.set(subject, block);
        while (block.next < block.end && waiting(line) > 0) line.items[line.at++]!.resolve({ keyId: block.keyId, seq: block.next++ });
        if (line.at > 1024 && line.at * 2 > line.items.length) {
          line.items = line.items.slice(line.at);
          line.at = 0;
        }
      }
    } catch (e) {
      const line = this.#waiting.get(subject);
      this.#waiting.delete(subject);
      for (const w of line?.items.slice(line.at) ?? []) w.reject(e);
    } finally {
      if (waiting(this.#waiting.get(subject)) === 0) this.#waiting.delete(subject);
    }
  }
}
