/**
 * The DEKs a LetheWriter decodes from its lease answers, and every copy it takes of
 * them, so a test can check each ends zeroed. A test file installs it with
 *
 *   vi.mock('../../src/crypto/index.js', async (original) => (await import('../support/leased-deks.js')).trackLeasedDeks(await original()));
 *
 * Only the decodes called from src/client/writer.ts are tracked: the service in the
 * same process decodes other base64url with the same function.
 */
export interface LeasedDek {
  /** The buffer the writer holds for the lease. */
  readonly dek: Uint8Array;
  /** Every copy the writer took of it (an append seals with a private copy). */
  readonly copies: Uint8Array[];
}

export const leasedDeks: LeasedDek[] = [];

/** True when the DEK and every copy of it are all zeros: the writer wiped them. */
export const wiped = (d: LeasedDek): boolean => [d.dek, ...d.copies].every((b) => b.every((x) => x === 0));

export function trackLeasedDeks<M extends { fromBase64Url(text: string): Uint8Array | undefined }>(crypto: M): M {
  return {
    ...crypto,
    fromBase64Url(text: string) {
      const decoded = crypto.fromBase64Url(text);
      if (!decoded || !/src\/client\/writer\.ts/.test(new Error().stack?.split('\n').slice(2, 4).join('\n') ?? '')) return decoded;
      const copies: Uint8Array[] = [];
      // a subclass whose slice() is recorded: the writer's private copies are secrets too
      class Tracked extends Uint8Array {
        override slice(start?: number, end?: number): Uint8Array<ArrayBuffer> {
          const copy = new Uint8Array(this.subarray(start, end));
          copies.push(copy);
          return copy;
        }
      }
      const dek = new Tracked(decoded);
      leasedDeks.push({ dek, copies });
      return dek;
    },
  };
}
