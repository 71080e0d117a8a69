/**
 * Certificate-signing keys: GET /v1/certificates/keys (no token: public keys are
 * public, and verifiers need them), GET /v1/certificates/public-key (the current key
 * alone, no token), POST /v1/certificates/keys/rotate (admin).
 */
import { createRoute, type OpenAPIHono, z } from '@hono/zod-openapi';
import { type AuthEnv, authorize, type TokenStore } from '../auth.js';
import { authErrors, json, security } from '../schemas.js';
import type { Services } from '../services.js';

const SigningKeySchema = z
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

const KeyListSchema = z.object({ keys: z.array(SigningKeySchema) }).openapi('CertificateSigningKeys');

const RotationSchema = z.object({ current: SigningKeySchema, retired: SigningKeySchema }).openapi('CertificateKeyRotation');

const CurrentKeySchema = z.object({ algorithm: z.literal('Ed25519'), keyId: z.string(), publicKey: z.string() }).openapi('CertificateKey');

export function registerCertificateRoutes(app: OpenAPIHono<AuthEnv>, services: Services, tokens: TokenStore): void {
  app.openapi(
    createRoute({
      method: 'get',
      path: '/v1/certificates/keys',
      security: [], // public: no token
      tags: ['certificates'],
      summary: 'Every certificate-signing public key, current and retired, with ids, states and times (no token needed)',
      description:
        'The trusted set for `lethe certificate verify --url`: a certificate is valid only when the key its payload names (signingKeyId) is listed here and its signature holds under that key. The key a certificate carries is never trusted by itself.',
      responses: { 200: json(KeyListSchema, 'The current key first, then the retired keys, most recently retired first') },
    }),
    async (c) => c.json({ keys: await services.certificateKeys.list() }, 200),
  );

  app.openapi(
    createRoute({
      method: 'get',
      path: '/v1/certificates/public-key',
      security: [], // public: no token
      tags: ['certificates'],
      summary: 'The current certificate-signing public key alone (no token needed); GET /v1/certificates/keys also lists the retired ones',
      responses: { 200: json(CurrentKeySchema, 'The key, base64url, and its id') },
    }),
    async (c) => {
      const [current] = await services.certificateKeys.list();
      return c.json({ algorithm: 'Ed25519' as const, keyId: current!.keyId, publicKey: current!.publicKey }, 200);
    },
  );

  app.openapi(
    createRoute({
      method: 'post',
      path: '/v1/certificates/keys/rotate',
      tags: ['certificates', 'admin'],
      summary: 'A new certificate-signing key; the current one retires (its private part destroyed, its public part still listed)',
      description: 'Certificates signed from now on (including provisional ones turning final) name the new key. Audited as certificate.key.rotate.',
      security,
      middleware: [authorize(tokens, 'admin')] as const,
      responses: { 200: json(RotationSchema, 'The new current key and the key it retired'), ...authErrors },
    }),
    async (c) => c.json(await services.certificateKeys.rotate(c.get('role')), 200),
  );
}
