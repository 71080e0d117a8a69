/** The schemas the erasure routes share: the erasure, its request and answers, the erasure id in the path. */
import { z } from '@hono/zod-openapi';
import { BulkErasureRequestSchema, ErasureRequestSchema } from '../../../erasure/request.js';
import { CertificateViewSchema, DismissalAcceptedSchema, ErasureAcceptedSchema, ErasureViewSchema } from '../../../erasure/view.js';
import { PageQuery } from '../../cursor.js';
import { authErrors, idParam, problemResponse, SubjectParam } from '../../schemas.js';

export const ErasureIdParam = z.object({
  erasureId: idParam('ers', 'erasureId'),
});

export const DismissalParams = ErasureIdParam.extend({ dismissalId: idParam('dsm', 'dismissalId') });

export const DismissalAccepted = DismissalAcceptedSchema.meta({ id: 'DismissalAccepted' });

/** What the routes on one proposed dismissal answer besides their success: `conflict` says what else is refused. */
export function dismissalAnswers(conflict: string) {
  return {
    ...authErrors,
    404: problemResponse('not_found: no such erasure, or no such dismissal of it'),
    409: problemResponse(`conflict: the erasure is running or failed, its fingerprints are gone, or ${conflict}`),
  };
}

export const ErasureRequest = ErasureRequestSchema.meta({ id: 'ErasureRequest' });

export const ErasureSchema = ErasureViewSchema.meta({ id: 'Erasure' });

export const Accepted = ErasureAcceptedSchema.meta({ id: 'ErasureAccepted' });

export const BulkErasureRequest = BulkErasureRequestSchema.meta({ id: 'BulkErasureRequest' });

export { BulkErasureAcceptedSchema as BulkAccepted } from '../../../wire/erasures.js';

export const CertificateSchema = CertificateViewSchema.meta({
  id: 'ErasureCertificate',
  description:
    'Ed25519 over the canonical JSON of `payload`; `payload.signingKeyId` names the signing key. Check it against the keys of GET /v1/certificates/keys (`lethe certificate verify --url`), never against the `publicKey` it carries.',
});

export const ErasureListQuery = PageQuery.extend({
  subject: SubjectParam.shape.subject
    .optional()
    .openapi({ param: { name: 'subject', in: 'query' }, description: "Only this subject's erasures.", example: 'user:42' }),
});

export { actorOf } from '../../actor.js';
