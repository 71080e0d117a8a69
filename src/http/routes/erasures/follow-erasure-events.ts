/** GET /v1/erasures/{erasureId}/events (followErasureEvents): server-sent events of step progress, ending when the erasure finishes. */
import { createRoute, type OpenAPIHono, z } from '@hono/zod-openapi';
import { streamSSE } from 'hono/streaming';
import { type AuthEnv, authorize, type TokenStore } from '../../auth.js';
import { problem } from '../../problem.js';
import { authErrors, problemResponse, security } from '../../schemas.js';
import type { Services } from '../../services.js';
import { StreamLimit } from '../../stream-limit.js';
import { ErasureIdParam } from './shared.js';
import { CLIENT_CLOSED_REQUEST, STREAM_RETRY_AFTER_SECONDS, STREAM_WRITE_TIMEOUT_MS, watchClient, within } from './watch-client.js';

/** The services this route calls. */
export interface Uses {
  readonly erasures: Pick<Services['erasures'], 'status' | 'follow'>;
  readonly config: Pick<Services['config'], 'sseStreamsPerToken'>;
  readonly metrics: Pick<Services['metrics'], 'erasureStreams'>;
}

export const route = createRoute({
  operationId: 'followErasureEvents',
  method: 'get',
  path: '/v1/erasures/{erasureId}/events',
  tags: ['erasure'],
  summary: 'Server-sent events of step progress, ending when the erasure finishes',
  description:
    'Each transition is one `step` event (JSON: id, fromStep, toStep, status, at, detail) with its id as the event id; `Last-Event-ID` resumes. A final `end` event carries the status. ' +
    'A token may hold LETHE_SSE_STREAMS_PER_TOKEN streams open at once per replica (429 `too_many_streams` with Retry-After above it).',
  security,
  request: { params: ErasureIdParam },
  responses: {
    200: { description: 'text/event-stream', content: { 'text/event-stream': { schema: z.string() } } },
    404: problemResponse('not_found'),
    429: problemResponse('too_many_streams: the token holds as many open event streams as it may; close one, or retry after Retry-After seconds'),
    ...authErrors,
  },
});

export function register(app: OpenAPIHono<AuthEnv>, services: Uses, tokens: TokenStore): void {
  const streams = new StreamLimit(services.config.sseStreamsPerToken, (open) => services.metrics.erasureStreams.set(open));
  app.openapi({ ...route, middleware: [authorize(tokens, 'eraser')] as const }, async (c) => {
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
  });
}
