/** What the certificates routes share. */
import { z } from '@hono/zod-openapi';

export const SigningKeySchema = z
  .object({
    keyId: z.string().openapi({ description: 'derived from the public key (csk_ and 22 base64url characters); certificates name it in their payload as signingKeyId', example: 'csk_3q2-7wEXAMPLE0000000000' }),
    algorithm: z.literal('Ed25519'),
    publicKey: z.string().openapi({ description: 'base64url of the 32-byte Ed25519 public key' }),
    state: z.enum(['current', 'retired']).openapi({ description: 'current signs new certificates; a retired key signs nothing more and stays listed so that what it signed still verifies' }),
    origin: z.enum(['keyring', 'root-derived']).openapi({ description: 'root-derived: the key derived from the root key that signed certificates before signing keys had ids' }),
    createdAt: z.string().nullable().openapi({ format: 'date-time' }),
    retiredAt: z.string().nullable().openapi({ format: 'date-time' }),
  })
  .openapi('CertificateSigningKey');

export const KeyListSchema = z.object({ keys: z.array(SigningKeySchema) }).openapi('CertificateSigningKeys');

export const RotationSchema = z.object({ current: SigningKeySchema, retired: SigningKeySchema }).openapi('CertificateKeyRotation');

export const CurrentKeySchema = z.object({ algorithm: z.literal('Ed25519'), keyId: z.string(), publicKey: z.string() }).openapi('CertificateKey');
