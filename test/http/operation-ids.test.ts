/**
 * Generated clients read well: every operation of the OpenAPI document names a
 * hand-written camelCase verbNoun operationId, unique, and the list below is the API's
 * method names in a generated client (renaming one is a breaking change for them). The
 * document is built as `npm run lint:openapi` builds it: over services never called, no
 * database.
 */
import openapiTS, { astToString } from 'openapi-typescript';
import { describe, expect, it } from 'vitest';
import { createHttpApp } from '../../src/http/app.js';
import { TokenStore } from '../../src/http/auth.js';
import { withOperationIds } from '../../src/http/docs.js';
import type { Services } from '../../src/http/services.js';
import { createLogger } from '../../src/observability/logger.js';
import { createMetrics } from '../../src/observability/metrics.js';

const OPERATIONS: Record<string, string> = {
  'GET /healthz': 'checkLiveness',
  'GET /readyz': 'checkReadiness',
  'PUT /v1/subjects/{subject}/key': 'ensureSubjectKey',
  'POST /v1/subjects/{subject}/key/lease': 'leaseSubjectKey',
  'DELETE /v1/subjects/{subject}/key/lease/{leaseId}': 'releaseKeyLease',
  'POST /v1/keys/batch': 'createSubjectKeys',
  'POST /v1/keys/validity': 'checkKeyValidity',
  'POST /v1/admin/kek/rotate': 'rotateKek',
  'GET /v1/admin/kek': 'listKekEpochs',
  'POST /v1/admin/keys/{keyId}/destroy': 'destroyKey',
  'POST /v1/subjects/{subject}/reinstate': 'reinstateSubject',
  'POST /v1/subjects/{subject}/entries': 'appendEntry',
  'GET /v1/subjects/{subject}/entries': 'listEntries',
  'GET /v1/entries/{entryId}': 'getEntry',
  'DELETE /v1/entries/{entryId}': 'forgetEntry',
  'POST /v1/subjects/{subject}/entries/{entryId}/supersede': 'supersedeEntry',
  'POST /v1/subjects/{subject}/supersede': 'supersedeEntries',
  'POST /v1/subjects/{subject}/entries/reservations': 'reserveEntries',
  'POST /v1/segments': 'registerSegment',
  'POST /v1/subjects/{subject}/items/lookup': 'lookupItem',
  'POST /v1/subjects/{subject}/items/search': 'searchItems',
  'GET /v1/items/namespaces': 'listItemNamespaces',
  'POST /v1/artifacts': 'writeArtifact',
  'GET /v1/artifacts': 'listArtifacts',
  'GET /v1/artifacts/{artifactId}': 'getArtifact',
  'GET /v1/artifacts/{artifactId}/provenance': 'getArtifactProvenance',
  'POST /v1/artifacts/{artifactId}/regenerate': 'regenerateArtifact',
  'POST /v1/search': 'searchMemory',
  'POST /v1/training-exposures': 'recordTrainingExposure',
  'POST /v1/backups': 'takeBackup',
  'GET /v1/backups': 'listBackups',
  'GET /v1/backups/{backupId}/manifest': 'getBackupManifest',
  'POST /v1/erasures': 'requestErasure',
  'GET /v1/erasures': 'listErasures',
  'POST /v1/erasures/batch': 'requestBulkErasure',
  'GET /v1/erasures/{erasureId}': 'getErasure',
  'GET /v1/erasures/{erasureId}/events': 'followErasureEvents',
  'GET /v1/erasures/{erasureId}/report': 'getErasureReport',
  'POST /v1/erasures/{erasureId}/report-link': 'createReportLink',
  'GET /v1/erasures/{erasureId}/certificate': 'getErasureCertificate',
  'POST /v1/erasures/{erasureId}/redactions': 'redactRecords',
  'POST /v1/erasures/{erasureId}/dismissals': 'proposeDismissal',
  'POST /v1/erasures/{erasureId}/dismissals/{dismissalId}/approve': 'approveDismissal',
  'POST /v1/erasures/{erasureId}/dismissals/{dismissalId}/revoke': 'revokeDismissal',
  'POST /v1/erasures/{erasureId}/resume': 'resumeErasure',
  'GET /v1/certificates/keys': 'listSigningKeys',
  'GET /v1/certificates/public-key': 'getSigningPublicKey',
  'POST /v1/certificates/keys/rotate': 'rotateSigningKey',
};

type Document = { paths: Record<string, Record<string, { operationId?: string }>> };

async function servedDocument(): Promise<Document> {
  const base = { metrics: createMetrics(), logger: createLogger('silent'), config: { bodyLimitBytes: 1 } };
  const services = new Proxy(base, {
    get(target, name) {
      if (name in target) return target[name as keyof typeof target];
      throw new Error(`building the OpenAPI document touched services.${String(name)}`);
    },
  }) as unknown as Services;
  const res = await createHttpApp({ services, tokens: TokenStore.fromPairs([]) }).request('/openapi.json');
  expect(res.status).toBe(200);
  return (await res.json()) as Document;
}

describe('operationIds', () => {
  it('every operation has a hand-written camelCase verbNoun operationId, unique, as listed', async () => {
    const doc = await servedDocument();
    const found: Record<string, string> = {};
    for (const [path, ops] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(ops)) {
        expect(op.operationId, `${method} ${path}`).toMatch(/^[a-z]+[A-Za-z]*$/);
        found[`${method.toUpperCase()} ${path}`] = op.operationId!;
      }
    }
    expect(found).toEqual(OPERATIONS);
    const ids = Object.values(found);
    expect(new Set(ids).size).toBe(ids.length);
    // none is the old method-and-path name
    for (const id of ids) expect(id).not.toMatch(/^(get|post|put|delete)[A-Z].*By[A-Z]/);
  });

  it('serving refuses an operation without an operationId, with a bad one, or two with one name', () => {
    const doc = (paths: Record<string, unknown>) => ({ paths });
    expect(() => withOperationIds(doc({ '/v1/x': { get: { summary: 'x' } } }))).toThrow(/GET \/v1\/x needs a camelCase operationId/);
    expect(() => withOperationIds(doc({ '/v1/x': { get: { operationId: 'get_x' } } }))).toThrow(/needs a camelCase operationId/);
    expect(() => withOperationIds(doc({ '/v1/x': { get: { operationId: 'getX' } }, '/v1/y': { post: { operationId: 'getX' } } }))).toThrow(
      /operationId getX names both GET \/v1\/x and POST \/v1\/y/,
    );
  });

  it('the client openapi-typescript generates names each operation by its operationId', async () => {
    const doc = await servedDocument();
    const generated = astToString(await openapiTS(doc as unknown as Parameters<typeof openapiTS>[0]));
    // the generated `operations` interface holds one member per operation, and each path refers to it by name
    const members = [...generated.matchAll(/^ {4}([a-z][A-Za-z]*): \{$/gm)].map((m) => m[1]);
    for (const id of Object.values(OPERATIONS)) {
      expect(members, id).toContain(id);
      expect(generated).toContain(`operations["${id}"]`);
    }
  });
});
