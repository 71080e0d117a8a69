/** Waking an erasure parked at drain_leases when a lease of its subject is released. */
import { describeError, type Logger } from '../observability/logger.js';
import type { ErasureRecords } from './records.js';

/** How often, and how far apart, a released lease's wake is retried while a replica runs the erasure's drain_leases. */
const WAKE_TRIES = 20;
const WAKE_RETRY_MS = 100;

/**
 * The subject's erasure parked at drain_leases runs now — on this replica at once, on
 * the others at their next poll — and reads the outstanding leases again. One a replica
 * is running right now may have read the leases before the release committed: it is
 * woken again, in the background, once that run has parked.
 */
export async function wakeOnRelease(records: ErasureRecords, subjectHash: Uint8Array, kick: () => void, logger: Logger): Promise<void> {
  if ((await records.wake(subjectHash, 'drain_leases')) === 'running') {
    void (async () => {
      for (let i = 0; i < WAKE_TRIES; i++) {
        await new Promise((r) => setTimeout(r, WAKE_RETRY_MS));
        if ((await records.wake(subjectHash, 'drain_leases')) !== 'running') break;
      }
      kick();
    })().catch((e: unknown) => logger.warn({ err: describeError(e) }, 'could not wake an erasure after a lease release'));
  }
  kick();
}
