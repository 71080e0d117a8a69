/** The erasures operations, one file each, registered in the order the OpenAPI document lists them. */
import type { OpenAPIHono } from '@hono/zod-openapi';
import type { AuthEnv, TokenStore } from '../../auth.js';
import { registerAll, type UsesOf } from '../operations.js';
import * as requestErasure from './request-erasure.js';
import * as requestBulkErasure from './request-bulk-erasure.js';
import * as forgetEntry from './forget-entry.js';
import * as supersedeEntry from './supersede-entry.js';
import * as supersedeEntries from './supersede-entries.js';
import * as listErasures from './list-erasures.js';
import * as getErasure from './get-erasure.js';
import * as followErasureEvents from './follow-erasure-events.js';
import * as getErasureReport from './get-erasure-report.js';
import * as createReportLink from './create-report-link.js';
import * as getErasureCertificate from './get-erasure-certificate.js';
import * as redactRecords from './redact-records.js';
import * as proposeDismissal from './propose-dismissal.js';
import * as approveDismissal from './approve-dismissal.js';
import * as revokeDismissal from './revoke-dismissal.js';
import * as resumeErasure from './resume-erasure.js';

/** The operations, in the order the document lists them. */
const OPERATIONS = [
  requestErasure,
  requestBulkErasure,
  forgetEntry,
  supersedeEntry,
  supersedeEntries,
  listErasures,
  getErasure,
  followErasureEvents,
  getErasureReport,
  createReportLink,
  getErasureCertificate,
  redactRecords,
  proposeDismissal,
  approveDismissal,
  revokeDismissal,
  resumeErasure,
] as const;

/** The services these routes call, together. */
export type Uses = UsesOf<typeof OPERATIONS>;

export function registerErasureRoutes(app: OpenAPIHono<AuthEnv>, services: Uses, tokens: TokenStore): void {
  registerAll(app, services, tokens, OPERATIONS);
}
