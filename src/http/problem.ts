/**
 * RFC 9457 problem documents. One exhaustive switch maps every domain error code to
 * its HTTP status; adding a code without a status fails to compile.
 */
import type { Context } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import type { ErrorCode } from '../errors.js';

export function statusOf(code: ErrorCode): ContentfulStatusCode {
  switch (code) {
    case 'validation_failed':
      return 400;
    case 'unauthorized':
      return 401;
    case 'forbidden':
      return 403;
    case 'not_found':
      return 404;
    case 'method_not_allowed':
      return 405;
    case 'conflict':
    case 'idempotency_key_reused':
    case 'erasure_in_progress':
    case 'illegal_transition':
    case 'source_erased':
      return 409;
    case 'subject_erased':
    case 'key_destroyed':
    case 'entry_forgotten':
    case 'artifact_erased':
      return 410;
    case 'provenance_required':
    case 'unknown_source':
    case 'near_copy':
    case 'not_a_match':
      return 422;
    case 'item_exists':
      return 412;
    case 'payload_too_large':
      return 413;
    case 'too_many_streams':
      return 429;
    case 'segment_malformed':
    case 'envelope_malformed':
    case 'envelope_unsupported':
    case 'decrypt_failed':
    case 'key_commitment_mismatch':
    case 'internal':
      return 500;
    case 'epoch_unavailable':
    case 'unavailable':
      return 503;
    default: {
      const unreachable: never = code;
      return unreachable;
    }
  }
}

const TITLES: Record<ErrorCode, string> = {
  validation_failed: 'Request is not valid',
  unauthorized: 'Authentication required',
  forbidden: 'Not allowed for this role',
  not_found: 'Not found',
  method_not_allowed: 'Method not allowed',
  conflict: 'Conflict',
  idempotency_key_reused: 'Idempotency key reused with another request',
  item_exists: 'The item already has live entries',
  erasure_in_progress: 'Erasure in progress',
  illegal_transition: 'Illegal state transition',
  subject_erased: 'Subject erased',
  artifact_erased: 'Artifact erased',
  source_erased: 'A source was erased',
  provenance_required: 'Provenance required',
  unknown_source: 'Unknown source',
  near_copy: 'A near copy cannot be dismissed',
  not_a_match: 'Not named by the last probe',
  key_destroyed: 'Key destroyed',
  entry_forgotten: 'Entry forgotten',
  payload_too_large: 'Payload too large',
  too_many_streams: 'Too many open streams',
  segment_malformed: 'Stored log segment is malformed',
  envelope_malformed: 'Stored ciphertext is malformed',
  envelope_unsupported: 'Stored ciphertext has an unsupported format',
  decrypt_failed: 'Stored ciphertext failed authentication',
  key_commitment_mismatch: 'Stored ciphertext is not committed to its key',
  internal: 'Internal error',
  epoch_unavailable: 'Key-encryption key unavailable',
  unavailable: 'Service unavailable',
};

export interface Problem {
  readonly type: string;
  readonly title: string;
  readonly status: number;
  readonly detail: string;
  readonly code: ErrorCode;
  /** Present (true) when the same request may succeed if made again: a client retries it (an append with the same Idempotency-Key). */
  readonly retryable?: true;
}

export function problemBody(code: ErrorCode, detail: string, retryable = false): Problem {
  return { type: `urn:lethe:problem:${code}`, title: TITLES[code], status: statusOf(code), detail, code, ...(retryable ? { retryable: true as const } : {}) };
}

/** The challenge every 401 carries (RFC 9110 §11.6.1): lethe takes a bearer token. */
export const BEARER_CHALLENGE = 'Bearer realm="lethe"';

export function problem(c: Context, code: ErrorCode, detail: string, headers?: Record<string, string>, retryable = false): Response {
  return respond(problemBody(code, detail, retryable), headers);
}

/** A problem with members of its own besides the standard ones (RFC 9457 §3.2): what the client needs to go on without another call. */
export function problemWith(code: ErrorCode, detail: string, members: Record<string, unknown>): Response {
  return respond({ ...members, ...problemBody(code, detail) });
}

function respond(body: Problem, headers?: Record<string, string>): Response {
  return new Response(JSON.stringify(body), {
    status: body.status,
    headers: { 'content-type': 'application/problem+json', ...(body.status === 401 ? { 'www-authenticate': BEARER_CHALLENGE } : {}), ...headers },
  });
}
