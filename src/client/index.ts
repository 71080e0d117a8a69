/**
 * The lethe client package (`@lethe/client`): the `Lethe` facade over the whole API, the
 * writer that seals locally, the service client both call through, and the local object
 * store. The S3 store is `@lethe/client/s3` (it needs `minio`), the LangGraph store
 * `@lethe/client/langgraph` (it needs `@langchain/langgraph-checkpoint`).
 */
export {
  type AppendResult,
  type Artifact,
  type ArtifactListed,
  type ArtifactPage,
  Artifacts,
  type Backup,
  type BackupPage,
  Backups,
  Entries,
  type Entry,
  type EntryPage,
  type EntryRead,
  type KeyLease,
  Lethe,
  type LetheOptions,
  type NewArtifact,
  type NewEntry,
  type Provenance,
  type Regeneration,
  type SearchHit,
  type SearchResult,
  type SearchMode,
  type SearchOptions,
  type SearchScope,
  Subjects,
  KEY_BATCH_MAX_SUBJECTS,
  type KeyBatch,
  type KeyBatchItem,
} from './lethe.js';
export {
  type Erasure,
  type ErasurePage,
  ErasureProgressLostError,
  Erasures,
  type FollowOptions,
  followErasure,
  type RecordsErasureRequest,
  type RequestedErasure,
  type WaitOptions,
} from './erasures.js';
export { Certificates, type SigningKey, type VerifiedCertificate } from './certificates.js';
export { type PageOptions, type Role, type RoleTokens, tokensFromEnv } from './roles.js';
export { type CertificateVerdict, verifyCertificate } from '../crypto/certificate.js';
export { zeroize } from '../crypto/index.js';
export type { CertificateView, DismissalAccepted, ErasureAccepted, ErasureTransition, ErasureView } from '../erasure/view.js';
export type { ErasureRequest } from '../erasure/request.js';
export { type AppendedEntry, LetheWriter, type UnreleasedLease, type WriterCloseReport, type WriterOptions } from './writer.js';
export { LetheOutcomeUnknownError, type SegmentEntry, type SegmentRegistration } from './outcome.js';
export { isRetryableConflict, newIdempotencyKey, type RetryOptions } from './retry.js';
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
  type Pem,
  type TlsOptions,
  UnreachableError,
} from './http.js';
export { FsObjectStore } from '../storage/fs.js';
export type { ObjectStore } from '../storage/store.js';
export { ERROR_CODES, type ErrorCode, isLetheError, LetheError } from '../errors.js';
