/**
 * Wire types of the certificate-signing keys (GET /v1/certificates/keys, /public-key,
 * POST …/keys/rotate): declared once, as zod schemas, and imported by the routes, the
 * TypeScript client and the CLI. Plain zod (`.meta`, no OpenAPI extension), so that the
 * client can ship them.
 */
import { z } from 'zod';

/** One certificate-signing public key, as the vault lists it. */
export const SigningKeySchema = z
  .object({
    keyId: z.string().meta({
      description: 'derived from the public key (csk_ and 22 base64url characters); certificates name it in their payload as signingKeyId',
      example: 'csk_3q2-7wEXAMPLE0000000000',
    }),
    algorithm: z.literal('Ed25519'),
    publicKey: z.string().meta({ description: 'base64url of the 32-byte Ed25519 public key' }),
    state: z
      .enum(['current', 'retired'])
      .meta({ description: 'current signs new certificates; a retired key signs nothing more and stays listed so that what it signed still verifies' }),
    origin: z
      .enum(['keyring', 'root-derived'])
      .meta({ description: 'root-derived: the key derived from the root key that signed certificates before signing keys had ids' }),
    createdAt: z.string().nullable().meta({ format: 'date-time' }),
    retiredAt: z.string().nullable().meta({ format: 'date-time' }),
  })
  .meta({ id: 'CertificateSigningKey' });
export type SigningKey = z.infer<typeof SigningKeySchema>;

/** GET /v1/certificates/keys: the current key first, then the retired ones. */
export const SigningKeyListSchema = z.object({ keys: z.array(SigningKeySchema) }).meta({ id: 'CertificateSigningKeys' });
export type SigningKeyList = z.infer<typeof SigningKeyListSchema>;

/** POST /v1/certificates/keys/rotate: the new current key and the key it retired. */
export const SigningKeyRotationSchema = z.object({ current: SigningKeySchema, retired: SigningKeySchema }).meta({ id: 'CertificateKeyRotation' });
export type SigningKeyRotation = z.infer<typeof SigningKeyRotationSchema>;

/** GET /v1/certificates/public-key: the current key alone. */
export const CurrentSigningKeySchema = z.object({ algorithm: z.literal('Ed25519'), keyId: z.string(), publicKey: z.string() }).meta({ id: 'CertificateKey' });
export type CurrentSigningKey = z.infer<typeof CurrentSigningKeySchema>;
