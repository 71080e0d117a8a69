/**
 * Domain errors. Every failure that crosses a module boundary is a LetheError with a
 * stable machine `code` (the closed set below) and whether retrying can help. The HTTP
 * layer maps codes to statuses in one exhaustive switch (src/http/problem.ts).
 *
 * Messages are for operators and clients: they never carry key material, tokens or
 * record plaintext. Put identifiers in them only when the caller already knows them.
 */

export const ERROR_CODES = [
  'unauthorized',
  'forbidden',
  'payload_too_large',
  'validation_failed',
  'not_found',
  'conflict',
  'erasure_in_progress',
  'subject_erased',
  'artifact_erased',
  'source_erased',
  'provenance_required',
  'unknown_source',
  'key_destroyed',
  'illegal_transition',
  'segment_malformed',
  'envelope_malformed',
  'envelope_unsupported',
  'decrypt_failed',
  'key_commitment_mismatch',
  'epoch_unavailable',
  'unavailable',
  'internal',
] as const;

export type ErrorCode = (typeof ERROR_CODES)[number];

const RETRYABLE: ReadonlySet<ErrorCode> = new Set<ErrorCode>(['erasure_in_progress', 'unavailable']);

export class LetheError extends Error {
  readonly code: ErrorCode;
  readonly retryable: boolean;

  constructor(code: ErrorCode, message: string, options?: { cause?: unknown; retryable?: boolean }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'LetheError';
    this.code = code;
    this.retryable = options?.retryable ?? RETRYABLE.has(code);
  }
}

export function isLetheError(e: unknown, code?: ErrorCode): e is LetheError {
  return e instanceof LetheError && (code === undefined || e.code === code);
}
