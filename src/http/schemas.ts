/** Shared zod schemas: they validate requests and produce the OpenAPI document. */
import { z } from '@hono/zod-openapi';
import { ID_PATTERNS, type IdPrefix, idRule, SUBJECT_ID_PATTERN, SUBJECT_ID_RULE } from '../ids.js';

export const ProblemSchema = z
  .object({
    type: z.string(),
    title: z.string(),
    status: z.number().int(),
    detail: z.string(),
    code: z.string().openapi({ example: 'validation_failed' }),
    retryable: z
      .literal(true)
      .optional()
      .openapi({ description: 'Present when the same request may succeed if made again (an append with the same Idempotency-Key): clients retry it' }),
  })
  .openapi('Problem');

export const problemResponse = (description: string) => ({
  description,
  content: { 'application/problem+json': { schema: ProblemSchema } },
});

/** The challenge header of every 401 (problem.ts sets it). */
export const WwwAuthenticateHeaders = z.object({
  'WWW-Authenticate': z.string().openapi({ description: 'The challenge: a bearer token is required (RFC 6750).', example: 'Bearer realm="lethe"' }),
});

/** The header of an answer that opened (or found) an erasure: where to follow it. */
export const ErasureLocationHeaders = z.object({
  Location: z.string().openapi({
    description: "The erasure's path: GET it for its view, …/events for its transitions, …/certificate once it is certified.",
    example: '/v1/erasures/ers_3q2-7wEXAMPLE000000000',
  }),
});

/** The error responses every authenticated route can give. */
export const authErrors = {
  400: problemResponse('validation_failed: malformed JSON or a schema violation'),
  401: { ...problemResponse('unauthorized: missing or unknown token'), headers: WwwAuthenticateHeaders },
  403: problemResponse("forbidden: the token's role may not call this"),
  413: problemResponse('payload_too_large'),
} as const;

export const SubjectParam = z.object({
  subject: z
    .string()
    .regex(SUBJECT_ID_PATTERN, SUBJECT_ID_RULE)
    .openapi({ param: { name: 'subject', in: 'path' }, example: 'user:42' }),
});

export const KeyIdSchema = z.string().min(1).max(255);

/**
 * A lethe id in the path: the pattern of its kind (src/ids.ts) is in the OpenAPI
 * document, and anything else — malformed, NUL, a surrogate — is 400
 * `validation_failed` naming the parameter, on every route alike (a well-formed id
 * lethe does not know is the route's 404).
 */
export const idParam = (prefix: IdPrefix, name: string) =>
  z
    .string()
    .regex(ID_PATTERNS[prefix], `${name} must be ${idRule(prefix)}`)
    .openapi({ param: { name, in: 'path' }, example: `${prefix}_3q2-7wEXAMPLE000000000` });

export const security = [{ bearer: [] }];

export const json = <T extends z.ZodType>(schema: T, description: string) => ({
  description,
  content: { 'application/json': { schema } },
});

export const jsonBody = <T extends z.ZodType>(schema: T) => ({
  required: true,
  content: { 'application/json': { schema } },
});
