/**
 * Bulk erasure: POST /v1/erasures/batch of N class-A subjects (BENCH_BULK_SUBJECTS,
 * default 50 to fit the default run's 10 minutes; BENCH_FULL: 1,000), each with 3 short entries of random tokens (no word
 * sequence shared across subjects: the probe finds no cross-subject residual), against
 * `lethe serve` child processes (tsx, PORT 0; bench/support/service.ts startService) on a scratch
 * PostgreSQL database and a local filesystem object store (LETHE_DATA_DIR).
 *
 * Two phases, each on a fresh database, data directory and root key, with a fresh set of
 * N subjects (seeded over HTTP: POST /v1/keys/batch, then the entries 16 in flight, then
 * the index queue drained; not measured):
 *
 *   1. one replica   `lethe serve` (LETHE_ERASURE_POLL_MS=100, LETHE_ERASURE_CONCURRENCY default 4)
 *   2. two replicas  two `lethe serve` on the same database, data directory, root key and tokens
 *
 * In each: the N subjects are posted in batches of up to 1,000 to replica 1, then the list
 * endpoint (GET /v1/erasures?limit=1000) is polled until every erasure settled. Reported:
 * wall seconds from the first POST to the last settle (the last transition's time in
 * erasure_transitions; the poll that saw it is reported too), subjects/s, completed /
 * incomplete / failed (all should complete), the erasures each replica ran (the replica of
 * each erasure's last transition: `<host>:<pid>:<nonce>`, matched by the child's pid), and
 * the ledger_chain records written during the phase per erasure (< 1: flushes shared).
 *
 * Aim: subjects/s with 2 replicas ÷ with 1 > 1. Both replicas share this machine's CPUs
 * and one PostgreSQL server: the ratio shows how much claiming from one table scales here,
 * not what two machines would do.
 */
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import postgres from 'postgres';
import { type Server, startScratchService } from './support/service.js';
import { mapLimit } from './support/load.js';
import { byMode, envInt } from './support/mode.js';
import { cleanup, openScratch, randomRootKey } from './support/scratch.js';
import { runIfMain, sleep } from './support/process.js';
import { type Aim, aim, fmtInt, fmtNum, fmtRatio, fmtSeconds, formatAims, progress, table } from './support/report.js';

// ------------------------------------------------------------------ settings

const SUBJECTS = envInt('BENCH_BULK_SUBJECTS', byMode({ quick: 50, normal: 50, full: 1000 }), 1);
const ENTRIES = 3;
const SEED_CONCURRENCY = 16;
/** The most subjects one POST /v1/erasures/batch takes. */
const BATCH = 1000;
const POLL_MS = 250;
const SETTLE_TIMEOUT_MS = envInt('BENCH_BULK_TIMEOUT_S', 1800, 10) * 1000;
const TERMINAL = new Set(['completed', 'incomplete', 'failed']);

// ------------------------------------------------------------------ result types

export interface ReplicaShare {
  readonly replica: number;
  /** Erasures whose last transition this replica wrote (it ran them to their end). */
  readonly erasures: number;
  /** Erasures this replica wrote any step transition for. */
  readonly touched: number;
}

export interface BulkPhase {
  readonly replicas: number;
  readonly subjects: number;
  readonly entriesPerSubject: number;
  readonly seedSeconds: number;
  /** The batch POSTs' own time (client side). */
  readonly postSeconds: number;
  /** From the first POST sent to the last erasure's last transition (database clock). */
  readonly wallSeconds: number;
  /** From the first POST sent to the poll that saw every erasure settled. */
  readonly observedSeconds: number;
  readonly subjectsPerSec: number;
  readonly created: number;
  readonly refused: number;
  readonly statuses: { readonly completed: number; readonly incomplete: number; readonly failed: number; readonly other: number };
  readonly classes: Record<string, number>;
  readonly perReplica: ReplicaShare[];
  /** ledger_chain rows written during the phase. */
  readonly ledgerRecords: number;
  readonly ledgerPerErasure: number;
  /** ledger_chain records created since the first POST, by bucket, with the destructions they hold. */
  readonly chain: Array<{ readonly bucket: string; readonly records: number; readonly destructions: number }>;
  /** destruction_ledger rows (keys destroyed) since the first POST. */
  readonly destroyed: number;
  readonly destroyedByKind: Record<string, number>;
  readonly loadAvg: [number, number];
}

export interface BulkResult {
  readonly subjects: number;
  readonly erasureConcurrency: number;
  readonly cpus: number;
  readonly one: BulkPhase;
  readonly two: BulkPhase;
  /** two.subjectsPerSec ÷ one.subjectsPerSec. */
  readonly ratio: number;
  readonly warnings: string[];
  readonly aims: Aim[];
}

// ------------------------------------------------------------------ text

/** Random tokens (a word stem and hex): no word sequence is shared across subjects. */
const STEMS = [
  'amber',
  'birch',
  'cedar',
  'delta',
  'ember',
  'fjord',
  'grove',
  'heron',
  'iris',
  'juniper',
  'kelp',
  'lumen',
  'maple',
  'nectar',
  'opal',
  'pine',
  'quartz',
  'raven',
  'sage',
  'tidal',
];
function tokens(n: number): string {
  const raw = randomBytes(n * 3);
  const out: string[] = [];
  for (let i = 0; i < n; i++) out.push(`${STEMS[raw[i * 3]! % STEMS.length]}${raw.subarray(i * 3 + 1, i * 3 + 3).toString('hex')}`);
  return out.join(' ');
}

// ------------------------------------------------------------------ HTTP

interface Tokens {
  readonly writer: string;
  readonly eraser: string;
}

async function call<T>(base: string, token: string, method: string, path: string, body?: unknown): Promise<{ status: number; body: T }> {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${text.slice(0, 300)}`);
  return { status: res.status, body: JSON.parse(text) as T };
}

interface ErasureView {
  readonly erasureId: string;
  readonly status: string;
  readonly class?: string;
}

/** Every erasure, through the list endpoint's pages. */
async function listAll(base: string, token: string): Promise<ErasureView[]> {
  const all: ErasureView[] = [];
  let cursor: string | null = null;
  do {
    const q: string = `/v1/erasures?limit=1000${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
    const page: { body: { erasures: ErasureView[]; nextCursor: string | null } } = await call(base, token, 'GET', q);
    all.push(...page.body.erasures);
    cursor = page.body.nextCursor;
  } while (cursor);
  return all;
}

// ------------------------------------------------------------------ one phase

async function runPhase(replicas: number): Promise<{ phase: BulkPhase; warnings: string[] }> {
  const label = `bulk${replicas}`;
  const warnings: string[] = [];
  const scratch = await openScratch(label);
  const { db } = scratch;
  const tok: Tokens = { writer: `writer-${randomBytes(18).toString('base64url')}`, eraser: `eraser-${randomBytes(18).toString('base64url')}` };
  // every replica on the same database, data directory and root key
  const env: Record<string, string> = {
    LETHE_ROOT_KEY: randomRootKey(),
    LETHE_TOKENS: `writer=${tok.writer},eraser=${tok.eraser}`,
    LETHE_ERASURE_POLL_MS: '100',
  };
  const servers: Server[] = [];
  const sql = postgres(db.url, { max: 1, onnotice: () => {} });
  try {
    // one after the other: the first runs the migrations
    for (let i = 0; i < replicas; i++) servers.push(await startScratchService(scratch, env, 120_000));
    const base = `http://127.0.0.1:${servers[0]!.port}`;
    progress(`bulk: ${replicas} replica(s) up (pids ${servers.map((s) => s.child.pid).join(', ')}); seeding ${fmtInt(SUBJECTS)} subjects × ${ENTRIES} entries`);

    // ---- seed (not measured)
    const s0 = performance.now();
    const run = randomBytes(3).toString('hex');
    const subjects = Array.from({ length: SUBJECTS }, (_, i) => `bench-bulk-${run}-${i}`);
    for (let i = 0; i < subjects.length; i += 10_000) await call(base, tok.writer, 'POST', '/v1/keys/batch', { subjects: subjects.slice(i, i + 10_000) });
    const writes = subjects.flatMap((s) => Array.from({ length: ENTRIES }, () => s));
    // spread the writes over the replicas (they share everything)
    let n = 0;
    await mapLimit(writes, SEED_CONCURRENCY, async (subject) => {
      const b = `http://127.0.0.1:${servers[n++ % servers.length]!.port}`;
      await call(b, tok.writer, 'POST', `/v1/subjects/${encodeURIComponent(subject)}/entries`, { text: `${tokens(6)}. ${tokens(8)}.` });
    });
    // the entries are indexed before the erasures start (a probe waits for entries queued before it): the
    // erasures of memories written long ago, not racing their own indexing
    for (let waited = 0; Number((await sql`select count(*)::int as n from index_queue`)[0]!.n) > 0; waited++) {
      if (waited > 1200) {
        warnings.push('the index queue did not drain within 120 s of seeding');
        break;
      }
      await sleep(100);
    }
    const seedSeconds = (performance.now() - s0) / 1000;
    progress(`bulk: seeded and indexed in ${fmtSeconds(seedSeconds)}`);
    await sleep(500);

    const ledger0 = Number((await sql`select count(*)::int as n from ledger_chain`)[0]!.n);
    const load0 = os.loadavg()[0]!;

    // ---- erase
    const startedAt = Date.now();
    const t0 = performance.now();
    const ids = new Set<string>();
    let created = 0;
    let refused = 0;
    for (let i = 0; i < subjects.length; i += BATCH) {
      const r = await call<{
        erasures: Array<{ index: number; erasureId?: string; error?: { code: string; detail: string } }>;
        created: number;
        refused: number;
      }>(base, tok.eraser, 'POST', '/v1/erasures/batch', { subjects: subjects.slice(i, i + BATCH), legalBasis: 'gdpr-art17', reason: 'benchmark' });
      if (r.status !== 202) warnings.push(`POST /v1/erasures/batch answered ${r.status}, not 202`);
      created += r.body.created;
      refused += r.body.refused;
      for (const e of r.body.erasures) {
        if (e.erasureId) ids.add(e.erasureId);
        else if (e.error && refused <= 3) warnings.push(`subject ${i + e.index} refused: ${e.error.code} ${e.error.detail}`);
      }
    }
    const postSeconds = (performance.now() - t0) / 1000;
    progress(`bulk: ${replicas} replica(s): ${fmtInt(ids.size)} erasures posted in ${fmtSeconds(postSeconds)}; polling`);

    let views: ErasureView[] = [];
    let lastReport = performance.now();
    for (;;) {
      views = (await listAll(base, tok.eraser)).filter((v) => ids.has(v.erasureId));
      const settled = views.filter((v) => TERMINAL.has(v.status)).length;
      if (views.length === ids.size && settled === ids.size) break;
      if (performance.now() - t0 > SETTLE_TIMEOUT_MS)
        throw new Error(`${ids.size - settled} of ${ids.size} erasures had not settled after ${SETTLE_TIMEOUT_MS / 1000} s`);
      if (performance.now() - lastReport > 10_000) {
        lastReport = performance.now();
        progress(`bulk: ${replicas} replica(s): ${fmtInt(settled)} of ${fmtInt(ids.size)} settled after ${fmtSeconds((performance.now() - t0) / 1000)}`);
      }
      await sleep(POLL_MS);
    }
    const observedSeconds = (performance.now() - t0) / 1000;
    const load1 = os.loadavg()[0]!;

    // ---- the database's account
    const idList = [...ids];
    const last = await sql<Array<{ at: Date }>>`select max(at) as at from erasure_transitions where erasure_id = any(${idList})`;
    const lastAt = last[0]?.at ? new Date(last[0].at).getTime() : NaN;
    const wallSeconds = Number.isFinite(lastAt) ? Math.max(0, (lastAt - startedAt) / 1000) : observedSeconds;
    const ended = await sql<Array<{ replica: string; n: number }>>`
      select replica, count(*)::int as n from (
        select distinct on (erasure_id) erasure_id, replica from erasure_transitions
         where erasure_id = any(${idList}) order by erasure_id, id desc
      ) t group by replica`;
    const touched = await sql<Array<{ replica: string; n: number }>>`
      select replica, count(distinct erasure_id)::int as n from erasure_transitions
       where erasure_id = any(${idList}) and from_step is not null group by replica`;
    const ledger1 = Number((await sql`select count(*)::int as n from ledger_chain`)[0]!.n);
    // the records written since the POST: their buckets and the destructions they hold
    const chain = await sql<Array<{ bucket: string; records: number; destructions: number }>>`
      select bucket, count(*)::int as records, coalesce(sum(json_array_length((body::json) -> 'destructions')), 0)::int as destructions
        from ledger_chain where created_at >= ${new Date(startedAt - 1000)} group by bucket order by bucket`;
    const kinds = await sql<Array<{ kind: string; n: number }>>`
      select key_kind as kind, count(*)::int as n from destruction_ledger where destroyed_at >= ${new Date(startedAt - 1000)} group by key_kind order by key_kind`;
    const destroyed = kinds.reduce((a, k) => a + k.n, 0);
    const destroyedByKind = Object.fromEntries(kinds.map((k) => [k.kind, k.n]));

    const replicaOf = (name: string) => servers.findIndex((s) => name.split(':').includes(String(s.child.pid)));
    const perReplica: ReplicaShare[] = servers.map((_, i) => ({
      replica: i + 1,
      erasures: ended.filter((r) => replicaOf(r.replica) === i).reduce((a, r) => a + r.n, 0),
      touched: touched.filter((r) => replicaOf(r.replica) === i).reduce((a, r) => a + r.n, 0),
    }));
    const unknown = ended.filter((r) => replicaOf(r.replica) < 0);
    if (unknown.length) warnings.push(`transitions by replicas not matched to a child pid: ${unknown.map((r) => `${r.replica} (${r.n})`).join(', ')}`);

    const statuses = { completed: 0, incomplete: 0, failed: 0, other: 0 };
    const classes: Record<string, number> = {};
    for (const v of views) {
      if (v.status === 'completed' || v.status === 'incomplete' || v.status === 'failed') statuses[v.status]++;
      else statuses.other++;
      const c = v.class ?? '-';
      classes[c] = (classes[c] ?? 0) + 1;
    }
    if (statuses.completed !== SUBJECTS)
      warnings.push(
        `${replicas} replica(s): ${statuses.completed} of ${SUBJECTS} erasures completed (${statuses.incomplete} incomplete, ${statuses.failed} failed, ${statuses.other} other)`,
      );
    if (refused > 0) warnings.push(`${replicas} replica(s): ${refused} subjects refused`);
    if (Object.keys(classes).some((c) => c !== 'A')) warnings.push(`${replicas} replica(s): classes ${JSON.stringify(classes)}, expected all A`);

    const ledgerRecords = ledger1 - ledger0;
    const phase: BulkPhase = {
      replicas,
      subjects: SUBJECTS,
      entriesPerSubject: ENTRIES,
      seedSeconds,
      postSeconds,
      wallSeconds,
      observedSeconds,
      subjectsPerSec: ids.size / wallSeconds,
      created,
      refused,
      statuses,
      classes,
      perReplica,
      ledgerRecords,
      ledgerPerErasure: ids.size ? ledgerRecords / ids.size : NaN,
      chain,
      destroyed,
      destroyedByKind,
      loadAvg: [load0, load1],
    };
    progress(
      `bulk: ${replicas} replica(s): ${fmtInt(statuses.completed)} completed in ${fmtSeconds(wallSeconds)} (${fmtNum(phase.subjectsPerSec, 1)} subjects/s); ` +
        `per replica ${perReplica.map((p) => p.erasures).join(' / ')}; ${fmtInt(ledgerRecords)} ledger chain records`,
    );
    return { phase, warnings };
  } catch (e) {
    for (const s of servers) progress(`bulk: replica pid ${s.child.pid} stderr tail:\n${s.stderrTail.slice(-10).join('\n')}`);
    throw e;
  } finally {
    await cleanup(label, [['sql client', () => sql.end({ timeout: 5 })]]);
    await scratch.cleanup();
  }
}

// ------------------------------------------------------------------ the section

export async function runBulk(): Promise<BulkResult> {
  progress(`bulk: ${fmtInt(SUBJECTS)} class-A subjects × ${ENTRIES} entries, one replica then two (fresh database each)`);
  const one = await runPhase(1);
  const two = await runPhase(2);
  const ratio = two.phase.subjectsPerSec / one.phase.subjectsPerSec;
  const warnings = [...one.warnings, ...two.warnings];
  for (const w of warnings) progress(`bulk: WARNING ${w}`);
  return {
    subjects: SUBJECTS,
    erasureConcurrency: 4,
    cpus: os.cpus().length,
    one: one.phase,
    two: two.phase,
    ratio,
    warnings,
    aims: [aim('bulk erasure subjects/s, 2 replicas ÷ 1', ratio, '> 1', ratio > 1)],
  };
}

export function formatBulk(r: BulkResult): string {
  const row = (p: BulkPhase) => [
    `${p.replicas} replica${p.replicas > 1 ? 's' : ''}`,
    fmtInt(p.subjects),
    fmtNum(p.wallSeconds, 1),
    fmtNum(p.subjectsPerSec, 1),
    `${p.statuses.completed} / ${p.statuses.incomplete} / ${p.statuses.failed}`,
    p.perReplica.map((x) => fmtInt(x.erasures)).join(' / '),
    fmtInt(p.ledgerRecords),
    fmtNum(p.ledgerPerErasure, 3),
    `${fmtNum(p.loadAvg[0], 2)} -> ${fmtNum(p.loadAvg[1], 2)}`,
  ];
  const lines = [
    `POST /v1/erasures/batch of ${fmtInt(r.subjects)} class-A subjects (${r.one.entriesPerSubject} entries each) to replica 1, polled until all settled; ` +
      `LETHE_ERASURE_CONCURRENCY ${r.erasureConcurrency} per replica, LETHE_ERASURE_POLL_MS 100; each phase a fresh PostgreSQL database`,
    table(
      ['phase', 'subjects', 'wall s', 'subjects/s', 'completed / incomplete / failed', 'ran per replica', 'ledger records', 'per erasure', '1-min load'],
      [row(r.one), row(r.two)],
    ),
    `wall: first POST sent -> last transition (database clock); the poll that saw it: ${fmtSeconds(r.one.observedSeconds)} / ${fmtSeconds(r.two.observedSeconds)}; ` +
      `seeding (not measured) ${fmtSeconds(r.one.seedSeconds)} / ${fmtSeconds(r.two.seedSeconds)}`,
    `2 replicas ÷ 1: ${fmtRatio(r.ratio)} subjects/s (aim > 1: ${r.ratio > 1 ? 'met' : 'NOT met'}). Both replicas share this ${r.cpus}-CPU machine and one PostgreSQL server: ` +
      "the ratio shows claiming from one erasures table across replicas, not two machines' capacity.",
    ...[r.one, r.two].map(
      (p) =>
        `${p.replicas} replica(s): ${fmtInt(p.destroyed)} keys destroyed (${Object.entries(p.destroyedByKind)
          .map(([k, n]) => `${k} ${fmtInt(n)}`)
          .join(
            ', ',
          )}); ledger chain records ${p.chain.map((c) => `${c.bucket}: ${fmtInt(c.records)} holding ${fmtInt(c.destructions)} destructions`).join(', ') || 'none'} ` +
        `(${fmtNum(p.ledgerPerErasure, 2)} records per erasure, ${fmtNum(p.destroyed / Math.max(1, p.ledgerRecords), 2)} destructions per record: ` +
        `${p.ledgerPerErasure < 1 ? 'below 1, flushes shared between erasures' : 'NOT below 1: flushes mostly not shared between erasures'})`,
    ),
  ];
  if (r.warnings.length) lines.push(...r.warnings.map((w) => `WARNING: ${w}`));
  lines.push(formatAims(r.aims));
  return lines.join('\n');
}

await runIfMain(import.meta.url, runBulk, formatBulk);
