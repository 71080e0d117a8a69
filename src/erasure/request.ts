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

/**
 * Why the controller asks for the erasure, in the categories a data-protection officer
 * files it under (GDPR Art. 17(1)'s grounds, and `other`). Shown in words on the report.
 */
export const REASON_CATEGORIES = [
  'withdrawn-consent',
  'no-longer-necessary',
  'objection',
  'unlawful-processing',
  'legal-obligation',
  'child-consent',
  'other',
] as const;
export type ReasonCategory = (typeof REASON_CATEGORIES)[number];

export const MAX_REQUEST_LEGAL_BASIS_CHARS = 200;
export const MAX_CONTROLLER_CHARS = 200;
export const MAX_REFERENCE_CHARS = 100;

/** One line of text: no control characters (a line break, a NUL, an escape). */
const ONE_LINE = /^[^\x00-\x1f\x7f-\x9f]*$/;
const NOT_PERSONAL = 'must not be personal data';
const line = (max: number) =>
  z.string().trim().min(1, `1 to ${max} characters`).max(max, `1 to ${max} characters`).regex(ONE_LINE, 'one line of text, no control characters');

/**
 * The request's context, kept in the clear (the `erasures.request_context` column), shown
 * on the report's first page and signed into the certificate: it must not be personal
 * data — a category, a legal reference, the controller's name and its own ticket id, never
 * the person's name, e-mail or subject id (a field that contains the subject id is refused).
 */
export const RequestContextSchema = z
  .object({
    reasonCategory: z.enum(REASON_CATEGORIES, { error: `must be one of ${REASON_CATEGORIES.join(', ')}` }),
    /** The legal provision the request rests on, e.g. `GDPR Art. 17(1)(b)`. */
    legalBasis: line(MAX_REQUEST_LEGAL_BASIS_CHARS),
    /** The data controller that asked (an organisation). */
    controller: line(MAX_CONTROLLER_CHARS),
    /** The controller's own reference for the request (its ticket id). */
    reference: line(MAX_REFERENCE_CHARS),
  })
  .strict()
  .meta({
    description: `Why and for whom the erasure is made: ${NOT_PERSONAL} (it is kept in the clear, shown on the report and signed into the certificate).`,
  });

export type RequestContext = z.infer<typeof RequestContextSchema>;

/** The stored context of an erasure (`erasures.request_context`), parsed on every read; undefined when it has none. */
export function requestContextOf(row: { readonly requestContext: unknown }): RequestContext | undefined {
  return row.requestContext === null || row.requestContext === undefined ? undefined : RequestContextSchema.parse(row.requestContext);
}

export const UnlearningSchema = z
  .object({
    method: z.string().min(1, METHOD_LENGTH).max(MAX_UNLEARNING_METHOD_CHARS, METHOD_LENGTH),
    bound: z.number({ error: 'must be a number >= 0' }).finite().min(0, 'must be a number >= 0'),
  })
  .strict();

export type Unlearning = z.infer<typeof UnlearningSchema>;

/**
 * `erasures.unlearning` as stored: the bound alone, in the clear (certify decides on it).
 * The method is free text and is sealed with the request under the erasure key; rows
 * stored before it was sealed carry it here too, and are read as they are.
 */
const StoredUnlearningSchema = z.object({ bound: z.number().finite().min(0), method: z.string().optional() });

/** The stated unlearning bound of a stored erasure; null when none was stated. */
export function unlearningBoundOf(row: { readonly unlearning: unknown }): { readonly bound: number } | null {
  if (row.unlearning === null || row.unlearning === undefined) return null;
  return { bound: StoredUnlearningSchema.parse(row.unlearning).bound };
}

export const ErasureRequestSchema = z
  .object({
    subject: z.string().regex(SUBJECT_ID_PATTERN, SUBJECT_ID_RULE),
    reason: z.string().max(MAX_REASON_CHARS, `at most ${MAX_REASON_CHARS} characters`).optional(),
    legalBasis: z.enum(LEGAL_BASES, { error: `must be one of ${LEGAL_BASES.join(', ')}` }).optional(),
    publicAttributes: z
      .array(z.string().min(1, ATTRIBUTE_LENGTH).max(MAX_PUBLIC_ATTRIBUTE_CHARS, ATTRIBUTE_LENGTH))
      .max(MAX_PUBLIC_ATTRIBUTES, `at most ${MAX_PUBLIC_ATTRIBUTES}`)
      .optional(),
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
    /** The request's context (reason category, legal basis, controller, reference): none of it personal data. */
    request: RequestContextSchema.optional(),
  })
  .strict()
  .superRefine((r, ctx) => {
    // the context is kept in the clear: it must not name the subject
    for (const field of ['legalBasis', 'controller', 'reference'] as const) {
      if (r.request && r.request[field].includes(r.subject))
        ctx.addIssue({ code: 'custom', path: ['request', field], message: `${NOT_PERSONAL}: it contains the subject id` });
    }
    // a living subject's own records would match its public attributes: the probe could never pass
    for (const field of ['publicAttributes', 'unlearning'] as const) {
      if (r.entryIds && r[field] !== undefined)
        ctx.addIssue({ code: 'custom', path: [field], message: 'applies to erasing a whole subject, not to forgetting entries (entryIds)' });
    }
  });

export type ErasureRequest = z.infer<typeof ErasureRequestSchema>;

/** Subjects one bulk erasure request names at most. */
export const MAX_BULK_SUBJECTS = 1000;

/**
 * POST /v1/erasures/batch: many subjects erased at once, each its own erasure (and its
 * own certificate), with the fields every one of them shares. What is about one
 * person (public attributes, entry ids) is not shared: ask for those one at a time.
 */
export const BulkErasureRequestSchema = z
  .object({
    subjects: z
      .array(z.string().regex(SUBJECT_ID_PATTERN, SUBJECT_ID_RULE))
      .min(1, 'name at least one subject')
      .max(MAX_BULK_SUBJECTS, `at most ${MAX_BULK_SUBJECTS}`),
    reason: z.string().max(MAX_REASON_CHARS, `at most ${MAX_REASON_CHARS} characters`).optional(),
    legalBasis: z.enum(LEGAL_BASES, { error: `must be one of ${LEGAL_BASES.join(', ')}` }).optional(),
    unlearning: UnlearningSchema.optional(),
    request: RequestContextSchema.optional(),
  })
  .strict()
  .superRefine((r, ctx) => {
    const seen = new Set<string>();
    r.subjects.forEach((subject, i) => {
      if (seen.has(subject)) ctx.addIssue({ code: 'custom', path: ['subjects', i], message: 'named twice' });
      seen.add(subject);
      // the context is kept in the clear: it must not name any of the subjects
      for (const field of ['legalBasis', 'controller', 'reference'] as const) {
        if (r.request && r.request[field].includes(subject))
          ctx.addIssue({ code: 'custom', path: ['request', field], message: `${NOT_PERSONAL}: it contains subject ${i + 1}'s id` });
      }
    });
  });

export type BulkErasureRequest = z.infer<typeof BulkErasureRequestSchema>;

export const MAX_OVERRIDE_REASON_CHARS = 500;
const OVERRIDE_REASON = `1 to ${MAX_OVERRIDE_REASON_CHARS} characters (it is audited: state why, never the subject's content)`;

/**
 * A redaction names records the erasure's last probe named (a match, or a dismissed
 * match); `override` (admin only, audited) takes records it did not name, with a reason.
 */
export const RedactionRequestSchema = z
  .object({
    ids: z.array(z.string().min(1).max(100)).min(1).max(MAX_REDACTION_IDS),
    override: z
      .object({ reason: z.string().trim().min(1, OVERRIDE_REASON).max(MAX_OVERRIDE_REASON_CHARS, OVERRIDE_REASON) })
      .strict()
      .optional(),
  })
  .strict();

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

/** `POST …/dismissals/{dismissalId}/revoke`: why the proposal is rejected, or the ruling revoked (optional, audited and kept with the ruling). */
export const DismissalRevocationSchema = z
  .object({ reason: z.string().trim().min(1, DISMISSAL_REASON).max(MAX_DISMISSAL_REASON_CHARS, DISMISSAL_REASON).optional() })
  .strict();

export type DismissalRevocation = z.infer<typeof DismissalRevocationSchema>;

/** Who asks: the token's role and, over HTTP, the principal behind the token (src/vault/principals.ts). */
export interface Actor {
  readonly role: string;
  /** `prn_…`; absent for in-process callers, who can propose and revoke but never approve. */
  readonly principal?: string | undefined;
}

/** A caller named by its role alone (in-process) or by role and principal (over HTTP). */
export function actorOf(actor: string | Actor): Actor {
  return typeof actor === 'string' ? { role: actor } : actor;
}

/** A dismissal (a proposal, until a second principal approves it) is `dsm_` and 22 base64url characters. */
export const DISMISSAL_ID_PATTERN = ID_PATTERNS.dsm;
/** An erasure id is `ers_` and 22 base64url characters. */
export const ERASURE_ID_PATTERN = ID_PATTERNS.ers;
