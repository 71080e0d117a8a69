/**
 * Wire types of erasure answers that are not the erasure's own view: POST
 * /v1/erasures/batch's answer. Declared once, as zod schemas, and imported by the route,
 * the TypeScript client and the CLI. The erasure request and view themselves are the
 * erasure module's (src/erasure/request.ts, view.ts). Plain zod.
 */
import { z } from 'zod';
import { ErasureAcceptedSchema } from '../erasure/view.js';

/** One subject of a bulk request, by its index in `subjects`: its erasure, or why it was refused. */
export const BulkErasureItemSchema = z
  .union([
    z.object({ index: z.number().int(), erasureId: z.string(), status: ErasureAcceptedSchema.shape.status, created: z.boolean() }),
    z.object({ index: z.number().int(), error: z.object({ code: z.string(), detail: z.string() }) }),
  ])
  .meta({
    description:
      "One subject of the request, by its index in `subjects` (the subject id is not repeated): its erasure (`created`: new; else the one already open), or why it was refused (`code` as a problem's, e.g. not_found: lethe has never seen the subject).",
  });
export type BulkErasureItem = z.infer<typeof BulkErasureItemSchema>;

/** POST /v1/erasures/batch: an item per subject, and the counts. */
export const BulkErasureAcceptedSchema = z
  .object({
    erasures: z.array(BulkErasureItemSchema),
    created: z.number().int().meta({ description: 'New erasures.' }),
    open: z.number().int().meta({ description: 'Subjects whose erasure was already open: that erasure.' }),
    refused: z.number().int().meta({ description: 'Subjects refused (their item says why).' }),
  })
  .meta({ id: 'BulkErasureAccepted' });
export type BulkErasureAccepted = z.infer<typeof BulkErasureAcceptedSchema>;

/** POST /v1/erasures/{erasureId}/report-link: a link that opens the report without a token until `expiresAt`. */
export const ReportLinkSchema = z
  .object({
    url: z.string().meta({ description: 'The link, absolute, as this request reached the service (behind a proxy, prefer `path` on the public address)' }),
    path: z.string().meta({ description: '/v1/erasures/{erasureId}/report?exp=…&sig=…' }),
    expiresAt: z.string().meta({ format: 'date-time' }),
  })
  .meta({ id: 'ReportLink' });
export type ReportLink = z.infer<typeof ReportLinkSchema>;
