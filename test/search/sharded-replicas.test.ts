/**
 * Indexes sharded by subject hash (LETHE_INDEX_SHARDS=6) across three `lethe serve`
 * replicas on one PostgreSQL: each indexes only the records of the shards it holds
 * (about a third); a search on any replica finds every subject's entry, asking the
 * owners of the shards it does not hold over signed internal calls, and says which
 * shards it consulted. When a replica holding shards is SIGKILLed, searches that need
 * its shards answer at once and are marked partial (the missing shards named) — never
 * silently short — and the others take its shards over and answer whole again within
 * the lease (10 s) plus a rebuild. A call to the internal route without the replicas'
 * signature is refused.
 */
import { createServer as createHttpServer, request as httpRequest } from 'node:http';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../infra/local-server.js';
import { createTestDatabase, type TestDatabase } from '../support/pg.js';
import { CLI, type RunningService, startService } from '../support/process.js';
import { until } from '../support/until.js';
import { TOKENS, tempDir, testEnv } from '../support/vault.js';

const SHARDS = 6;
const SUBJECTS = 24;
const headers = (role: keyof typeof TOKENS) => ({ authorization: `Bearer ${TOKENS[role]}`, 'content-type': 'application/json' });

type SearchAnswer = {
  hits: Array<{ id: string; text: string; subject: string | null }>;
  partial?: boolean;
  shards?: { total: number; consulted: number[]; missing: number[] };
};

async function search(
  s: RunningService,
  body: Record<string, unknown>,
  role: keyof typeof TOKENS = 'writer',
): Promise<{ status: number; body: SearchAnswer; ms: number }> {
  const started = Date.now();
  const res = await fetch(`${s.url}/v1/search`, { method: 'POST', headers: headers(role), body: JSON.stringify(body), signal: AbortSignal.timeout(20_000) });
  return { status: res.status, body: (await res.json()) as SearchAnswer, ms: Date.now() - started };
}

async function vectorsHeld(s: RunningService): Promise<number> {
  const text = await (await fetch(`${s.url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith('lethe_index_vectors '));
  return Number(line?.split(' ').at(-1) ?? Number.NaN);
}

/** A word no other subject's entry holds. */
const marker = (i: number) => `zq${(i * 7919 + 104729).toString(36)}marker`;
const WORDS = [
  'amber',
  'basil',
  'cobalt',
  'dune',
  'ember',
  'fjord',
  'garnet',
  'harbor',
  'indigo',
  'juniper',
  'kelp',
  'lichen',
  'marble',
  'nectar',
  'onyx',
  'pepper',
  'quartz',
  'russet',
  'saffron',
  'thistle',
  'umber',
  'violet',
  'willow',
  'yarrow',
];
/**
 * A subject's entry: its marker and eight distinct words no other subject's entry holds (each prefixed with the
 * subject's own letter): notes sharing words would read as near copies of each other to the probe.
 */
const noteOf = (i: number) =>
  `${marker(i)} ${Array.from({ length: 8 }, (_, j) => `${'abcdefghijklmnopqrstuvwx'[i]}${WORDS[(i + j * 3) % WORDS.length]}`).join(' ')}`;

describe('three replicas, six shards', () => {
  let db: TestDatabase;
  let sql: postgres.Sql;
  const replicas: RunningService[] = [];

  const shardRows = async () =>
    (await sql`select shard, owner, state, fence, (owner is not null and expires_at > now()) as live from index_shards order by shard`) as unknown as Array<{
      shard: number;
      owner: string | null;
      state: string;
      fence: string;
      live: boolean;
    }>;
  /** Every shard held and ready, two per replica. */
  const evenlySplit = () =>
    until(
      'every shard held and ready, two per replica',
      async () => {
        const rows = await allReady();
        if (!rows) return false;
        const per = new Map<string, number>();
        for (const r of rows) per.set(r.owner!, (per.get(r.owner!) ?? 0) + 1);
        return per.size === 3 && [...per.values()].every((n) => n === 2);
      },
      60_000,
    );
  const allReady = async () => {
    const rows = await shardRows();
    return rows.length === SHARDS && rows.every((r) => r.live && r.state === 'ready') ? rows : undefined;
  };

  beforeAll(async () => {
    db = await createTestDatabase();
    sql = postgres(db.url, { max: 1, onnotice: () => {} });
    const env = testEnv({ databaseUrl: db.url, dataDir: tempDir(), extra: { LETHE_ERASURE_POLL_MS: '200', LETHE_INDEX_SHARDS: String(SHARDS) } });
    for (let i = 0; i < 3; i++) {
      const port = await freePort();
      replicas.push(await startService(process.execPath, [...CLI, 'serve'], { ...env, PORT: String(port), LETHE_REPLICA_URL: `http://127.0.0.1:${port}` }));
    }
    // each holds its share, every shard searchable
    await evenlySplit();
    for (let i = 0; i < SUBJECTS; i++) {
      const res = await fetch(`${replicas[i % 3]!.url}/v1/subjects/user:shard-${i}/entries`, {
        method: 'POST',
        headers: headers('writer'),
        body: JSON.stringify({ text: noteOf(i) }),
      });
      expect(res.status).toBe(201);
    }
  }, 180_000);

  afterAll(async () => {
    for (const r of replicas) await r.stop();
    await sql?.end();
    await db?.drop();
  });

  it('each replica indexes only its shards: together every entry once, each about a third', { timeout: 180_000 }, async () => {
    let held: number[] = [];
    await until('the owners to have loaded every entry', async () => {
      held = await Promise.all(replicas.map(vectorsHeld));
      return held.reduce((a, b) => a + b, 0) === SUBJECTS;
    });
    for (const n of held) expect(n).toBeLessThan(SUBJECTS);
    expect(Math.max(...held)).toBeLessThanOrEqual(SUBJECTS * 0.7);
  });

  it("a scoped search on any replica finds each subject's entry, consulting the subject's shard", { timeout: 180_000 }, async () => {
    for (let i = 0; i < SUBJECTS; i++) {
      const via = replicas[(i + 1) % 3]!;
      const { status, body } = await search(via, { query: marker(i), subject: `user:shard-${i}`, k: 3 });
      expect(status).toBe(200);
      expect(body.hits.map((h) => h.text)).toEqual([noteOf(i)]);
      expect(body.hits[0]!.subject).toBe(`user:shard-${i}`);
      expect(body.partial).toBe(false);
      expect(body.shards).toMatchObject({ total: SHARDS, missing: [] });
      expect(body.shards!.consulted).toHaveLength(1);
    }
  });

  it('an all-subjects search consults every shard and merges their hits', { timeout: 180_000 }, async () => {
    const { status, body } = await search(replicas[2]!, { query: `${marker(3)} ${marker(4)} ${marker(5)}`, allSubjects: true, k: 5 }, 'admin');
    expect(status).toBe(200);
    expect(body.shards).toEqual({ total: SHARDS, consulted: [0, 1, 2, 3, 4, 5], missing: [] });
    const texts = body.hits.map((h) => h.text);
    for (const i of [3, 4, 5]) expect(texts).toContain(noteOf(i));
  });

  it("an erasure's probe covers every shard: copies planted under subjects of all six shards are each found; a plain erasure completes and its subject is unreadable everywhere", {
    timeout: 180_000,
  }, async () => {
    const secret = 'the winter orchard ledger of quillon brackwater lists seven hidden copper keys under the mossy bridge';
    const res = await fetch(`${replicas[0]!.url}/v1/subjects/user:shard-secret/entries`, {
      method: 'POST',
      headers: headers('writer'),
      body: JSON.stringify({ text: secret }),
    });
    expect(res.status).toBe(201);
    // copies under subjects whose shards cover all six (a subject's shard is its subject hash's: enough of them reach every shard)
    const copies = new Map<string, string>();
    for (let i = 0; i < 40; i++) {
      const r = await fetch(`${replicas[i % 3]!.url}/v1/subjects/user:copy-${i}/entries`, {
        method: 'POST',
        headers: headers('writer'),
        body: JSON.stringify({ text: secret }),
      });
      copies.set(((await r.json()) as { entryId: string }).entryId, `user:copy-${i}`);
    }
    const erase = async (subject: string) => {
      const requested = await fetch(`${replicas[1]!.url}/v1/erasures`, { method: 'POST', headers: headers('eraser'), body: JSON.stringify({ subject }) });
      expect(requested.status).toBe(202);
      const { erasureId } = (await requested.json()) as { erasureId: string };
      let view: { status: string; probe: { matches: Array<{ id: string }>; coverage?: { indexed: number; stored: number } } } | undefined;
      await until(
        `the erasure of ${subject} to end`,
        async () => {
          view = (await (await fetch(`${replicas[1]!.url}/v1/erasures/${erasureId}`, { headers: headers('eraser') })).json()) as typeof view;
          return view!.status === 'completed' || view!.status === 'incomplete' || view!.status === 'failed';
        },
        90_000,
      );
      return view!;
    };
    const copied = await erase('user:shard-secret');
    expect(copied.status, JSON.stringify(copied).slice(0, 4000)).toBe('incomplete');
    const found = new Set(copied.probe.matches.map((m) => m.id));
    for (const id of copies.keys()) expect(found, `the copy under ${copies.get(id)}`).toContain(id);
    expect(copied.probe.coverage!.indexed).toBe(copied.probe.coverage!.stored);
    // a subject no one copied: completed, unreadable on every replica, and no search finds it
    const plain = await erase('user:shard-5');
    expect(plain.status, JSON.stringify(plain).slice(0, 4000)).toBe('completed');
    for (const r of replicas) {
      const listed = await fetch(`${r.url}/v1/subjects/user:shard-5/entries`, { headers: headers('writer') });
      expect(listed.status).toBe(410);
      const { body } = await search(r, { query: marker(5), allSubjects: true, k: 5 }, 'admin');
      expect(body.hits.map((h) => h.text).join(' ')).not.toContain(marker(5));
    }
  });

  it('an address written into index_shards without the root key is never called: the shard is missing, nothing reaches it', { timeout: 180_000 }, async () => {
    const received: string[] = [];
    const trap = createHttpServer((req, res) => {
      received.push(`${req.method} ${req.url}`);
      res.writeHead(500).end();
    });
    await new Promise<void>((r) => trap.listen(0, '127.0.0.1', r));
    const trapUrl = `http://127.0.0.1:${(trap.address() as { port: number }).port}`;
    try {
      // the owners renew their own address every tick: keep writing the trap's for a few ticks
      const deadline = Date.now() + 6_000;
      let partial = 0;
      while (Date.now() < deadline) {
        await sql`update index_shards set owner_url = ${trapUrl}`;
        // not subject 5: erased above
        for (const i of [0, 1, 2, 3, 4, 6]) {
          const { status, body } = await search(replicas[i % 3]!, { query: marker(i), subject: `user:shard-${i}`, k: 3 });
          expect(status).toBe(200);
          if (body.partial) partial++;
          else expect(body.hits.map((h) => h.text)).toEqual([noteOf(i)]);
        }
      }
      expect(received).toEqual([]);
      expect(partial).toBeGreaterThan(0);
    } finally {
      trap.close();
    }
  });

  it('a shard claimed in SQL for a replica that does not exist: the probe waits for it, never certifying, and completes once a replica holds it', {
    timeout: 300_000,
  }, async () => {
    // what database write access can do: hand shard 0 to a ghost, for ever, "ready"
    await sql`update index_shards set owner = 'ghost', owner_url = null, owner_url_mac = null, fence = fence + 100, state = 'ready', expires_at = 'infinity' where shard = 0`;
    const free = () => sql`update index_shards set owner = null, expires_at = null, state = 'rebuilding' where shard = 0 and owner = 'ghost'`;
    try {
      // its old owner answers for it until its next tick reads the lease gone (its index still held the shard's records):
      // the erasure is requested once no replica does
      await until('no replica to answer for shard 0', async () => {
        const ready = await Promise.all(
          replicas.map(async (r) => ((await (await fetch(`${r.url}/readyz`)).json()) as { shards?: { answering: number[] } }).shards?.answering ?? []),
        );
        return ready.every((answering) => !answering.includes(0));
      });
      const requested = await fetch(`${replicas[2]!.url}/v1/erasures`, {
        method: 'POST',
        headers: headers('eraser'),
        body: JSON.stringify({ subject: 'user:shard-6' }),
      });
      expect(requested.status).toBe(202);
      const { erasureId } = (await requested.json()) as { erasureId: string };
      const transitions = async () =>
        (await sql`select to_step, status, detail from erasure_transitions where erasure_id = ${erasureId} order by id`) as unknown as Array<{
          to_step: string;
          status: string;
          detail: string | null;
        }>;
      // the erasure's steps before the probe take longer on a loaded machine
      await until(
        'the probe to wait for shard 0',
        async () => (await transitions()).some((t) => /index shard\(s\) 0(, \d+)* of 6 have no searchable owner/.test(t.detail ?? '')),
        150_000,
      ).catch(async (e: Error) => {
        const seen = (await transitions()).slice(-8).map((t) => `${t.to_step} ${t.status}: ${t.detail}`);
        throw new Error(`${e.message}; its last transitions: ${seen.join(' | ')}; shards: ${JSON.stringify(await shardRows())}`);
      });
      const view = async () =>
        (await (await fetch(`${replicas[2]!.url}/v1/erasures/${erasureId}`, { headers: headers('eraser') })).json()) as { status: string };
      expect(['completed', 'incomplete']).not.toContain((await view()).status);
      // the ghost's claim removed: a replica takes shard 0 at its next tick, and the erasure completes
      await free();
      await until('the erasure to end', async () => ['completed', 'incomplete', 'failed'].includes((await view()).status), 120_000);
      expect((await view()).status).toBe('completed');
    } finally {
      // whatever happened above, the next cases find shard 0 free to take
      await free();
    }
  });

  it('the internal routes refuse a call without the replicas’ signature (an admin token is not one), or with a forged one', { timeout: 180_000 }, async () => {
    for (const path of ['/internal/v1/rank', '/internal/v1/probe']) {
      const body = JSON.stringify({ query: 'garden', mode: 'hybrid', n: 5, scope: null, shards: [{ shard: 0, fence: 1 }] });
      const unsigned = await fetch(`${replicas[0]!.url}${path}`, { method: 'POST', headers: headers('admin'), body });
      expect(unsigned.status, path).toBe(401);
      expect(unsigned.headers.get('content-type')).toMatch(/problem\+json/);
      const forged = await fetch(`${replicas[0]!.url}${path}`, {
        method: 'POST',
        headers: { ...headers('admin'), 'x-lethe-replica': `v1.${Date.now()}.AAAAAAAAAAAAAAAAAAAAAA.${'A'.repeat(43)}.${'A'.repeat(43)}` },
        body,
      });
      expect(forged.status, path).toBe(401);
      // refused on its headers: a body of 100 MB is announced and never sent, and the answer comes anyway
      const early = await new Promise<number>((resolve, reject) => {
        const req = httpRequest(
          `${replicas[0]!.url}${path}`,
          { method: 'POST', headers: { 'content-type': 'application/json', 'content-length': String(100_000_000) } },
          (res) => {
            res.resume();
            resolve(res.statusCode ?? 0);
          },
        );
        req.on('error', reject);
        req.setTimeout(10_000, () => req.destroy(new Error('no answer before the body')));
        req.write('{');
      });
      expect(early, path).toBe(401);
    }
  });

  it('a killed replica’s shards: searches answer at once, marked partial; then taken over and whole again', { timeout: 180_000 }, async () => {
    // every owner's own address back (the test above wrote another)
    await until('searches whole again', async () => {
      const { body } = await search(replicas[1]!, { query: 'garden', allSubjects: true, k: 3 }, 'admin');
      return body.partial === false;
    });
    await evenlySplit();
    const rows = (await allReady())!;
    const victim = replicas[0]!;
    const victimId = ((await (await fetch(`${victim.url}/readyz`)).json()) as { replica: { id: string } }).replica.id;
    const lost = rows.filter((r) => r.owner === victimId).map((r) => r.shard);
    expect(lost).toHaveLength(2);
    process.kill(-victim.child.pid!, 'SIGKILL');
    await victim.exited;
    const survivors = replicas.slice(1);
    let sawPartial = false;
    await until(
      'every subject found, no shard missing, on both survivors',
      async () => {
        let all = true;
        for (let i = 0; i < SUBJECTS; i++) {
          if (i === 5 || i === 6) continue; // erased above
          const { status, body, ms } = await search(survivors[i % 2]!, { query: marker(i), subject: `user:shard-${i}`, k: 3 });
          expect(status).toBe(200);
          expect(ms).toBeLessThan(20_000);
          if (body.partial) {
            sawPartial = true;
            // never silently short: a search that lacks its hit names the missing shard
            expect(body.shards!.missing.length).toBeGreaterThan(0);
            for (const s of body.shards!.missing) expect(lost).toContain(s);
            all = false;
          } else expect(body.hits.map((h) => h.text)).toEqual([noteOf(i)]);
        }
        return all;
      },
      60_000,
    );
    expect(sawPartial).toBe(true);
    const after = (await allReady())!;
    for (const r of after) expect(r.owner).not.toBe(victimId);
    for (const s of lost) expect(Number(after.find((r) => r.shard === s)!.fence)).toBeGreaterThan(Number(rows.find((r) => r.shard === s)!.fence));
  });
});
