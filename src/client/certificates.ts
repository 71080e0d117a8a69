/**
 * Erasure certificates: the vault's signing keys (`GET /v1/certificates/keys`, no
 * token), an erasure's certificate, and its verification — Ed25519 over canonical
 * JSON, with `verifyCertificate` (src/crypto/certificate.ts), the same check as
 * `lethe certificate verify`. The trusted keys are the vault's list (or keys the
 * caller gives): the key a certificate carries is never trusted for itself.
 */
import { type CertificateVerdict, certificateKeyId, verifyCertificate } from '../crypto/certificate.js';
import { fromBase64Url } from '../crypto/index.js';
import type { CertificateView } from '../erasure/view.js';
import { LetheError } from '../errors.js';
import type { SigningKey, SigningKeyList, SigningKeyRotation } from '../wire/certificates.js';
import { type RoleCalls, seg } from './roles.js';

/** One certificate-signing public key, as GET /v1/certificates/keys lists it (the wire type: src/http/wire/certificates.ts). */
export type { SigningKey };

export interface VerifiedCertificate extends CertificateVerdict {
  /** The signing key's state in the trusted list (current | retired), when it named one. */
  readonly keyState?: 'current' | 'retired';
}

export class Certificates {
  readonly #calls: RoleCalls;

  constructor(calls: RoleCalls) {
    this.#calls = calls;
  }

  /** Every certificate-signing public key of the vault, current first, then the retired ones. */
  async keys(): Promise<SigningKey[]> {
    const { keys } = await this.#calls.anyClient().json<SigningKeyList>('GET', '/v1/certificates/keys', { timeoutMs: 30_000 });
    return keys;
  }

  /** An erasure's signed certificate (eraser role; 409 conflict while it has none yet). */
  get(erasureId: string): Promise<CertificateView> {
    return this.#calls.json<CertificateView>('eraser', 'GET', `/v1/erasures/${seg(erasureId)}/certificate`);
  }

  /**
   * Whether `certificate` was signed by one of the vault's keys (fetched from
   * `GET /v1/certificates/keys`) or of `keys` when given (base64url public keys, or
   * the vault's key list as kept from earlier). A key listed with its retirement time
   * signed nothing issued after it. Never throws on a bad certificate: the verdict says
   * why it is not valid.
   */
  async verify(
    certificate: unknown,
    options: { readonly keys?: ReadonlyArray<string | (Pick<SigningKey, 'publicKey'> & Partial<Pick<SigningKey, 'state' | 'retiredAt'>>)> } = {},
  ): Promise<VerifiedCertificate> {
    const trusted = options.keys ?? (await this.keys());
    if (trusted.length === 0) throw new LetheError('validation_failed', 'no trusted key to verify against');
    const listed = trusted.map((k) => (typeof k === 'string' ? { publicKey: k } : k));
    // a listed retirement time bounds what the key signed (issuedAt after it: invalid)
    const verdict = verifyCertificate(certificate, listed);
    const state =
      verdict.keyId === undefined
        ? undefined
        : listed.find((k) => {
            const bytes = fromBase64Url(k.publicKey);
            return bytes?.length === 32 && certificateKeyId(bytes) === verdict.keyId;
          })?.state;
    return { ...verdict, ...(state !== undefined ? { keyState: state } : {}) };
  }

  /** Downloads an erasure's certificate and verifies it against the vault's keys. */
  async verifyErasure(erasureId: string): Promise<VerifiedCertificate & { readonly certificate: CertificateView }> {
    const certificate = await this.get(erasureId);
    return { ...(await this.verify(certificate)), certificate };
  }

  /** Admin: a new current signing key; the old one retires (its public part stays listed). */
  rotate(): Promise<SigningKeyRotation> {
    return this.#calls.json('admin', 'POST', '/v1/certificates/keys/rotate');
  }
}
