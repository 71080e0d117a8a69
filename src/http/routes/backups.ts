/** Backups: POST/GET /v1/backups, GET /v1/backups/{backupId}/manifest. */
import { createRoute, type OpenAPIHono, z } from '@hono/zod-openapi';
import { isLetheError } from '../../errors.js';
import { decodeCursor, listErrors, NextCursor, PageQuery, pageOf } from '../cursor.js';
import type { Services } from '../services.js';
import { type AuthEnv, authorize, type TokenStore } from '../auth.js';
import { authErrors, idParam, json, problemResponse, security } from '../schemas.js';

const BackupIdParam = z.object({
  backupId: idParam('bak', 'backupId'),
});

const ManifestSchema = z
  .object({
    format: z.string(),
    backupId: z.string(),
    version: z.number().int(),
    createdAt: z.string(),
    updatedAt: z.string(),
    keyTable: z.object({ key: z.string(), sha256: z.string(), keys: z.number().int() }),
    objects: z.array(z.object({ key: z.string(), sha256: z.string(), size: z.number().int(), stored: z.string(), keyIds: z.array(z.string()) })),
    keys: z.array(
      z.object({
        keyId: z.string(),
        kind: z.enum(['subject', 'artifact-version', 'unknown']),
        state: z.enum(['active', 'destroyed']),
        destroyedAt: z.string().optional(),
      }),
    ),
    base: z.object({ version: z.number().int(), mac: z.string().nullable() }).openapi({
      description: 'The manifest as written with the backup (never rewritten): its version and MAC. The keys above are its keys folded with the ledger chain.',
    }),
    overlay: z.object({ destroyed: z.number().int(), through: z.number().int().nullable() }).openapi({
      description: 'What the backup bucket\'s ledger chain adds to the base: how many keys it marks destroyed after the backup, and the newest chain record among them.',
    }),
  })
  .openapi('BackupManifest');

export function registerBackupRoutes(app: OpenAPIHono<AuthEnv>, services: Services, tokens: TokenStore): void {
  app.openapi(
    createRoute({
      method: 'post',
      path: '/v1/backups',
      tags: ['backups'],
      summary: 'Take a backup: ciphertext objects (incremental), the wrapped key table, a manifest',
      description: 'With `Accept: application/x-ndjson` the answer streams `{ progress }` lines while the job runs and the result (or `{ error }`) last.',
      security,
      middleware: [authorize(tokens, 'backup')] as const,
      responses: {
        201: json(z.object({ backupId: z.string(), objects: z.number().int(), keys: z.number().int() }).openapi('BackupTaken'), 'Stored'),
        503: problemResponse('unavailable: the object store or database did not answer'),
        ...authErrors,
      },
    }),
    async (c) => {
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
    },
  );

  app.openapi(
    createRoute({
      method: 'get',
      path: '/v1/backups',
      tags: ['backups'],
      summary: 'The backups taken, oldest first, a page at a time',
      description: 'Ordered by (createdAt, backupId). `limit` per page (default 100); `nextCursor` (null on the last page) is the `cursor` of the next.',
      security,
      middleware: [authorize(tokens, 'backup')] as const,
      request: { query: PageQuery },
      responses: {
        200: json(
          z.object({
            backups: z.array(
              z.object({ backupId: z.string(), createdAt: z.string(), objects: z.number().int(), keys: z.number().int(), manifestVersion: z.number().int() }),
            ),
            nextCursor: NextCursor,
          }),
          'A page of backups',
        ),
        ...listErrors,
      },
    }),
    async (c) => {
      const { limit, cursor } = c.req.valid('query');
      const after = decodeCursor('backups', cursor);
      const page = pageOf('backups', await services.backups.list({ after, limit: limit + 1 }), limit, (b) => b.position);
      const backups = page.items.map(({ position: _, ...b }) => ({ ...b, createdAt: b.createdAt.toISOString() }));
      return c.json({ backups, nextCursor: page.nextCursor }, 200);
    },
  );

  app.openapi(
    createRoute({
      method: 'get',
      path: '/v1/backups/{backupId}/manifest',
      tags: ['backups'],
      summary: 'A backup\'s manifest as it stands: the base written with the backup, folded with every later destruction the ledger chain holds',
      security,
      middleware: [authorize(tokens, 'backup')] as const,
      request: { params: BackupIdParam },
      responses: {
        200: json(ManifestSchema, 'The manifest'),
        404: problemResponse('not_found'),
        ...authErrors,
      },
    }),
    async (c) => c.json(await services.backups.manifest(c.req.valid('param').backupId), 200),
  );
}
