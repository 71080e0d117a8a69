/** The lethe client package: the writer, the service client it calls through, and the object stores it uploads to. */
export { type AppendedEntry, LetheWriter, type WriterOptions } from './writer.js';
export { LetheOutcomeUnknownError, type SegmentEntry, type SegmentRegistration } from './outcome.js';
export {
  type CallOptions,
  normalizeBaseUrl,
  type Problem,
  readNdjson,
  readSse,
  ServiceClient,
  type ServiceClientOptions,
  ServiceError,
  type SseEvent,
  UnreachableError,
} from './http.js';
export { FsObjectStore } from '../storage/fs.js';
export { S3ObjectStore, type S3Options } from '../storage/s3.js';
export type { ObjectStore } from '../storage/store.js';
export { ERROR_CODES, type ErrorCode, isLetheError, LetheError } from '../errors.js';
