/**
 * What an entry carries — text, kind, metadata — and its limits: the one schema a
 * service append's body (the route validates and documents it), a writer's input (the
 * client checks it before sealing) and a writer-sealed frame (registration checks it
 * once opened) are held to, so that `GET /v1/entries/{id}` never answers a body the
 * published `Entry` schema does not describe, and all three get the same answer.
 *
 * Also the pure checks every JSON document is held to — no nesting deeper than
 * MAX_JSON_DEPTH, no NUL (U+0000) or unpaired UTF-16 surrogate in any string or object
 * key — which the HTTP layer applies to every body (src/http/bad-input.ts imports them
 * from here) and this schema applies to an entry, so a frame that never passed through
 * an HTTP body is held to the same. Both walks are iterative: nothing here recurses on
 * untrusted input, and the size check runs only once the depth is known to be bounded,
 * so no check here throws. Pure: no I/O.
 */
import { z } from 'zod';

/** Text above this answers 413 from the service; a frame holding more is refused at registration. */
export const MAX_ENTRY_TEXT_BYTES = 64 * 1024;
export const MAX_KIND_CHARS = 64;
/** Metadata's size as JSON (UTF-8). */
export const MAX_METADATA_BYTES = 16 * 1024;
/**
 * The deepest nesting of arrays and objects a JSON document may have: an HTTP body, or
 * an entry's payload (the document itself is level 1, so metadata, one level inside
 * its entry, may nest MAX_JSON_DEPTH - 1 levels of its own).
 */
export const MAX_JSON_DEPTH = 32;

/** A field path segment is cut to this many characters in a problem detail. */
const SEGMENT_SHOWN = 64;

/** NUL, a high surrogate not followed by a low one, or a low surrogate not preceded by a high one. */
const BAD_CHARACTER = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** What is wrong with a string, or undefined when it may pass. */
export function badCharacter(s: string): string | undefined {
  const m = BAD_CHARACTER.exec(s);
  if (!m) return undefined;
  return m[0] === '\u0000' ? 'must not contain NUL (U+0000)' : 'must not contain an unpaired UTF-16 surrogate';
}

/**
 * Whether a parsed value nests arrays and objects deeper than `limit` (the value
 * itself is level 1; a scalar is level 0). Walks with an explicit stack, depth first,
 * and stops as soon as the limit is passed — so a cyclic value answers true.
 */
export function nestingExceeds(value: unknown, limit: number): boolean {
  const stack: Array<{ value: unknown; depth: number }> = [{ value, depth: 1 }];
  while (stack.length > 0) {
    const { value: v, depth } = stack.pop()!;
    if (typeof v !== 'object' || v === null) continue;
    if (depth > limit) return true;
    for (const child of Array.isArray(v) ? v : Object.values(v)) {
      if (typeof child === 'object' && child !== null) stack.push({ value: child, depth: depth + 1 });
    }
  }
  return false;
}

/** A bad string in a parsed JSON value: its dotted path under `root` and what is wrong. */
export interface BadString {
  readonly field: string;
  readonly problem: string;
}

const shown = (segment: string): string => {
  const safe = segment.replace(BAD_CHARACTER, '?');
  return safe.length > SEGMENT_SHOWN ? `${safe.slice(0, SEGMENT_SHOWN)}…` : safe;
};

/**
 * The first string (value or key) in `value` that `badCharacter` refuses, walking with
 * an explicit stack. `value` must be acyclic (a parsed value, or one `nestingExceeds`
 * passed).
 */
export function findBadString(value: unknown, root: string): BadString | undefined {
  const stack: Array<{ value: unknown; field: string }> = [{ value, field: root }];
  while (stack.length > 0) {
    const { value: v, field } = stack.pop()!;
    if (typeof v === 'string') {
      const why = badCharacter(v);
      if (why) return { field, problem: why };
    } else if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i--) stack.push({ value: v[i], field: `${field}.${i}` });
    } else if (typeof v === 'object' && v !== null) {
      const entries = Object.entries(v);
      for (const [key] of entries) {
        const why = badCharacter(key);
        if (why) return { field, problem: `a key ${why}` };
      }
      for (let i = entries.length - 1; i >= 0; i--) stack.push({ value: entries[i]![1], field: `${field}.${shown(entries[i]![0])}` });
    }
  }
  return undefined;
}

// Messages read after the field's name: `body.kind: 1 to 64 characters`.
const KIND = `1 to ${MAX_KIND_CHARS} characters`;
const METADATA = `a JSON object of at most ${MAX_METADATA_BYTES} bytes as JSON`;
const METADATA_DEPTH = `JSON nested deeper than ${MAX_JSON_DEPTH} levels (the entry is level 1)`;

/** Metadata's size as JSON, or undefined when it cannot be written as JSON at all (never throws). */
function jsonBytes(value: unknown): number | undefined {
  try {
    return Buffer.byteLength(JSON.stringify(value) ?? '', 'utf8');
  } catch {
    return undefined;
  }
}

/** Refuses a string holding NUL or an unpaired surrogate, as an issue on the field itself. */
const noBadCharacter = (s: string, ctx: z.RefinementCtx): void => {
  const why = badCharacter(s);
  if (why) ctx.addIssue({ code: 'custom', message: why });
};

/**
 * What is wrong with metadata (already known to be a record), as an issue on the field
 * or the nested string at fault: depth first (so neither walk below can meet a cycle or
 * overflow the stack), then size, then the strings (by then at most 16 KiB of JSON).
 */
const metadataChecks = (m: Record<string, unknown>, ctx: z.RefinementCtx): void => {
  if (nestingExceeds(m, MAX_JSON_DEPTH - 1)) return void ctx.addIssue({ code: 'custom', message: METADATA_DEPTH });
  const bytes = jsonBytes(m);
  if (bytes === undefined || bytes > MAX_METADATA_BYTES) return void ctx.addIssue({ code: 'custom', message: `must be ${METADATA}` });
  const bad = findBadString(m, '');
  if (bad) ctx.addIssue({ code: 'custom', message: bad.problem, path: bad.field.split('.').slice(1) });
};

export const EntryKindSchema = z
  .string({ error: `must be a string of ${KIND}` })
  .min(1, KIND)
  .max(MAX_KIND_CHARS, KIND)
  .superRefine(noBadCharacter);

export const EntryMetadataSchema = z.record(z.string(), z.unknown(), { error: `must be ${METADATA}` }).superRefine(metadataChecks);

const LABEL = 'a namespace label: 1 to 256 characters';

/** A store namespace: a path of 1 to 16 labels. */
export const NamespaceSchema = z.array(z.string().min(1, LABEL).max(256, LABEL), { error: 'must be an array of namespace labels' }).min(1).max(16);

/** What an append may name: the store item it holds. */
export const StoreItemSchema = z
  .object({
    namespace: NamespaceSchema,
    key: z.string().min(1, 'a key: 1 to 1024 characters').max(1024, 'a key: 1 to 1024 characters'),
  })
  .strict()
  .meta({ id: 'StoreItem', description: "The store item the entry holds (LangGraph's namespace and key): indexed as keyed hashes only" });

export type StoreItem = z.infer<typeof StoreItemSchema>;

/** A service append's body. The text's size is the service's to check (413, not 400). */
export const AppendEntrySchema = z.object({
  text: z
    .string()
    .superRefine(noBadCharacter)
    .meta({ description: `at most ${MAX_ENTRY_TEXT_BYTES / 1024} KiB of UTF-8 (413 above)` }),
  kind: EntryKindSchema.optional(),
  metadata: EntryMetadataSchema.optional(),
  item: StoreItemSchema.optional(),
});

export type AppendEntry = z.infer<typeof AppendEntrySchema>;

/** A frame's payload once opened: absent kind and metadata are null. */
export const FramePayloadSchema = z.object({
  text: z
    .string({ error: 'must be a string' })
    .refine((t) => Buffer.byteLength(t, 'utf8') <= MAX_ENTRY_TEXT_BYTES, `at most ${MAX_ENTRY_TEXT_BYTES} bytes of UTF-8`)
    .superRefine(noBadCharacter),
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
