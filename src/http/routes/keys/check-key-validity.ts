/** POST /v1/keys/validity (checkKeyValidity): which of these keys are still valid (for backup jobs). */
import { createRoute, type OpenAPIHono } from '@hono/zod-openapi';
import type { Services } from '../../services.js';
import { type AuthEnv, authorize, type TokenStore } from '../../auth.js';
import { authErrors, json, jsonBody, security } from '../../schemas.js';
import { KeyValiditySchema } from '../../../wire/keys.js';
import { ValidityRequest } from './shared.js';

/** The services this route calls. */
export interface Uses {
  readonly keys: Pick<Services['keys'], 'validity'>;
}

export const route = createRoute({
  operationId: 'checkKeyValidity',
  method: 'post',
  path: '/v1/keys/validity',
  tags: ['keys'],
  summary: 'Which of these keys are still valid (for backup jobs)',
  security,
  request: { body: jsonBody(ValidityRequest) },
  responses: { 200: json(KeyValiditySchema, 'State of each key id'), ...authErrors },
});

export function register(app: OpenAPIHono<AuthEnv>, services: Uses, tokens: TokenStore): void {
  app.openapi({ ...route, middleware: [authorize(tokens, 'backup')] as const }, async (c) => {
    const { keyIds } = c.req.valid('json');
    return c.json({ keys: await services.keys.validity(keyIds) }, 200);
  });
}
