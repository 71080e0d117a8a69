/**
 * Certificate-signing keys, as the rest of lethe sees them: signing through the key
 * provider (the private keys never leave it), the public list (current and retired,
 * for verifiers), and rotation with its audit row.
 */
import type { Certificate, Json } from '../crypto/index.js';
import type { Database } from '../db/client.js';
import type { KeyProvider, SigningKeyInfo } from '../keyprovider/provider.js';
import type { AuditLog } from './audit.js';

export type { SigningKeyInfo } from '../keyprovider/provider.js';

export class CertificateKeys {
  readonly #db: Database;
  readonly #provider: KeyProvider;
  readonly #audit: AuditLog;

  constructor(deps: { db: Database; provider: KeyProvider; audit: AuditLog }) {
    this.#db = deps.db;
    this.#provider = deps.provider;
    this.#audit = deps.audit;
  }

  /** Signs with the current key; the payload carries the key's id (`signingKeyId`) inside what is signed. */
  sign(payload: { [key: string]: Json }): Promise<Certificate> {
    return this.#provider.signCertificate(payload);
  }

  /** Every signing key's public part: the current one first, then the retired ones. */
  list(): Promise<SigningKeyInfo[]> {
    return this.#provider.listSigningKeys();
  }

  /** The public keys a verifier of this vault's certificates trusts: every listed key (base64url). */
  async publicKeys(): Promise<string[]> {
    return (await this.list()).map((k) => k.publicKey);
  }

  /** A new current key; the previous one retires (private part destroyed, public part listed). Audited. */
  async rotate(actor: string): Promise<{ current: SigningKeyInfo; retired: SigningKeyInfo }> {
    const result = await this.#provider.rotateSigningKey();
    await this.#db.transaction((tx) =>
      this.#audit.append(tx, [
        { actor, action: 'certificate.key.rotate', detail: { keyId: result.current.keyId, retiredKeyId: result.retired.keyId, provider: this.#provider.name } },
      ]),
    );
    return result;
  }
}
