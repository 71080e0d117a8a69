/**
 * What an erasure request, a redaction order and a dismissal look like: one schema, its limits
 * and the legal bases, imported by the route (which validates and documents it),
 * the CLI (which checks its flags against it before any request) and the engine.
 * Pure: no I/O, nothing that loads the database.
 */
import { z } from 'zod';
import { ID_PATTERNS, SUBJECT_ID_PATTERN, SUBJECT_ID_RULE } from '../ids.js';

export const LEGAL_BASES = ['gdpr-art17', 'ccpa-1798.105', 'contract'] as const;
export type LegalBasis = (typeof LEGAL_BASES)[number];

export const MAX_REASON_CHARS = 2000;
export const MAX_PUBLIC_ATTRIBUTES = 32;
export const MAX_PUBLIC_ATTRIBUTE_CHARS = 1000;
export const MAX_UNLEARNING_METHOD_CHARS = 500;
export const MAX_REDACTION_IDS = 1000;
/** Entries one records-scope erasure forgets at most. */
export const MAX_FORGET_IDS = 1000;

// Messages read after the field's name: `body.reason: at most 2000 characters` from
// the route, `--reason: at most 2000 characters` from the CLI.
const METHOD_LENGTH = `1 to ${MAX_UNLEARNING_METHOD_CHARS} characters`;
const ATTRIBUTE_LENGTH = `each 1 to ${MAX_PUBLIC_ATTRIBUTE_CHARS} characters`;

export const UnlearningSchema = z
  .object({
    method: z.string().min(1, METHOD_LENGTH).max(MAX_UNLEARNING_METHOD_CHARS, METHOD_LENGTH),
    bound: z.number({ error: 'must be a number >= 0' }).finite().min(0, 'must be a number >= 0'),
  })
  .strict();

export const ErasureRequestSchema = z
  .object({
    subject: z.string().regex(SUBJECT_ID_PATTERN, SUBJECT_ID_RULE),
    reason: z.string().max(MAX_REASON_CHARS, `at most ${MAX_REASON_CHARS} characters`).optional(),
    legalBasis: z.enum(LEGAL_BASES, { error: `must be one of ${LEGAL_BASES.join(', ')}` }).optional(),
    publicAttributes: z.array(z.string().min(1, ATTRIBUTE_LENGTH).max(MAX_PUBLIC_ATTRIBUTE_CHARS, ATTRIBUTE_LENGTH)).max(MAX_PUBLIC_ATTRIBUTES, `at most ${MAX_PUBLIC_ATTRIBUTES}`).optional(),
    unlearning: UnlearningSchema.optional(),
    /**
     * Forget these entries of the subject, not the subject: a records-scope erasure. The
     * subject keeps a live key; its other entries move to a new one.
     */
    entryIds: z
      .array(z.string().regex(ID_PATTERNS.entry, 'each must be entry_<22 base64url characters>'))
      .min(1, 'name at least one entry')
      .max(MAX_FORGET_IDS, `at most ${MAX_FORGET_IDS}`)
      .optional(),
  })
  .strict()
  .superRefine((r, ctx) => {
    // a living subject's own records would match its public attributes: the probe could never pass
    for (const field of ['publicAttributes', 'unlearning'] as const) {
      if (r.entryIds && r[field] !== undefined) ctx.addIssue({ code: 'custom', path: [field], message: 'applies to erasing a whole subject, not to forgetting entries (entryIds)' });
    }
  });

export type ErasureRequest = z.infer<typeof ErasureRequestSchema>;

export const RedactionRequestSchema = z.object({ ids: z.array(z.string().min(1).max(100)).min(1).max(MAX_REDACTION_IDS) }).strict();

export type RedactionRequest = z.infer<typeof RedactionRequestSchema>;

export const MAX_DISMISSALS = 100;
export const MAX_DISMISSAL_REASON_CHARS = 500;
const DISMISSAL_REASON = `1 to ${MAX_DISMISSAL_REASON_CHARS} characters (it is signed into the certificate: state the judgement, never the subject's content)`;

export const DismissalRequestSchema = z
  .object({
    matches: z
      .array(
        z
          .object({
            id: z.string().min(1).max(100),
            reason: z.string().trim().min(1, DISMISSAL_REASON).max(MAX_DISMISSAL_REASON_CHARS, DISMISSAL_REASON),
          })
          .strict(),
      )
      .min(1, 'name at least one match')
      .max(MAX_DISMISSALS, `at most ${MAX_DISMISSALS} per request`),
  })
  .strict();

export type DismissalRequest = z.infer<typeof DismissalRequestSchema>;

/** An erasure id is `ers_` and 22 base64url characters. */
export const ERASURE_ID_PATTERN = ID_PATTERNS.ers;
