/**
 * What an entry carries — text, kind, metadata — and its limits: the one schema a
 * service append's body (the route validates and documents it), a writer's input (the
 * client checks it before sealing) and a writer-sealed frame (registration checks it
 * once opened) are held to, so that `GET /v1/entries/{id}` never answers a body the
 * published `Entry` schema does not describe. Pure: no I/O.
 */
import { z } from 'zod';

/** Text above this answers 413 from the service; a frame holding more is refused at registration. */
export const MAX_ENTRY_TEXT_BYTES = 64 * 1024;
export const MAX_KIND_CHARS = 64;
/** Metadata's size as JSON (UTF-8). */
export const MAX_METADATA_BYTES = 16 * 1024;

// Messages read after the field's name: `body.kind: 1 to 64 characters`.
const KIND = `1 to ${MAX_KIND_CHARS} characters`;
const METADATA = `a JSON object of at most ${MAX_METADATA_BYTES} bytes as JSON`;

const jsonBytes = (value: unknown): number => Buffer.byteLength(JSON.stringify(value) ?? '', 'utf8');

export const EntryKindSchema = z.string({ error: `must be a string of ${KIND}` }).min(1, KIND).max(MAX_KIND_CHARS, KIND);

export const EntryMetadataSchema = z
  .record(z.string(), z.unknown(), { error: `must be ${METADATA}` })
  .refine((m) => jsonBytes(m) <= MAX_METADATA_BYTES, `must be ${METADATA}`);

/** A service append's body. The text's size is the service's to check (413, not 400). */
export const AppendEntrySchema = z.object({
  text: z.string().meta({ description: `at most ${MAX_ENTRY_TEXT_BYTES / 1024} KiB of UTF-8 (413 above)` }),
  kind: EntryKindSchema.optional(),
  metadata: EntryMetadataSchema.optional(),
});

export type AppendEntry = z.infer<typeof AppendEntrySchema>;

/** A frame's payload once opened: absent kind and metadata are null. */
export const FramePayloadSchema = z.object({
  text: z
    .string({ error: 'must be a string' })
    .refine((t) => Buffer.byteLength(t, 'utf8') <= MAX_ENTRY_TEXT_BYTES, `at most ${MAX_ENTRY_TEXT_BYTES} bytes of UTF-8`),
  kind: EntryKindSchema.nullable(),
  metadata: EntryMetadataSchema.nullable(),
});

/** Why a value is not a valid entry payload (`kind: 1 to 64 characters`), or undefined when it is one. */
export function payloadProblem(schema: z.ZodType, value: unknown): string | undefined {
  const result = schema.safeParse(value);
  if (result.success) return undefined;
  const issue = result.error.issues[0];
  const field = issue && issue.path.length > 0 ? issue.path.join('.') : 'payload';
  return `${field}: ${issue?.message ?? 'invalid'}`;
}
