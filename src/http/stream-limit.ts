/**
 * The cap on long-lived streams one token may hold open at once on this replica
 * (LETHE_SSE_STREAMS_PER_TOKEN): a stream takes a slot before it starts and gives it
 * back when it ends, however it ends. Tokens are named by their position in the token
 * store (AuthEnv `token`), never by their value.
 */
export class StreamLimit {
  readonly #open = new Map<number, number>();
  readonly #perToken: number;
  readonly #onCount: ((open: number) => void) | undefined;
  #total = 0;

  constructor(perToken: number, onCount?: (open: number) => void) {
    this.#perToken = perToken;
    this.#onCount = onCount;
  }

  get perToken(): number {
    return this.#perToken;
  }

  /** Streams open, all tokens together. */
  get open(): number {
    return this.#total;
  }

  /** A slot for the token, or undefined when it holds the maximum; the release function is idempotent. */
  acquire(token: number): (() => void) | undefined {
    const held = this.#open.get(token) ?? 0;
    if (held >= this.#perToken) return undefined;
    this.#open.set(token, held + 1);
    this.#changed(1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const now = (this.#open.get(token) ?? 1) - 1;
      if (now <= 0) this.#open.delete(token);
      else this.#open.set(token, now);
      this.#changed(-1);
    };
  }

  #changed(by: number): void {
    this.#total += by;
    this.#onCount?.(this.#total);
  }
}
