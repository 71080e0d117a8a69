/**
 * `@lethe/client/s3`: the S3 / MinIO object store a `LetheWriter` uploads segments to.
 * A subpath of its own because it needs the `minio` package (an optional peer
 * dependency of the client package): the main entry stays free of it.
 */
export { S3ObjectStore, type S3Options } from '../storage/s3.js';
