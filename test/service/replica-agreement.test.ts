/**
 * Replicas that agree, on two `lethe serve` processes over one PostgreSQL: a replica
 * whose LISTEN connection was cut still drops a key destroyed meanwhile (its
 * destruction cursor reads the ledger), and reports it in its heartbeat; an erasure
 * waits for every live replica to apply its destruction, and names a replica that is
 * still behind after the bound (paused with SIGSTOP) instead of claiming it dropped
 * the vectors.
 */
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listenerApplicationName } from '../../src/db/listener.js';
import { createTestDatabase, type TestDatabase } from '../support/pg.js';
import { CLI, type RunningService, startService } from '../support/process.js';
import { TOKENS, tempDir, testEnv } from '../support/vault.js';

const auth = (role: keyof typeof TOKENS) => ({ authorization: `Bearer ${TOKENS[role]}`, 'content-type': 'application/json' });
/** The stated bound: a replica's destruction cursor reads the ledger every second (CATCH_UP_MS), plus the query and a heartbeat write. */
const BOUND_MS = 3000;

async function metricValue(service: RunningService, name: string, labels = ''): Promise<number> {
  const text = await (await fetch(`${service.url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name}${labels} `));
  return line ? Number(line.split(' ').at(-1)) : 0;
}

async function until<T>(what: string, fn: () => Promise<T | undefined | false>, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

type Ready = { status: string; checks: Record<string, string>; replica?: { id: string; listener: string; index: string; appliedSeq: number } };
const ready = async (s: RunningService) => (await (await fetch(`${s.url}/readyz`)).json()) as Ready;

describe('two replicas agree on key destructions', () => {
  let db: TestDatabase;
  let sql: postgres.Sql;
  let a: RunningService;
  let b: RunningService;
  let bId: string;

  beforeAll(async () => {
    db = await createTestDatabase();
    sql = postgres(db.url, { max: 1, onnotice: () => {} });
    const env = testEnv({ databaseUrl: db.url, dataDir: tempDir(), extra: { LETHE_ERASURE_POLL_MS: '200' } });
    a = await startService(process.execPath, [...CLI, 'serve'], env);
    b = await startService(process.execPath, [...CLI, 'serve'], env);
    bId = (await ready(b)).replica!.id;
  }, 120_000);
  afterAll(async () => {
    if (b?.child.pid) process.kill(b.child.pid, 'SIGCONT');
    await a?.stop();
    await b?.stop();
    await sql?.end();
    await db?.drop();
  });

  const append = async (subject: string, text: string) => {
    const res = await fetch(`${a.url}/v1/subjects/${subject}/entries`, { method: 'POST', headers: auth('writer'), body: JSON.stringify({ text }) });
    expect(res.status).toBe(201);
    return (await res.json()) as { entryId: string; keyId: string };
  };
  // every subject's records (an admin's search): what the replica's index still holds, whatever the subject's key
  const searchIds = async (s: RunningService, query: string) => {
    const res = await fetch(`${s.url}/v1/search`, { method: 'POST', headers: auth('admin'), body: JSON.stringify({ query, k: 10, allSubjects: true }) });
    expect(res.status).toBe(200);
    return ((await res.json()) as { hits: Array<{ id: string }> }).hits.map((h) => h.id);
  };
  const heartbeat = async (replicaId: string) => (await sql`select applied_seq, listener, index from replica_heartbeats where replica_id = ${replicaId}`)[0];

  it('each replica has a heartbeat row, and its listener a connection of its own', async () => {
    // a replica serves while its index rebuilds; its heartbeat says `ready` from the first beat after the rebuild
    const rows = await until('both heartbeats to report the index ready', async () => {
      const r = await sql`select replica_id, listener, index from replica_heartbeats order by replica_id`;
      return r.length === 2 && r.every((x) => x.index === 'ready') && r;
    });
    expect(rows.map((r) => r.replica_id).sort()).toEqual([(await ready(a)).replica!.id, bId].sort());
    for (const r of rows) expect(r).toMatchObject({ listener: 'up', index: 'ready' });
    const listeners = await sql`select pid from pg_stat_activity where application_name = ${listenerApplicationName(b.child.pid!)} and query ilike 'listen%'`;
    expect(listeners).toHaveLength(1);
  });

  it("a key destroyed while B's listener is cut leaves B's cache and index within the bound, and B's heartbeat acknowledges it", async () => {
    const text = 'Collects antique barometers and repairs them on weekends.';
    const { entryId, keyId } = await append('user:cut', text);
    await until('B to index the entry', async () => (await searchIds(b, 'antique barometers repairs')).includes(entryId));
    const leased = await fetch(`${b.url}/v1/subjects/user:cut/key/lease`, { method: 'POST', headers: auth('writer') });
    expect(leased.status).toBe(200);
    const before = await metricValue(b, 'lethe_dek_cache_invalidations_total', '{source="catch-up"}');

    const [listener] = await sql`select pid from pg_stat_activity where application_name = ${listenerApplicationName(b.child.pid!)} and query ilike 'listen%'`;
    await sql`select pg_terminate_backend(${listener!.pid})`;
    await until('B to report its listener down', async () => (await ready(b)).replica?.listener === 'down');
    // B re-listens after a second: this destruction's notification is sent while it does not listen
    const destroyed = await fetch(`${a.url}/v1/admin/keys/${keyId}/destroy`, {
      method: 'POST',
      headers: auth('admin'),
      body: JSON.stringify({ reason: 'listener cut' }),
    });
    expect(destroyed.status).toBe(200);
    const started = Date.now();
    const [{ seq }] = (await sql`select seq from destruction_ledger where key_id = ${keyId}`) as unknown as [{ seq: string }];

    await until('B to drop the destroyed key', async () => !(await searchIds(b, 'antique barometers repairs')).includes(entryId), BOUND_MS);
    await until("B's heartbeat to acknowledge the destruction", async () => Number((await heartbeat(bId))?.applied_seq) >= Number(seq), BOUND_MS);
    expect(Date.now() - started).toBeLessThan(BOUND_MS);
    // applied by the catch-up, not by a notification: the notification was missed
    expect(await metricValue(b, 'lethe_dek_cache_invalidations_total', '{source="catch-up"}')).toBe(before + 1);
    expect(await metricValue(b, 'lethe_dek_cache_entries')).toBe(0);
    // and the listener comes back: ready again
    const back = await until("B's listener to come back", async () => {
      const r = await ready(b);
      return r.replica?.listener === 'up' ? r : undefined;
    });
    expect(back).toMatchObject({ status: 'ok', checks: { listener: 'ok' } });
    expect(back.replica!.appliedSeq).toBeGreaterThanOrEqual(Number(seq));
    expect(
      (await sql`select pid from pg_stat_activity where application_name = ${listenerApplicationName(b.child.pid!)} and query ilike 'listen%'`).length,
    ).toBe(1);
  });

  const erase = async (subject: string) => {
    const res = await fetch(`${a.url}/v1/erasures`, { method: 'POST', headers: auth('eraser'), body: JSON.stringify({ subject, reason: 'replica test' }) });
    expect(res.status).toBe(202);
    return ((await res.json()) as { erasureId: string }).erasureId;
  };
  type View = {
    status: string;
    steps: Array<{ name: string; status: string; detail?: string }>;
    residuals: Array<{ kind: string; detail: string; bound: unknown }>;
    certificate?: { payload: { replicas: { seq: number; waits: number; applied: string[]; behind: Array<{ replica: string; silent: boolean }> } } };
  };
  const view = async (id: string) => (await (await fetch(`${a.url}/v1/erasures/${id}`, { headers: auth('eraser') })).json()) as View;
  /**
   * Waits until no replica writes the ledger chain (nothing unstored, its lock free): a replica stopped while it
   * holds the chain's lock stalls every destruction until it resumes (a stated limit, not what these tests measure).
   */
  const ledgerIdle = () =>
    until('the ledger chain to be idle', async () => {
      const [row] = await sql`select (select count(*) from ledger_chain where stored_at is null)::int as unstored,
                                     (select count(*) from pg_locks l join pg_database d on d.oid = l.database
                                       where l.locktype = 'advisory' and l.granted and d.datname = current_database())::int as locked`;
      return row!.unstored === 0 && row!.locked === 0;
    });

  /** What a stuck erasure waits on: its steps, and every statement waiting on a lock with the one holding it. */
  const stuck = async (id: string) => {
    const steps = (await view(id)).steps.filter((x) => x.status !== 'done' && x.status !== 'pending');
    const waits =
      await sql`select w.application_name as waiting_app, left(w.query, 120) as waiting, h.application_name as holder_app, h.state as holder_state, left(h.query, 120) as holder
                              from pg_stat_activity w cross join lateral unnest(pg_blocking_pids(w.pid)) as b(pid) join pg_stat_activity h on h.pid = b.pid`;
    return JSON.stringify({ steps, waits });
  };
  const finished = async (id: string, timeoutMs = 60_000) => {
    try {
      return await until(
        `erasure ${id} to finish`,
        async () => {
          const v = await view(id);
          return v.status === 'completed' || v.status === 'incomplete' || v.status === 'failed' ? v : undefined;
        },
        timeoutMs,
      );
    } catch (e) {
      throw new Error(`${(e as Error).message}: ${await stuck(id)}`);
    }
  };

  it('an erasure through A parks while B (paused) has not applied the destruction, and completes once B applies it', async () => {
    await append('user:lag', 'Sings baritone in a choir that rehearses in a lighthouse.');
    await ledgerIdle();
    process.kill(b.child.pid!, 'SIGSTOP');
    let resumed = false;
    try {
      const id = await erase('user:lag');
      await until('the destroy step to wait for B', async () => (await view(id)).steps.find((s) => s.name === 'destroy')?.detail?.includes(bId));
      process.kill(b.child.pid!, 'SIGCONT');
      resumed = true;
      const v = await finished(id);
      expect(v.status).toBe('completed');
      const replicas = v.certificate!.payload.replicas;
      expect(replicas.waits).toBeGreaterThanOrEqual(1);
      expect(replicas.applied).toContain(bId);
      expect(replicas.behind).toEqual([]);
      expect(v.residuals.filter((r) => r.kind === 'replica-lag')).toEqual([]);
      expect(v.residuals.find((r) => r.kind === 'gist')?.detail).toContain(bId);
    } finally {
      if (!resumed) process.kill(b.child.pid!, 'SIGCONT');
    }
  }, 90_000);

  it('a replica paused past the bound is named as a residual, not counted as having dropped the vectors', async () => {
    const { entryId } = await append('user:paused', 'Restores vintage typewriters for a museum in the hills.');
    await until('B to index the entry', async () => (await searchIds(b, 'vintage typewriters museum')).includes(entryId));
    await ledgerIdle();
    process.kill(b.child.pid!, 'SIGSTOP');
    let searchedOnWake: Promise<string[]> | undefined;
    try {
      const id = await erase('user:paused');
      const v = await finished(id);
      expect(v.status).toBe('completed');
      const replicas = v.certificate!.payload.replicas;
      expect(replicas.applied).not.toContain(bId);
      expect(replicas.behind).toEqual([expect.objectContaining({ replica: bId })]);
      const residual = v.residuals.find((r) => r.kind === 'replica-lag');
      expect(residual?.detail).toContain(bId);
      expect(residual?.bound).toBe(`until replica ${bId} applies destruction #${replicas.seq}`);
      expect(v.steps.find((s) => s.name === 'destroy')?.detail).toContain(`still behind after`);
      // a search sent to B while it sleeps is the first thing it handles when it wakes
      searchedOnWake = searchIds(b, 'vintage typewriters museum');
      await new Promise((r) => setTimeout(r, 200));
    } finally {
      process.kill(b.child.pid!, 'SIGCONT');
    }
    // B slept through the destruction: it catches up before it answers from its index
    expect(await searchedOnWake).not.toContain(entryId);
    // resumed, B catches up within the bound
    const seq = Number((await sql`select max(seq) as seq from destruction_ledger`)[0]!.seq);
    await until('B to catch up after resuming', async () => Number((await heartbeat(bId))?.applied_seq) >= seq, BOUND_MS + 2000);
  }, 90_000);
});
