/**
 * The minio client of a MinIO server the bench started, and a bucket's listing.
 */
import { Client } from 'minio';

/** A minio client for a MinIO server the bench started (infra/minio-server.ts). */
export function minioClient(m: { readonly endpoint: string; readonly accessKey: string; readonly secretKey: string }): Client {
  const url = new URL(m.endpoint);
  return new Client({
    endPoint: url.hostname,
    port: Number(url.port),
    useSSL: false,
    accessKey: m.accessKey,
    secretKey: m.secretKey,
    region: 'us-east-1',
    pathStyle: true,
  });
}

/** Every object under `prefix` in the bucket (current versions), with its size. */
export async function listObjects(client: Client, bucket: string, prefix = ''): Promise<Array<{ name: string; size: number }>> {
  return new Promise((resolve, reject) => {
    const out: Array<{ name: string; size: number }> = [];
    const stream = client.listObjectsV2(bucket, prefix, true);
    stream.on('data', (o) => {
      if (o.name) out.push({ name: o.name, size: o.size ?? 0 });
    });
    stream.on('error', reject);
    stream.on('end', () => resolve(out));
  });
}
