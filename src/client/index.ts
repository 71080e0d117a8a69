/** The lethe client package: the writer, and the object stores it uploads to. */
export { type AppendedEntry, LetheWriter, type WriterOptions } from './writer.js';
export { FsObjectStore } from '../storage/fs.js';
export { S3ObjectStore, type S3Options } from '../storage/s3.js';
export type { ObjectStore } from '../storage/store.js';
export { LetheError } from '../errors.js';
