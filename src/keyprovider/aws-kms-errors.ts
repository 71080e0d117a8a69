/**
 * What a failed AWS KMS call means to lethe: every failure a LetheError, retryable or
 * not, naming the KMS error and the endpoint or region, never credentials or the
 * service's message.
 */
import type { KeyMetadata } from '@aws-sdk/client-kms';
import { LetheError, errorCodes, isLetheError } from '../errors.js';

const CREDENTIAL_ERRORS = new Set([
  'UnrecognizedClientException',
  'InvalidSignatureException',
  'IncompleteSignature',
  'InvalidClientTokenId',
  'MissingAuthenticationToken',
  'ExpiredTokenException',
  'AccessDeniedException',
  'NotAuthorizedException',
]);
const TRANSIENT_ERRORS = new Set(['KMSInternalException', 'DependencyTimeoutException', 'ThrottlingException', 'ServiceUnavailable', 'InternalFailure']);
const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN', 'EPIPE']);
/** The key cannot be used now: pending deletion, disabled, or gone. */
export const UNUSABLE_KEY_ERRORS = new Set(['KMSInvalidStateException', 'DisabledException', 'NotFoundException', 'KeyUnavailableException']);
/** The ciphertext does not open under this key and context. */
export const DECRYPT_ERRORS = new Set(['InvalidCiphertextException', 'IncorrectKeyException']);

function errorName(e: unknown): string {
  return typeof e === 'object' && e !== null && typeof (e as { name?: unknown }).name === 'string' ? (e as { name: string }).name : 'Error';
}

/** A KMS refusal about the key, the ciphertext or the alias, as a LetheError that keeps the KMS error name for the callers that tell them apart. */
class KmsRefusal extends LetheError {
  readonly kmsName: string;
  constructor(code: 'epoch_unavailable' | 'decrypt_failed' | 'conflict', kmsName: string, message: string) {
    super(code, message);
    this.kmsName = kmsName;
  }
}

/** The KMS error name behind a failed call (`KmsRefusal`), else the error's own name. */
export function kmsName(e: unknown): string {
  return e instanceof KmsRefusal ? e.kmsName : errorName(e);
}

/**
 * Every failure becomes a LetheError here; refusals about the key, the ciphertext or
 * the alias (whose meaning depends on the call) keep their KMS name (`KmsRefusal`) for
 * the caller to judge and phrase. `where` names the endpoint or region.
 */
export function classifyKmsError(where: string, operation: string, e: unknown): LetheError {
  if (isLetheError(e)) return e;
  const name = errorName(e);
  if (CREDENTIAL_ERRORS.has(name)) {
    return new LetheError(
      'unavailable',
      `${where} refused lethe's credentials for ${operation} (${name}): check the AWS credentials and the IAM and key policies`,
      {
        retryable: false,
      },
    );
  }
  if (name === 'CredentialsProviderError') {
    return new LetheError(
      'unavailable',
      `no AWS credentials for ${where}: the SDK's default chain (environment, shared config, SSO, container or instance role) found none`,
      { retryable: false },
    );
  }
  const codes = [...errorCodes(e), ...aggregateCodes(e)];
  const network = codes.find((c) => NETWORK_CODES.has(c));
  if (network || name === 'TimeoutError') {
    return new LetheError('unavailable', `${where} did not answer ${operation} (${network ?? 'timed out'})`, { retryable: true });
  }
  const status = (e as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
  if (TRANSIENT_ERRORS.has(name) || (status !== undefined && status >= 500)) {
    return new LetheError('unavailable', `${where} failed ${operation} (${name}${status ? `, HTTP ${status}` : ''})`, { retryable: true });
  }
  if (UNUSABLE_KEY_ERRORS.has(name)) return new KmsRefusal('epoch_unavailable', name, `${where} refused ${operation}: the key is not usable (${name})`);
  if (DECRYPT_ERRORS.has(name)) return new KmsRefusal('decrypt_failed', name, `${where} refused ${operation}: the ciphertext does not open (${name})`);
  if (name === 'AlreadyExistsException') return new KmsRefusal('conflict', name, `${where} refused ${operation}: it already exists`);
  if (name === 'LimitExceededException') {
    return new LetheError(
      'unavailable',
      `${where} refused ${operation}: an AWS KMS quota is reached (keys or aliases in the account and region; LimitExceededException)`,
      {
        retryable: false,
      },
    );
  }
  return new LetheError('internal', `${where} refused ${operation} (${name}${status ? `, HTTP ${status}` : ''})`);
}

/** epoch_unavailable for the epoch's key in `where`, with the key's state when it still exists. */
export function keyUnavailable(where: string, epoch: number, key: KeyMetadata | undefined): LetheError {
  return new LetheError(
    'epoch_unavailable',
    `KEK epoch ${epoch} cannot be used in ${where}: ${key ? stateText(key) : 'its key does not exist (never created, or deleted)'}`,
  );
}

function stateText(key: KeyMetadata): string {
  if (key.KeyState === 'PendingDeletion' || key.KeyState === 'PendingReplicaDeletion') {
    return `its key is scheduled for deletion on ${key.DeletionDate ? key.DeletionDate.toISOString() : 'an unknown date'}`;
  }
  if (key.KeyState === 'Disabled') return 'its key is disabled';
  return `its key is ${key.KeyState ?? 'in an unknown state'}`;
}

/** The codes of an AggregateError's errors (a connection tried on several addresses). */
function aggregateCodes(e: unknown): string[] {
  const errors = (e as { errors?: unknown }).errors;
  if (!Array.isArray(errors)) return [];
  return errors.map((x) => (x as { code?: unknown }).code).filter((c): c is string => typeof c === 'string');
}
