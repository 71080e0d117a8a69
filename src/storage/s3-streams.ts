/** What the minio client's streams carry, gathered: a listing's items, an object's bytes. */
import type { Readable } from 'node:stream';

/** Every item of a listing stream that `pick` keeps (undefined: skipped), in stream order. */
export function collect<T>(stream: Readable, pick: (item: unknown) => T | undefined): Promise<T[]> {
  return new Promise((resolve, reject) => {
    const out: T[] = [];
    stream.on('data', (item: unknown) => {
      const kept = pick(item);
      if (kept !== undefined) out.push(kept);
    });
    stream.on('error', reject);
    stream.on('end', () => resolve(out));
  });
}

/** An object's body, whole. */
export async function bytesOf(stream: AsyncIterable<unknown>): Promise<Uint8Array> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return new Uint8Array(Buffer.concat(chunks));
}
