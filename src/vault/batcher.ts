/**
 * The group-commit queue behind leases (leases.ts) and key creation (creation.ts):
 * one batch in flight at a time; what arrives meanwhile waits and goes together in the
 * next batch, up to `max` items. At low load a batch is one item and adds no latency;
 * under load a batch's cost (a round trip, a statement) is shared by every item in it.
 *
 * `run` answers each item of its batch by the item itself (identity): an item it leaves
 * out resolves to undefined. A batch that throws rejects every item of it; the queue
 * goes on with the next.
 */
export class Batcher<T, R> {
  readonly #run: (batch: readonly T[]) => Promise<ReadonlyMap<T, R>>;
  readonly #max: number;
  #queue: Array<{ readonly item: T; readonly resolve: (result: R) => void; readonly reject: (error: unknown) => void }> = [];
  #running = false;

  constructor(run: (batch: readonly T[]) => Promise<ReadonlyMap<T, R>>, max: number) {
    this.#run = run;
    this.#max = max;
  }

  /** Queues `item` for the next batch; resolves with what its batch answered for it. */
  submit(item: T): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.#queue.push({ item, resolve, reject });
      this.#kick();
    });
  }

  #kick(): void {
    if (this.#running || this.#queue.length === 0) return;
    this.#running = true;
    const batch = this.#queue.splice(0, this.#max);
    let run: Promise<ReadonlyMap<T, R>>;
    try {
      run = this.#run(batch.map((p) => p.item));
    } catch (error) {
      run = Promise.reject(error);
    }
    run
      .then(
        (results) =>
          batch.forEach((p) => {
            p.resolve(results.get(p.item) as R);
          }),
        (error: unknown) =>
          batch.forEach((p) => {
            p.reject(error);
          }),
      )
      .finally(() => {
        this.#running = false;
        this.#kick();
      });
  }
}
