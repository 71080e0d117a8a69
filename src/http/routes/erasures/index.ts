/** The erasures operations, one file each, registered in the order the OpenAPI document lists them. */
import type { OpenAPIHono } from '@hono/zod-openapi';
import type { AuthEnv, TokenStore } from '../../auth.js';
import * as requestErasure from './request-erasure.js';
import * as requestBulkErasure from './request-bulk-erasure.js';
import * as forgetEntry from './forget-entry.js';
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

/** The services the erasures routes call, together. */
export type Uses = requestErasure.Uses &
  requestBulkErasure.Uses &
  forgetEntry.Uses &
  listErasures.Uses &
  getErasure.Uses &
  followErasureEvents.Uses &
  getErasureReport.Uses &
  createReportLink.Uses &
  getErasureCertificate.Uses &
  redactRecords.Uses &
  proposeDismissal.Uses &
  approveDismissal.Uses &
  revokeDismissal.Uses &
  resumeErasure.Uses;

export function registerErasureRoutes(app: OpenAPIHono<AuthEnv>, services: Uses, tokens: TokenStore): void {
  requestErasure.register(app, services, tokens);
  requestBulkErasure.register(app, services, tokens);
  forgetEntry.register(app, services, tokens);
  listErasures.register(app, services, tokens);
  getErasure.register(app, services, tokens);
  followErasureEvents.register(app, services, tokens);
  getErasureReport.register(app, services, tokens);
  createReportLink.register(app, services, tokens);
  getErasureCertificate.register(app, services, tokens);
  redactRecords.register(app, services, tokens);
  proposeDismissal.register(app, services, tokens);
  approveDismissal.register(app, services, tokens);
  revokeDismissal.register(app, services, tokens);
  resumeErasure.register(app, services, tokens);
}
