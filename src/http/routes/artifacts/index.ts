/** The artifacts operations, one file each, registered in the order the OpenAPI document lists them. */
import type { OpenAPIHono } from '@hono/zod-openapi';
import type { AuthEnv, TokenStore } from '../../auth.js';
import { registerAll, type UsesOf } from '../operations.js';
import * as writeArtifact from './write-artifact.js';
import * as listArtifacts from './list-artifacts.js';
import * as getArtifact from './get-artifact.js';
import * as getArtifactProvenance from './get-artifact-provenance.js';
import * as regenerateArtifact from './regenerate-artifact.js';
import * as searchMemory from './search-memory.js';
import * as recordTrainingExposure from './record-training-exposure.js';

/** The operations, in the order the document lists them. */
const OPERATIONS = [writeArtifact, listArtifacts, getArtifact, getArtifactProvenance, regenerateArtifact, searchMemory, recordTrainingExposure] as const;

/** The services these routes call, together. */
export type Uses = UsesOf<typeof OPERATIONS>;

export function registerArtifactRoutes(app: OpenAPIHono<AuthEnv>, services: Uses, tokens: TokenStore): void {
  registerAll(app, services, tokens, OPERATIONS);
}
