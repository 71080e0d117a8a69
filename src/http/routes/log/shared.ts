/** What the log routes share. */
import { z } from '@hono/zod-openapi';
import { EntrySchema as WireEntrySchema } from '../../../wire/log.js';
import { IDEMPOTENCY_KEY_PATTERN, IDEMPOTENCY_KEY_RULE, IDEMPOTENCY_WINDOW_HOURS } from '../../../log/idempotency.js';
import { AppendEntrySchema } from '../../../log/payload.js';
import type { Entry } from '../../../log/service.js';

export const AppendRequest = AppendEntrySchema.meta({ id: 'AppendEntryRequest' });

export const IdempotencyHeaders = z.object({
  'idempotency-key': z
    .string()
    .regex(IDEMPOTENCY_KEY_PATTERN, `must be ${IDEMPOTENCY_KEY_RULE}`)
    .optional()
    .openapi({
      param: { name: 'idempotency-key', in: 'header' },
      description:
        `Makes the append safe to retry: the first request with the key stores the entry; a retry with the same key and body within ${IDEMPOTENCY_WINDOW_HOURS} hours ` +
        'answers 200 with its result (same entryId) and `Idempotent-Replayed: true`, and stores nothing; the same key with another body is 409 ' +
        '`idempotency_key_reused`. Keys are per subject.',
    }),
});

export { AppendedEntrySchema as Appended } from '../../../wire/log.js';

/** The wire's entry, registered as the OpenAPI extension registers it: the reads that extend it (with a read fence) refer to it. */
export const EntrySchema = WireEntrySchema.openapi('Entry');

export const shape = (e: Entry) => ({
  entryId: e.entryId,
  seq: e.seq,
  text: e.text,
  kind: e.kind,
  metadata: e.metadata,
  createdAt: e.createdAt.toISOString(),
});
