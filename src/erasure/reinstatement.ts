/**
 * What a reinstatement request looks like (`POST /v1/subjects/{subject}/reinstate`):
 * one schema, imported by the route (which validates and documents it) and the CLI
 * (which checks `--reason` against it before any request). Pure: no I/O, nothing that
 * loads the database.
 */
import { z } from 'zod';

export const MAX_REINSTATE_REASON_CHARS = 500;
const REASON = `1 to ${MAX_REINSTATE_REASON_CHARS} characters (kept in the clear in the audit log: say why, never who)`;

export const ReinstateRequestSchema = z.object({ reason: z.string().trim().min(1, REASON).max(MAX_REINSTATE_REASON_CHARS, REASON) }).strict();

export type ReinstateRequest = z.infer<typeof ReinstateRequestSchema>;
