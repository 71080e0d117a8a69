/** A DEK the writer holds under a lease, and how it is let go. */
import { zeroize } from '../crypto/index.js';

export interface HeldLease {
  readonly keyId: string;
  readonly leaseId: string;
  readonly dek: Uint8Array;
  readonly expiresAt: number;
  readonly renewAt: number;
  /** Set, before its DEK is zeroed, when the lease is dropped: an append that holds it takes a fresh one. */
  dropped?: boolean;
}

/** Marks a lease dropped and zeroes its DEK (an append checks the mark before it copies the DEK). */
export function retire(lease: HeldLease): void {
  lease.dropped = true;
  zeroize(lease.dek);
}
