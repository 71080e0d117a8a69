/**
 * Wire types of the subjects' data keys (PUT /v1/subjects/{subject}/key, POST …/key/lease,
 * POST /v1/keys/validity): declared once, as zod schemas, and imported by the routes,
 * the TypeScript client (its facade and its writer). Plain zod (`.meta`).
 */
import { z } from 'zod';

/** A subject's live key. */
export const SubjectKeySchema = z
  .object({
    subject: z.string(),
    keyId: z.string(),
    state: z.enum(['active', 'fenced']),
    createdAt: z.string().meta({ format: 'date-time' }),
  })
  .meta({ id: 'SubjectKey' });
export type SubjectKey = z.infer<typeof SubjectKeySchema>;

/** A lease of a subject's data key, as the service sends it: the DEK in base64url. */
export const KeyLeaseSchema = z
  .object({
    keyId: z.string(),
    dek: z.string().meta({ description: 'base64url (no padding) of the 32-byte data key' }),
    leaseId: z.string(),
    expiresAt: z.string().meta({ format: 'date-time' }),
  })
  .meta({ id: 'KeyLease' });
export type KeyLeaseAnswer = z.infer<typeof KeyLeaseSchema>;

/** Where a key stands, for a backup job deciding what it may keep. */
export const KEY_VALIDITY_STATES = ['active', 'destruction_pending', 'destroyed', 'unknown'] as const;
export type KeyValidityState = (typeof KEY_VALIDITY_STATES)[number];

/** POST /v1/keys/validity: the state of each key id asked about. */
export const KeyValiditySchema = z.object({ keys: z.record(z.string(), z.enum(KEY_VALIDITY_STATES)) }).meta({ id: 'KeyValidity' });
export type KeyValidity = z.infer<typeof KeyValiditySchema>;
