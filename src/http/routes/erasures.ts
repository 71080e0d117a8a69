/**
 * Erasure: POST /v1/erasures, GET /v1/erasures/{id}, .../events (SSE), .../report
 * (HTML; a bearer token or a signed, expiring report link), .../report-link, .../certificate (the signed document alone), .../redactions, .../dismissals
 * (a proposal) and .../dismissals/{id}/approve (a second principal) or /revoke, .../resume (a failed erasure, again from the step that failed).
 * The signing keys' routes are in certificates.ts.
 */
import { createRoute, type OpenAPIHono, z } from '@hono/zod-openapi';
import type { Context, MiddlewareHandler } from 'hono';
import { streamSSE } from 'hono/streaming';
import { renderReport, REPORT_CSP } from '../../erasure/report/index.js';
import { DEFAULT_LINK_SECONDS, MAX_LINK_SECONDS, MIN_LINK_SECONDS } from '../../erasure/report-link.js';
import { LetheError } from '../../errors.js';
import {
  type Actor,
  BulkErasureRequestSchema,
  DismissalRequestSchema,
  DismissalRevocationSchema,
  ErasureRequestSchema,
  MAX_BULK_SUBJECTS,
  RedactionRequestSchema,
} from '../../erasure/request.js';
import { CertificateViewSchema, DismissalAcceptedSchema, ErasureAcceptedSchema, ErasureViewSchema } from '../../erasure/view.js';
import { type AuthEnv, authorize, type TokenStore } from '../auth.js';
import { problem } from '../problem.js';
import { decodeCursor, listErrors, NextCursor, PageQuery, pageOf } from '../cursor.js';
import { authErrors, idParam, json, jsonBody, problemResponse, security, SubjectParam } from '../schemas.js';
import type { Services } from '../services.js';
import { StreamLimit } from '../stream-limit.js';

const ErasureIdParam = z.object({
  erasureId: idParam('ers', 'erasureId'),
});
const DismissalParams = ErasureIdParam.extend({ dismissalId: idParam('dsm', 'dismissalId') });
const DismissalAccepted = DismissalAcceptedSchema.meta({ id: 'DismissalAccepted' });

/** What the routes on one proposed dismissal answer besides their success: `conflict` says what else is refused. */
function dismissalAnswers(conflict: string) {
  return {
    ...authErrors,
    404: problemResponse('not_found: no such erasure, or no such dismissal of it'),
    409: problemResponse(`conflict: the erasure is running or failed, its fingerprints are gone, or ${conflict}`),
  };
}

const ErasureRequest = ErasureRequestSchema.meta({ id: 'ErasureRequest' });
const ErasureSchema = ErasureViewSchema.meta({ id: 'Erasure' });
const Accepted = ErasureAcceptedSchema.meta({ id: 'ErasureAccepted' });
const BulkErasureRequest = BulkErasureRequestSchema.meta({ id: 'BulkErasureRequest' });
const BulkItem = z
  .union([
    z.object({ index: z.number().int(), erasureId: z.string(), status: ErasureAcceptedSchema.shape.status, created: z.boolean() }),
    z.object({ index: z.number().int(), error: z.object({ code: z.string(), detail: z.string() }) }),
  ])
  .openapi({ description: 'One subject of the request, by its index in `subjects` (the subject id is not repeated): its erasure (`created`: new; else the one already open), or why it was refused (`code` as a problem\'s, e.g. not_found: lethe has never seen the subject).' });
const BulkAccepted = z
  .object({
    erasures: z.array(BulkItem),
    created: z.number().int().openapi({ description: 'New erasures.' }),
    open: z.number().int().openapi({ description: 'Subjects whose erasure was already open: that erasure.' }),
    refused: z.number().int().openapi({ description: 'Subjects refused (their item says why).' }),
  })
  .meta({ id: 'BulkErasureAccepted' });
const CertificateSchema = CertificateViewSchema.meta({
  id: 'ErasureCertificate',
  description:
    'Ed25519 over the canonical JSON of `payload`; `payload.signingKeyId` names the signing key. Check it against the keys of GET /v1/certificates/keys (`lethe certificate verify --url`), never against the `publicKey` it carries.',
});

const ErasureListQuery = PageQuery.extend({
  subject: SubjectParam.shape.subject.optional().openapi({ param: { name: 'subject', in: 'query' }, description: 'Only this subject\'s erasures.', example: 'user:42' }),
});

/** What a 429 `too_many_streams` suggests waiting before trying again. */
const STREAM_RETRY_AFTER_SECONDS = 5;
/** How long one event's write may wait on the client before its stream is ended (a reader that stopped reading). */
const STREAM_WRITE_TIMEOUT_MS = 30_000;
/** What is answered (to no one) to a client that left before its stream started (nginx's "client closed request"). */
const CLIENT_CLOSED_REQUEST = 499;

/** Whether the client of a request is still there, watched independently of the response stream. */
interface Client {
  /** The client went away. */
  readonly gone: boolean;
  /** Calls `listener` once when the client goes, at once if it has gone. */
  onGone(listener: () => void): void;
  /** Drops the client's connection (on the Node server; nothing elsewhere). */
  drop(): void;
  /** Stops watching. */
  dispose(): void;
}

/**
 * Watches the request's connection: on the Node server its socket — neither the adapter
 * nor the stream notices a client that left before the response started, and a write to
 * its closed socket never completes — elsewhere (app.request) the request's signal, if it
 * ever aborts. Call it before the handler's first await.
 */
function watchClient(c: Context<AuthEnv>): Client {
  const socket = c.env?.incoming?.socket;
  const signal = socket ? undefined : c.req.raw.signal;
  let gone = socket ? socket.destroyed : (signal?.aborted ?? false);
  let listener: (() => void) | undefined;
  const went = () => {
    if (gone) return;
    gone = true;
    const call = listener;
    listener = undefined;
    call?.();
  };
  socket?.once('close', went);
  signal?.addEventListener('abort', went, { once: true });
  return {
    get gone() {
      return gone;
    },
    onGone(l) {
      if (gone) l();
      else listener = l;
    },
    drop() {
      socket?.destroy();
    },
    dispose() {
      listener = undefined;
      socket?.off('close', went);
      signal?.removeEventListener('abort', went);
    },
  };
}

/** Whether `work` settled within `ms`. */
async function within(work: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([work.then(() => true), timedOut]);
  } finally {
    clearTimeout(timer);
  }
}

export function registerErasureRoutes(app: OpenAPIHono<AuthEnv>, services: Services, tokens: TokenStore): void {
  /** The caller: its role, and the principal behind its token (never the token). */
  const actor = (c: Context<AuthEnv>): Actor => ({ role: c.get('role'), principal: services.principals.name(tokens.digestOf(c.get('token'))) });
  const streams = new StreamLimit(services.config.sseStreamsPerToken, (open) => services.metrics.erasureStreams.set(open));
  app.openapi(
    createRoute({
      method: 'post',
      path: '/v1/erasures',
      tags: ['erasure'],
      summary: 'Request the erasure of a subject, or (with entryIds) forget some of its entries (idempotent while it is open)',
      description:
        'Without `entryIds`: the whole subject — its key destroyed, everything derived from it regenerated, the subject tombstoned. ' +
        'With `entryIds`: a records-scope erasure — those entries are unreadable from the answer on, the subject is re-keyed without them ' +
        '(its other entries\' record keys re-wrapped under a new key, the old key destroyed), every artifact citing them regenerated, the probe ' +
        'run for their content, a certificate signed; the subject keeps writing. Asking again for the entries one erasure already forgets answers that erasure.',
      security,
      middleware: [authorize(tokens, 'eraser')] as const,
      request: { body: jsonBody(ErasureRequest) },
      responses: {
        202: { ...json(Accepted, 'Accepted: the erasure runs in the background'), headers: z.object({ Location: z.string() }) },
        200: json(Accepted, 'The subject\'s erasure is already open (or these entries are already being forgotten): the same erasure'),
        404: problemResponse('not_found: lethe has never seen the subject, or an entry is not one of the subject\'s'),
        409: problemResponse('conflict: some of the entries are already being forgotten by another erasure; erasure_in_progress: the whole subject is being erased'),
        410: problemResponse('key_destroyed: an entry is already erased'),
        ...authErrors,
      },
    }),
    async (c) => {
      const body = c.req.valid('json');
      const result = await services.erasures.request(body, actor(c));
      c.header('Location', `/v1/erasures/${result.erasureId}`);
      return c.json({ erasureId: result.erasureId, status: result.status }, result.created ? 202 : 200);
    },
  );

  app.openapi(
    createRoute({
      method: 'post',
      path: '/v1/erasures/batch',
      tags: ['erasure'],
      summary: `Request the erasure of many subjects at once (up to ${MAX_BULK_SUBJECTS}): one erasure and one certificate each`,
      description:
        'Each subject is requested as `POST /v1/erasures` would request it — a new erasure, or the subject\'s open one — with the fields they share. ' +
        'A subject refused (lethe has never seen it, …) is answered in its own item and stops no other. The erasures then run as any other, on every replica, ' +
        'destructions waiting for the ledger at the same moment sharing one chain record. Follow each with `GET /v1/erasures/{erasureId}`.',
      security,
      middleware: [authorize(tokens, 'eraser')] as const,
      request: { body: jsonBody(BulkErasureRequest) },
      responses: {
        202: json(BulkAccepted, 'Accepted: at least one new erasure runs in the background'),
        200: json(BulkAccepted, 'No new erasure: every subject\'s erasure was already open, or refused'),
        ...authErrors,
      },
    }),
    async (c) => {
      const items = await services.erasures.requestMany(c.req.valid('json'), actor(c));
      const created = items.filter((i) => 'created' in i && i.created).length;
      const open = items.filter((i) => 'created' in i && !i.created).length;
      return c.json({ erasures: items, created, open, refused: items.length - created - open }, created > 0 ? 202 : 200);
    },
  );

  app.openapi(
    createRoute({
      method: 'delete',
      path: '/v1/entries/{entryId}',
      tags: ['erasure'],
      summary: 'Forget one memory: a records-scope erasure of the entry',
      description:
        'The entry answers 410 `entry_forgotten` from this answer on and leaves lists and search; the erasure re-keys its subject without it ' +
        '(the subject keeps writing), regenerates every artifact that cites it, and certifies. Idempotent: forgetting it again answers the same erasure (200).',
      security,
      middleware: [authorize(tokens, 'eraser')] as const,
      request: { params: z.object({ entryId: idParam('entry', 'entryId') }) },
      responses: {
        202: { ...json(Accepted, 'Accepted: the erasure runs in the background'), headers: z.object({ Location: z.string() }) },
        200: json(Accepted, 'The entry is already being forgotten (or was): that erasure'),
        404: problemResponse('not_found: no such entry'),
        409: problemResponse('erasure_in_progress: the whole subject is being erased'),
        410: problemResponse('key_destroyed: the entry is already erased'),
        ...authErrors,
      },
    }),
    async (c) => {
      const result = await services.erasures.forgetEntry(c.req.valid('param').entryId, actor(c));
      c.header('Location', `/v1/erasures/${result.erasureId}`);
      return c.json({ erasureId: result.erasureId, status: result.status }, result.created ? 202 : 200);
    },
  );

  app.openapi(
    createRoute({
      method: 'get',
      path: '/v1/erasures',
      tags: ['erasure'],
      summary: 'The erasures, oldest first, a page at a time (each as GET /v1/erasures/{erasureId} answers it)',
      description:
        'Ordered by (createdAt, erasureId). With `subject`, only that subject\'s erasures (looked up by its keyed hash; the id is not kept). ' +
        '`limit` per page (default 100); `nextCursor` (null on the last page) is the `cursor` of the next.',
      security,
      middleware: [authorize(tokens, 'eraser', 'approver')] as const,
      request: { query: ErasureListQuery },
      responses: {
        200: json(z.object({ erasures: z.array(ErasureSchema), nextCursor: NextCursor }), 'A page of erasures'),
        ...listErrors,
      },
    }),
    async (c) => {
      const { limit, cursor, subject } = c.req.valid('query');
      const after = decodeCursor('erasures', cursor);
      const page = pageOf('erasures', await services.erasures.list({ after, limit: limit + 1, subject }), limit, (e) => e.position);
      return c.json({ erasures: page.items.map((e) => e.view), nextCursor: page.nextCursor }, 200);
    },
  );

  app.openapi(
    createRoute({
      method: 'get',
      path: '/v1/erasures/{erasureId}',
      tags: ['erasure'],
      summary: 'Status, class, steps, residuals, probe and certificate of an erasure',
      description: 'Also readable by the approver role, which rules on dismissals: `dismissals` lists every proposal with its status; `readableByRuling` the records an approved ruling keeps readable.',
      security,
      middleware: [authorize(tokens, 'eraser', 'approver')] as const,
      request: { params: ErasureIdParam },
      responses: { 200: json(ErasureSchema, 'The erasure'), 404: problemResponse('not_found'), ...authErrors },
    }),
    async (c) => c.json(await services.erasures.get(c.req.valid('param').erasureId), 200),
  );

  app.openapi(
    createRoute({
      method: 'get',
      path: '/v1/erasures/{erasureId}/events',
      tags: ['erasure'],
      summary: 'Server-sent events of step progress, ending when the erasure finishes',
      description:
        'Each transition is one `step` event (JSON: id, fromStep, toStep, status, at, detail) with its id as the event id; `Last-Event-ID` resumes. A final `end` event carries the status. ' +
        'A token may hold LETHE_SSE_STREAMS_PER_TOKEN streams open at once per replica (429 `too_many_streams` with Retry-After above it).',
      security,
      middleware: [authorize(tokens, 'eraser')] as const,
      request: { params: ErasureIdParam },
      responses: {
        200: { description: 'text/event-stream', content: { 'text/event-stream': { schema: z.string() } } },
        404: problemResponse('not_found'),
        429: problemResponse('too_many_streams: the token holds as many open event streams as it may; close one, or retry after Retry-After seconds'),
        ...authErrors,
      },
    }),
    async (c) => {
      const { erasureId } = c.req.valid('param');
      const lastId = Number(c.req.header('last-event-id') ?? 0);
      const after = Number.isInteger(lastId) && lastId > 0 ? lastId : 0;
      const release = streams.acquire(c.get('token'));
      if (!release) {
        return problem(c, 'too_many_streams', `a token may hold ${streams.perToken} event streams open at once; close one first`, {
          'retry-after': String(STREAM_RETRY_AFTER_SECONDS),
        }) as never;
      }
      // hooked before the first await: a client that leaves while the status is read must give its slot back
      const client = watchClient(c);
      try {
        await services.erasures.status(erasureId); // 404 before the stream starts
      } catch (e) {
        client.dispose();
        release();
        throw e;
      }
      if (client.gone) {
        // nobody is left to read the stream: streaming now would wait forever on its first write
        client.dispose();
        release();
        return new Response(null, { status: CLIENT_CLOSED_REQUEST }) as never;
      }
      return streamSSE(c, async (stream) => {
        // the erasure's shared watcher (one per erasure on this replica) fans its events out to this stream
        const follower = services.erasures.follow(erasureId, after);
        const leave = () => {
          follower.close(); // ends the loop below
          stream.abort(); // cancels a write in progress
          release();
        };
        stream.onAbort(() => follower.close());
        client.onGone(leave); // at once if the client already left
        if (stream.aborted) follower.close(); // gone before the listener was added
        try {
          for await (const event of follower) {
            if (stream.aborted || client.gone) break;
            const written =
              event.kind === 'step'
                ? stream.writeSSE({ event: 'step', id: String(event.transition.id), data: JSON.stringify(event.transition) })
                : stream.writeSSE({ event: 'end', data: JSON.stringify(event.end) });
            if (!(await within(written, STREAM_WRITE_TIMEOUT_MS))) {
              // a reader that stopped reading: end its stream and drop its connection
              leave();
              client.drop();
              break;
            }
          }
        } finally {
          client.dispose();
          follower.close();
          release();
        }
      });
    },
  );

  app.openAPIRegistry.registerComponent('securitySchemes', 'reportLink', {
    type: 'apiKey',
    in: 'query',
    name: 'sig',
    description: 'A report link (POST /v1/erasures/{erasureId}/report-link): `sig` with its `exp`, for GET /v1/erasures/{erasureId}/report alone.',
  });
  const eraserOnly = authorize(tokens, 'eraser');
  const eraserOrApprover = authorize(tokens, 'eraser', 'approver');
  /** Either a bearer token or a report link. */
  const reportSecurity: Array<Record<string, string[]>> = [{ bearer: [] }, { reportLink: [] }];
  /** A bearer token of the eraser, approver (or admin) role, or a report link: it opens this erasure's report and nothing else, until it expires. */
  const reportAccess: MiddlewareHandler<AuthEnv> = async (c, next) => {
    const q = c.req.query();
    if (q.sig === undefined && q.exp === undefined) return eraserOrApprover(c, next);
    try {
      services.reportLinks.verify(c.req.param('erasureId') ?? '', q.exp, q.sig);
    } catch (e) {
      if (e instanceof LetheError) return problem(c, e.code, e.message, { 'cache-control': 'no-store', 'referrer-policy': 'no-referrer' });
      throw e;
    }
    await next();
  };
  app.openapi(
    createRoute({
      method: 'get',
      path: '/v1/erasures/{erasureId}/report',
      tags: ['erasure'],
      summary: 'The report a data-protection officer reads and signs (self-contained HTML; a bearer token, or a report link)',
      description:
        'Page one in plain language (the request, what was erased, the outcome and its history, what remains, the certificate state), then the timeline in time order, ' +
        'the technical detail and an appendix with the certificate JSON and how to verify it; printable on A4. ' +
        'Opened with a report link (`exp` and `sig` from POST …/report-link) it needs no token until `exp`; such a link opens this report and nothing else. ' +
        'Answered with a strict Content-Security-Policy, `Referrer-Policy: no-referrer` and `Cache-Control: no-store`.',
      security: reportSecurity,
      middleware: [reportAccess] as const,
      request: {
        params: ErasureIdParam,
        query: z.object({
          exp: z.string().regex(/^[0-9]{1,12}$/, 'Unix seconds').optional().openapi({ description: 'A report link\'s expiry (Unix seconds), with `sig`' }),
          sig: z.string().regex(/^[A-Za-z0-9_-]{43}$/, 'base64url').optional().openapi({ description: 'A report link\'s signature, with `exp`' }),
        }),
      },
      responses: {
        200: { description: 'text/html', content: { 'text/html': { schema: z.string() } } },
        404: problemResponse('not_found'),
        ...authErrors,
        403: problemResponse('forbidden: the token\'s role may not read reports, or the report link is expired, forged, or for another erasure'),
      },
    }),
    async (c) => {
      const { erasureId } = c.req.valid('param');
      const view = await services.erasures.get(erasureId);
      const transitions = await services.erasures.allTransitions(erasureId);
      c.header('content-security-policy', `${REPORT_CSP}; frame-ancestors 'none'`);
      c.header('cache-control', 'no-store');
      c.header('referrer-policy', 'no-referrer');
      c.header('x-content-type-options', 'nosniff');
      return c.html(renderReport(view, { transitions })) as never;
    },
  );

  app.openapi(
    createRoute({
      method: 'post',
      path: '/v1/erasures/{erasureId}/report-link',
      tags: ['erasure'],
      summary: 'A shareable link to the erasure\'s report that opens without a token until it expires',
      description:
        `Answers \`GET /v1/erasures/{erasureId}/report?exp=…&sig=…\`: an HMAC-SHA256 under a vault key used for nothing else, binding the erasure id and the expiry. ` +
        `It opens this report alone, and only until \`expiresAt\` (default ${DEFAULT_LINK_SECONDS / 86400} days, at most ${MAX_LINK_SECONDS / 86400}); it cannot be revoked sooner, so keep it short. ` +
        'Anyone holding the link can read the report: share it as you would the report. Audited as erasure.report.link.',
      security,
      middleware: [eraserOnly] as const,
      request: {
        params: ErasureIdParam,
        body: {
          required: false,
          content: {
            'application/json': {
              schema: z
                .object({
                  expiresInSeconds: z
                    .number()
                    .int('must be a whole number of seconds')
                    .min(MIN_LINK_SECONDS, `at least ${MIN_LINK_SECONDS}`)
                    .max(MAX_LINK_SECONDS, `at most ${MAX_LINK_SECONDS} (30 days)`)
                    .optional()
                    .openapi({ description: `How long the link lasts, in seconds (default ${DEFAULT_LINK_SECONDS}: 7 days)` }),
                })
                .strict()
                .meta({ id: 'ReportLinkRequest' }),
            },
          },
        },
      },
      responses: {
        201: json(
          z
            .object({
              url: z.string().openapi({ description: 'The link, absolute, as this request reached the service (behind a proxy, prefer `path` on the public address)' }),
              path: z.string().openapi({ description: '/v1/erasures/{erasureId}/report?exp=…&sig=…' }),
              expiresAt: z.string().openapi({ format: 'date-time' }),
            })
            .meta({ id: 'ReportLink' }),
          'The link',
        ),
        404: problemResponse('not_found'),
        ...authErrors,
      },
    }),
    async (c) => {
      const { erasureId } = c.req.valid('param');
      const body = (c.req.valid('json') ?? {}) as { expiresInSeconds?: number };
      const link = await services.reportLinks.issue(erasureId, body.expiresInSeconds, c.get('role'));
      c.header('cache-control', 'no-store');
      return c.json({ url: new URL(link.path, c.req.url).toString(), path: link.path, expiresAt: link.expiresAt.toISOString() }, 201);
    },
  );

  app.openapi(
    createRoute({
      method: 'get',
      path: '/v1/erasures/{erasureId}/certificate',
      tags: ['erasure'],
      summary: 'The erasure\'s signed certificate alone (JSON), as `lethe certificate verify` reads it',
      security,
      middleware: [authorize(tokens, 'eraser')] as const,
      request: { params: ErasureIdParam },
      responses: {
        200: json(CertificateSchema, 'The certificate: { payload, signature, publicKey, algorithm }'),
        404: problemResponse('not_found: no such erasure'),
        409: problemResponse('conflict: the erasure has no certificate yet (still running, or failed)'),
        ...authErrors,
      },
    }),
    async (c) => {
      const certificate = await services.erasures.certificate(c.req.valid('param').erasureId);
      c.header('cache-control', 'no-store');
      return c.json(certificate, 200);
    },
  );

  app.openapi(
    createRoute({
      method: 'post',
      path: '/v1/erasures/{erasureId}/redactions',
      tags: ['erasure'],
      summary: 'Redact the erased subject\'s content from other subjects\' records, then probe again',
      description:
        'Re-keys each named entry\'s subject log without it (the old key is destroyed), regenerates what was derived from it, and reruns propagate, probe and certify. ' +
        'Only records the erasure\'s last probe named (a match, or a dismissed match) are taken: anything else is 422 `not_a_match`, unless an admin gives `override.reason` (audited as erasure.redaction.override).',
      security,
      middleware: [authorize(tokens, 'eraser')] as const,
      request: { params: ErasureIdParam, body: jsonBody(RedactionRequestSchema.meta({ id: 'RedactionRequest' })) },
      responses: {
        202: json(Accepted, 'Accepted: the redaction runs in the background'),
        404: problemResponse('not_found'),
        409: problemResponse('conflict: the erasure is still running, failed, or its fingerprints are gone'),
        422: problemResponse('not_a_match: a record the erasure\'s last probe did not name (an admin may override with a reason)'),
        ...authErrors,
        400: problemResponse('validation_failed: malformed body, or an id that is not another subject\'s readable entry'),
        403: problemResponse('forbidden: the token\'s role may not call this endpoint, or an override by a role other than admin'),
      },
    }),
    async (c) => {
      const { erasureId } = c.req.valid('param');
      const body = c.req.valid('json');
      const result = await services.erasures.redact(erasureId, body.ids, actor(c), body.override);
      return c.json(result, 202);
    },
  );

  app.openapi(
    createRoute({
      method: 'post',
      path: '/v1/erasures/{erasureId}/dismissals',
      tags: ['erasure'],
      summary: 'Propose that records the probe named do not carry the erased subject\'s content (a ruling two people own)',
      description:
        'A stated human judgement, proposed: each ruling (record id, role, principal, time, reason) is kept as `proposed`, audited, and changes nothing — ' +
        'the erasure stays as it is until a second principal with another token (approver or admin; never the proposer, nor the erasure\'s requester) approves it ' +
        '(POST …/dismissals/{dismissalId}/approve). A near copy (a verbatim run of the erased content, or a score of 0.9 or more) cannot be dismissed: order its redaction.',
      security,
      middleware: [authorize(tokens, 'eraser')] as const,
      request: { params: ErasureIdParam, body: jsonBody(DismissalRequestSchema.meta({ id: 'DismissalRequest' })) },
      responses: {
        201: json(DismissalAccepted, 'The proposal; the erasure\'s status is unchanged'),
        404: problemResponse('not_found'),
        409: problemResponse('conflict: the erasure is running or failed, its fingerprints are gone, a record was not named by its probe, is the erased subject\'s own, or already has a proposal'),
        422: problemResponse('near_copy: a record is a near copy of the erased content; it can only be redacted'),
        ...authErrors,
        400: problemResponse('validation_failed: malformed body'),
      },
    }),
    async (c) => {
      const { erasureId } = c.req.valid('param');
      const result = await services.erasures.dismiss(erasureId, c.req.valid('json'), actor(c));
      return c.json(result, 201);
    },
  );

  app.openapi(
    createRoute({
      method: 'post',
      path: '/v1/erasures/{erasureId}/dismissals/{dismissalId}/approve',
      tags: ['erasure'],
      summary: 'Approve a proposed dismissal (a second principal): the probe runs again without its records',
      description:
        'The approver role or admin, with a token other than the one that proposed the dismissal and the one that requested the erasure. ' +
        'Checked again against the last probe (still named, not a near copy); audited as erasure.dismissal.approve. The erasure re-opens at the probe and is certified again; ' +
        'a completion on a ruling says so in its view (`readableByRuling`), its certificate, its report and a `dismissed-content` residual.',
      security,
      middleware: [authorize(tokens, 'approver')] as const,
      request: { params: DismissalParams },
      responses: {
        ...dismissalAnswers('the dismissal is not proposed, or its records are no longer named'),
        202: json(DismissalAccepted, 'Accepted: the probe runs again in the background'),
        422: problemResponse('near_copy: a record became a near copy of the erased content; it can only be redacted'),
        403: problemResponse('forbidden: the role may not approve, or the caller proposed the dismissal or requested the erasure'),
      },
    }),
    async (c) => {
      const { erasureId, dismissalId } = c.req.valid('param');
      return c.json(await services.erasures.approveDismissal(erasureId, dismissalId, actor(c)), 202);
    },
  );

  app.openapi(
    createRoute({
      method: 'post',
      path: '/v1/erasures/{erasureId}/dismissals/{dismissalId}/revoke',
      tags: ['erasure'],
      summary: 'Reject a proposed dismissal, or revoke an approved ruling (the probe runs again and counts its records)',
      description:
        'Either way audited as erasure.dismissal.revoke, with the optional reason. A proposal becomes `rejected` and nothing re-runs (200); ' +
        'an approved ruling becomes `revoked` and the erasure re-opens at the probe on its kept fingerprints (202).',
      security,
      middleware: [authorize(tokens, 'eraser', 'approver')] as const,
      request: {
        params: DismissalParams,
        body: { required: false, content: { 'application/json': { schema: DismissalRevocationSchema.meta({ id: 'DismissalRevocation' }) } } },
      },
      responses: {
        ...dismissalAnswers('the dismissal is already rejected or revoked'),
        200: json(DismissalAccepted, 'The proposal is rejected; the erasure\'s status is unchanged'),
        202: json(DismissalAccepted, 'The ruling is revoked: the probe runs again in the background'),
      },
    }),
    async (c) => {
      const { erasureId, dismissalId } = c.req.valid('param');
      const body = (c.req.valid('json') ?? {}) as { reason?: string };
      const result = await services.erasures.revokeDismissal(erasureId, dismissalId, actor(c), body);
      return c.json(result, result.status === 'running' ? 202 : 200);
    },
  );

  app.openapi(
    createRoute({
      method: 'post',
      path: '/v1/erasures/{erasureId}/resume',
      tags: ['erasure'],
      summary: 'Take a failed erasure up again from the step that failed',
      description:
        'A failed erasure can leave its subject fenced (no lease, no append, no new key) and its key undestroyed: its view says what it left (`left`). ' +
        'Once the cause is fixed, resume it: it goes back to running at the step that failed, with its attempts reset, and a transition row records who resumed it. ' +
        'Transient failures (an unreachable object store or database, a step past its deadline) never fail an erasure: they are retried with capped backoff, shown in `retry`.',
      security,
      middleware: [authorize(tokens, 'eraser')] as const,
      request: { params: ErasureIdParam },
      responses: {
        202: json(ErasureSchema, 'Accepted: the erasure runs again in the background (its view)'),
        404: problemResponse('not_found: no such erasure'),
        409: problemResponse('conflict: the erasure is not failed, or a newer erasure of the same subject exists'),
        ...authErrors,
      },
    }),
    async (c) => c.json(await services.erasures.resume(c.req.valid('param').erasureId, c.get('role')), 202),
  );
}

