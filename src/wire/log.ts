/**
 * Wire types of the episodic log (POST/GET /v1/subjects/{subject}/entries, GET
 * /v1/entries/{entryId}, POST /v1/segments): declared once, as zod schemas, and imported
 * by the routes, the TypeScript client and the CLI. Plain zod (`.meta`, no OpenAPI
 * extension), so that the client can ship them.
 */
import { z } from 'zod';
import { ID_PATTERNS, SEGMENT_KEY_PATTERN, SUBJECT_ID_PATTERN, SUBJECT_ID_RULE } from '../ids.js';
import { StoreItemSchema } from '../log/payload.js';

/** An entry as the service reads it back (a log row). */
export const EntrySchema = z
  .object({
    entryId: z.string(),
    seq: z.number().int(),
    text: z.string(),
    kind: z.string().nullable(),
    metadata: z.record(z.string(), z.unknown()).nullable(),
    createdAt: z.string().meta({ format: 'date-time' }),
  })
  .meta({ id: 'Entry' });
export type Entry = z.infer<typeof EntrySchema>;

/** What an append stored. */
export const AppendedEntrySchema = z.object({ entryId: z.string(), keyId: z.string(), seq: z.number().int() }).meta({ id: 'AppendedEntry' });
export type AppendedEntry = z.infer<typeof AppendedEntrySchema>;

/** POST /v1/subjects/{subject}/entries/{entryId}/supersede: the successor appended, and the erasure forgetting the old version. */
export const SupersededSchema = z
  .object({
    entry: AppendedEntrySchema,
    superseded: z.object({ entryId: z.string(), erasureId: z.string(), status: z.string() }),
  })
  .meta({ id: 'Superseded' });
export type Superseded = z.infer<typeof SupersededSchema>;

/** POST /v1/subjects/{subject}/supersede: the successors appended, and the erasure forgetting the old versions. */
export const SupersededManySchema = z
  .object({
    entries: z.array(AppendedEntrySchema),
    superseded: z.object({ entryIds: z.array(z.string()), erasureId: z.string(), status: z.string() }),
  })
  .meta({ id: 'SupersededMany' });
export type SupersededMany = z.infer<typeof SupersededManySchema>;

/** POST /v1/subjects/{subject}/entries/reservations: sequence numbers reserved under the subject's key, `firstSeq` to `firstSeq + count - 1`. */
export const ReservationSchema = z
  .object({
    keyId: z.string(),
    firstSeq: z.number().int(),
    count: z
      .number()
      .int()
      .meta({ description: 'How many were reserved: at most the count asked, fewer when the head key has less room (a key holds a shard of entries)' }),
  })
  .meta({ id: 'Reservation' });
export type Reservation = z.infer<typeof ReservationSchema>;

/** One entry of a segment a writer sealed and uploaded itself, as POST /v1/segments takes it (identifiers only). */
export const SegmentEntrySchema = z.object({
  entryId: z.string().regex(ID_PATTERNS.entry, 'must be entry_<22 base64url characters>'),
  subject: z.string().regex(SUBJECT_ID_PATTERN, SUBJECT_ID_RULE).meta({ example: 'user:42' }),
  keyId: z.string().min(1).max(100),
  seq: z.number().int().min(1),
  offset: z.number().int().min(0),
  length: z.number().int().min(1),
  wrappedKey: z
    .string()
    .regex(/^[A-Za-z0-9_-]{40,200}$/, 'must be base64url')
    .optional()
    .meta({
      description:
        "The entry's record key wrapped under the key it names (base64url). Absent: a frame sealed under the subject key itself (writers before record keys).",
    }),
  item: StoreItemSchema.optional(),
});
export type SegmentEntry = z.infer<typeof SegmentEntrySchema>;

/** POST /v1/segments: a segment's place in the object store and its entries. */
export const SegmentRegistrationSchema = z
  .object({
    segment: z.string().regex(SEGMENT_KEY_PATTERN, 'must be log/seg_<22 base64url characters>'),
    entries: z.array(SegmentEntrySchema).min(1).max(10_000),
  })
  .meta({ id: 'RegisterSegmentRequest' });
export type SegmentRegistration = z.infer<typeof SegmentRegistrationSchema>;

/** What POST /v1/segments answers for each entry (`registered`: indexed and queued for the search indexer). */
export const REGISTRATION_STATUSES = ['registered', 'key_destroyed', 'subject_erased', 'erasure_in_progress'] as const;
export type RegistrationStatus = (typeof REGISTRATION_STATUSES)[number];

/** POST /v1/segments' answer: per entry, its outcome. */
export const SegmentRegistrationResultSchema = z.object({ results: z.array(z.object({ entryId: z.string(), status: z.enum(REGISTRATION_STATUSES) })) });
export type SegmentRegistrationResult = z.infer<typeof SegmentRegistrationResultSchema>;
