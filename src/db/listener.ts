/**
 * The replica-event listener on PostgreSQL: one connection of its own, named
 * `lethe-listener:<pid>` in pg_stat_activity (the pool's connections are `lethe`), that
 * LISTENs on one channel. When the connection drops, the listener says so at once
 * (`onDown`), re-listens after a backoff (1 s, doubling to 10 s, until it succeeds or
 * is stopped) and then says so (`onReconnect`): notifications sent meanwhile were
 * missed, and the caller catches up from the destruction ledger.
 */
import postgres from 'postgres';

/** What this process's listener connection is called in pg_stat_activity. */
export function listenerApplicationName(pid = process.pid): string {
  return `lethe-listener:${pid}`;
}

const FIRST_RETRY_MS = 1000;
const MAX_RETRY_MS = 10_000;

export interface ListenHooks {
  readonly onReconnect?: (() => void) | undefined;
  readonly onDown?: (() => void) | undefined;
}

export async function listenPostgres(
  url: string,
  channel: string,
  onPayload: (payload: string) => void,
  hooks: ListenHooks = {},
): Promise<() => Promise<void>> {
  let stopped = false;
  let retrying = false;
  let timer: NodeJS.Timeout | undefined;
  let delay = FIRST_RETRY_MS;
  // onnotify is an option postgres.js honours (its own listen() uses it) but does not declare
  const options: postgres.Options<{}> & { onnotify: (channel: string, payload: string) => void } = {
    max: 1,
    idle_timeout: undefined,
    max_lifetime: null,
    fetch_types: false,
    connect_timeout: 10,
    onnotice: () => {},
    connection: { application_name: listenerApplicationName() },
    onnotify: (c, payload) => {
      if (c === channel) onPayload(payload);
    },
    onclose: () => {
      if (stopped || retrying) return;
      hooks.onDown?.();
      retry();
    },
  };
  const sql = postgres(url, options);
  const quoted = `"${channel.replace(/"/g, '""')}"`;
  const listen = () => sql.unsafe(`listen ${quoted}`);

  function retry(): void {
    if (stopped || timer) return;
    retrying = true;
    timer = setTimeout(() => {
      timer = undefined;
      if (stopped) return;
      listen().then(
        () => {
          retrying = false;
          delay = FIRST_RETRY_MS;
          if (!stopped) hooks.onReconnect?.();
        },
        () => {
          delay = Math.min(delay * 2, MAX_RETRY_MS);
          retry();
        },
      );
    }, delay);
    timer.unref();
  }

  await listen();
  return async () => {
    stopped = true;
    clearTimeout(timer);
    await sql.end({ timeout: 1 });
  };
}
