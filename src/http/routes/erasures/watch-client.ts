/**
 * What the events stream (follow-erasure-events.ts) needs to notice a client that went
 * away: its socket watched apart from the response stream, and a bounded wait on a write.
 */
import type { Context } from 'hono';
import type { AuthEnv } from '../../auth.js';

/** What a 429 `too_many_streams` suggests waiting before trying again. */
export const STREAM_RETRY_AFTER_SECONDS = 5;

/** How long one event's write may wait on the client before its stream is ended (a reader that stopped reading). */
export const STREAM_WRITE_TIMEOUT_MS = 30_000;

/** What is answered (to no one) to a client that left before its stream started (nginx's "client closed request"). */
export const CLIENT_CLOSED_REQUEST = 499;

/** Whether the client of a request is still there, watched independently of the response stream. */
export interface Client {
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
export function watchClient(c: Context<AuthEnv>): Client {
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
export async function within(work: Promise<unknown>, ms: number): Promise<boolean> {
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
