/** The artifacts operations, one file each, registered in the order the OpenAPI document lists them. */
import type { OpenAPIHono } from '@hono/zod-openapi';
import type { AuthEnv, TokenStore } from '../../auth.js';
import * as writeArtifact from './write-artifact.js';
import * as listArtifacts from './list-artifacts.js';
import * as getArtifact from './get-artifact.js';
import * as getArtifactProvenance from './get-artifact-provenance.js';
import * as regenerateArtifact from './regenerate-artifact.js';
import * as searchMemory from './search-memory.js';
import * as recordTrainingExposure from './record-training-exposure.js';

/** The services the artifacts routes call, together. */
export type Uses = writeArtifact.Uses &
  listArtifacts.Uses &
  getArtifact.Uses &
  getArtifactProvenance.Uses &
  regenerateArtifact.Uses &
  searchMemory.Uses &
  recordTrainingExposure.Uses;

export function registerArtifactRoutes(app: OpenAPIHono<AuthEnv>, services: Uses, tokens: TokenStore): void {
  writeArtifact.register(app, services, tokens);
  listArtifacts.register(app, services, tokens);
  getArtifact.register(app, services, tokens);
  getArtifactProvenance.register(app, services, tokens);
  regenerateArtifact.register(app, services, tokens);
  searchMemory.register(app, services, tokens);
  recordTrainingExposure.register(app, services, tokens);
}
