/** POST /v1/backups (takeBackup): take a backup: ciphertext objects (incremental), the wrapped key table, a manifest. */
import { createRoute, type OpenAPIHono, z } from '@hono/zod-openapi';
import { isLetheError } from '../../../errors.js';
import type { Services } from '../../services.js';
import { type AuthEnv, authorize, type TokenStore } from '../../auth.js';
import { authErrors, json, problemResponse, security } from '../../schemas.js';

/** The services this route calls. */
export interface Uses {
  readonly backups: Pick<Services['backups'], 'run'>;
}

export const route = createRoute({
  operationId: 'takeBackup',
  method: 'post',
  path: '/v1/backups',
  tags: ['backups'],
  summary: 'Take a backup: ciphertext objects (incremental), the wrapped key table, a manifest',
  description: 'With `Accept: application/x-ndjson` the answer streams `{ progress }` lines while the job runs and the result (or `{ error }`) last.',
  security,
  responses: {
    201: json(z.object({ backupId: z.string(), objects: z.number().int(), keys: z.number().int() }).openapi('BackupTaken'), 'Stored'),
    503: problemResponse('unavailable: the object store or database did not answer'),
    ...authErrors,
  },
});

export function register(app: OpenAPIHono<AuthEnv>, services: Uses, tokens: TokenStore): void {
  app.openapi({ ...route, middleware: [authorize(tokens, 'backup')] as const }, async (c) => {
    // `Accept: application/x-ndjson`: progress as JSON lines while it runs, the result last
    if ((c.req.header('accept') ?? '').includes('application/x-ndjson')) {
      const encoder = new TextEncoder();
      const line = (value: unknown) => encoder.encode(`${JSON.stringify(value)}\n`);
      const body = new ReadableStream<Uint8Array>({
        async start(controller) {
          try {
            const b = await services.backups.run({ onProgress: (progress) => controller.enqueue(line({ progress })) });
            controller.enqueue(line({ backupId: b.backupId, objects: b.objects, keys: b.keys }));
          } catch (e) {
            // the status is already sent: the error is the last line
            const code = isLetheError(e) ? e.code : 'internal';
            controller.enqueue(line({ error: { code, detail: isLetheError(e) ? e.message : 'internal error' } }));
          }
          controller.close();
        },
      });
      return new Response(body, { status: 201, headers: { 'content-type': 'application/x-ndjson', 'cache-control': 'no-store' } }) as never;
    }
    const b = await services.backups.run();
    return c.json({ backupId: b.backupId, objects: b.objects, keys: b.keys }, 201);
  });
}
