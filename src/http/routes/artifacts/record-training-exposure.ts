/** POST /v1/training-exposures (recordTrainingExposure): record that entries or artifacts went into a fine-tuning or distillation corpus. */
import { createRoute, type OpenAPIHono, z } from '@hono/zod-openapi';
import { MAX_EXPOSURE_IDS } from '../../../artifacts/exposures.js';
import type { Services } from '../../services.js';
import { type AuthEnv, authorize, type TokenStore } from '../../auth.js';
import { authErrors, json, jsonBody, problemResponse, security } from '../../schemas.js';
import { RecordId } from './shared.js';

/** The services this route calls. */
export interface Uses {
  readonly exposures: Pick<Services['exposures'], 'register'>;
}

export const route = createRoute({
  operationId: 'recordTrainingExposure',
  method: 'post',
  path: '/v1/training-exposures',
  tags: ['artifacts'],
  summary: 'Record that entries or artifacts went into a fine-tuning or distillation corpus',
  security,
  request: {
    body: jsonBody(
      z
        .object({ corpus: z.string().min(1).max(200), model: z.string().min(1).max(200).optional(), ids: z.array(RecordId).min(1).max(MAX_EXPOSURE_IDS) })
        .openapi('TrainingExposureRequest'),
    ),
  },
  responses: {
    201: json(z.object({ exposureId: z.string(), records: z.number().int(), subjects: z.number().int() }).openapi('TrainingExposure'), 'Recorded'),
    422: problemResponse('unknown_source'),
    ...authErrors,
  },
});

export function register(app: OpenAPIHono<AuthEnv>, services: Uses, tokens: TokenStore): void {
  app.openapi({ ...route, middleware: [authorize(tokens, 'writer')] as const }, async (c) =>
    c.json(await services.exposures.register(c.req.valid('json'), c.get('role')), 201),
  );
}
