/**
 * An erasure's cost follows the subject on every backend: a plan property, not a
 * timing. On a store of 20,000 bulk entries (fixtures/bulk-store.ts) every statement
 * an erasure issues is captured and explained with its own parameters, and none reads a
 * large table whole — no Seq Scan on a table of the bulk that holds 1,000 rows or more —
 * on PostgreSQL (statistics from ANALYZE, autovacuum's work on a live store) and on the
 * embedded PGlite, which runs no autovacuum: its statistics come from the vault's own
 * keeper (src/db/statistics.ts), checked here to analyze every table the bulk grew. The
 * provenance walks and the graph's edges use their indexes even before any ANALYZE
 * (their plan is fixed by the query's shape), and the probe's coverage reads the trigger
 * counts (`embedding_counts`), which agree with a count of the table (docs/performance.md,
 * "Erasure on every backend").
 */
import { randomBytes } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../src/app/open.js';
import { type Database, queryRows } from '../../src/db/client.js';
import { analyzeStale } from '../../src/db/statistics.js';
import { BULK_TABLES, seedBulkStore } from '../../fixtures/bulk-store.js';
import { openTestVault, type TestVault } from '../support/vault.js';

const BULK = 20_000;
/** A table this large is never read whole by an erasure's statement. */
const LARGE_ROWS = 1_000;

interface Captured {
  readonly text: string;
  readonly params: unknown[];
}

type QueryLogger = { logQuery(query: string, params: unknown[]): void };

/**
 * Records every statement run through `db` (transactions included) until `stop`: drizzle's
 * query logger, set on the database's session (and the options its transactions copy).
 */
function capture(db: Database): { statements: Captured[]; stop(): void } {
  const session = (db as unknown as { session: { logger: QueryLogger; options: { logger?: QueryLogger } } }).session;
  const before = { logger: session.logger, options: session.options.logger };
  const statements: Captured[] = [];
  const logger: QueryLogger = { logQuery: (text, params) => void statements.push({ text, params }) };
  session.logger = logger;
  session.options.logger = logger;
  return {
    statements,
    stop() {
      session.logger = before.logger;
      if (before.options) session.options.logger = before.options;
      else delete session.options.logger;
    },
  };
}

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  Plans?: PlanNode[];
}

/** EXPLAIN (FORMAT JSON) of a captured statement with its parameters, on either driver (the statement is planned, not run). */
async function explain(db: Database, s: Captured): Promise<PlanNode> {
  const client = (db as unknown as { $client: unknown }).$client;
  const text = `explain (format json) ${s.text}`;
  let raw: unknown;
  if (typeof (client as { unsafe?: unknown }).unsafe === 'function') {
    const rows = (await (client as { unsafe(q: string, p: unknown[]): Promise<Array<Record<string, unknown>>> }).unsafe(text, s.params)) as Array<
      Record<string, unknown>
    >;
    raw = rows[0]?.['QUERY PLAN'];
  } else {
    const result = await (client as { query(q: string, p: unknown[]): Promise<{ rows: Array<Record<string, unknown>> }> }).query(text, s.params);
    raw = result.rows[0]?.['QUERY PLAN'];
  }
  const doc = (typeof raw === 'string' ? JSON.parse(raw) : raw) as Array<{ Plan: PlanNode }>;
  return doc[0]!.Plan;
}

function seqScans(plan: PlanNode, out: string[] = []): string[] {
  if (plan['Node Type'] === 'Seq Scan' && plan['Relation Name']) out.push(plan['Relation Name']);
  for (const c of plan.Plans ?? []) seqScans(c, out);
  return out;
}

/** The bulk tables holding LARGE_ROWS rows or more (by the planner's own count). */
async function largeTables(db: Database): Promise<Set<string>> {
  const rows = await queryRows<{ relname: string; n: string | number }>(
    db,
    sql`select relname, greatest(reltuples, 0) as n from pg_class where relnamespace = 'public'::regnamespace and relkind = 'r'`,
  );
  return new Set(rows.filter((r) => (BULK_TABLES as readonly string[]).includes(r.relname) && Number(r.n) >= LARGE_ROWS).map((r) => r.relname));
}

/** Statements that read or write tables (not savepoints and the like). */
const planned = (s: Captured) => /^\s*(select|insert|update|delete|with)\b/i.test(s.text);

/** Words no other text shares (the probe must find nothing of one subject in another's). */
function words(n: number): string {
  const letters = 'abcdefghijklmnopqrstuvwxyz';
  return Array.from(randomBytes(n * 6), (b) => letters[b % 26])
    .join('')
    .replace(/(.{6})/g, '$1 ')
    .trim();
}

/** A subject among the bulk: entries, summaries citing them and another subject's entries, a digest above them. */
async function writeSubject(v: App, label: string): Promise<{ subject: string; entryIds: string[]; summaryIds: string[]; digestId: string }> {
  const other = [];
  for (let i = 0; i < 3; i++)
    other.push((await v.log.append(`user:${label}-other`, { text: `The other subject's note ${i}: ${words(8)}.` }, 'writer')).entryId);
  const subject = `user:${label}`;
  const entryIds = [];
  for (let i = 0; i < 8; i++) entryIds.push((await v.log.append(subject, { text: `${label} note ${i}: ${words(10)}.` }, 'writer')).entryId);
  const summaryIds = [];
  for (let i = 0; i < 2; i++) {
    const sources = [...entryIds.slice(i * 4, i * 4 + 4), other[i]!];
    summaryIds.push((await v.artifacts.write({ kind: 'summary', text: `Summary ${i} of ${label}: ${words(10)}.`, sources }, 'writer')).artifactId);
  }
  const digestId = (await v.artifacts.write({ kind: 'digest', text: `Digest of ${label}: ${words(6)}.`, sources: summaryIds }, 'writer')).artifactId;
  return { subject, entryIds, summaryIds, digestId };
}

async function storedLiveCount(db: Database): Promise<number> {
  const [row] = await queryRows<{ n: string | number }>(
    db,
    sql`select count(*) as n from embeddings e where not exists (select 1 from destruction_ledger d where d.key_id = e.key_id)`,
  );
  return Number(row?.n ?? 0);
}

for (const backend of ['postgres', 'pglite'] as const) {
  describe(`an erasure's statements on a store of ${BULK.toLocaleString('en')} entries (${backend})`, () => {
    let tv: TestVault;
    beforeAll(async () => {
      tv = await openTestVault({ embedded: backend === 'pglite', app: { listen: false } });
      const v = tv.app;
      await seedBulkStore(v.db.db, { entries: BULK, model: v.vectors.embedder.model, backupBucket: v.config.backupBucket });
      // the backup bucket's ledger chain starts here (its one pass over the ledger, once per bucket), not in the erasure
      await v.backups.flushLedger();
    }, 300_000);
    afterAll(async () => {
      await tv?.close();
    });

    if (backend === 'pglite') {
      it('before any ANALYZE, the provenance walks and the graph edges use their indexes (their shape fixes the plan)', async () => {
        const v = tv.app;
        const s = await writeSubject(v, 'plans-walk');
        const hash = v.keys.subjectHash(s.subject);
        const c = capture(v.db.db);
        try {
          const touching = await v.artifacts.touchingSubject(hash);
          expect(touching.map((t) => t.artifactId).sort()).toEqual([...s.summaryIds, s.digestId].sort());
          expect((await v.artifacts.upwardClosure(s.summaryIds)).map((a) => a.artifactId).sort()).toEqual([...s.summaryIds, s.digestId].sort());
          expect(await v.artifacts.touchingRecords(s.entryIds.slice(0, 1))).toHaveLength(2);
          expect((await v.artifacts.edges(s.summaryIds, hash)).filter((e) => e.ofSubject)).toHaveLength(8);
          expect(await v.artifacts.staleSince(s.summaryIds, new Date(Date.now() + 60_000))).toHaveLength(2);
        } finally {
          c.stop();
        }
        const walked = new Set(['provenance', 'log_entries', 'artifacts']);
        const found: string[] = [];
        for (const st of c.statements.filter(planned))
          for (const t of seqScans(await explain(v.db.db, st))) if (walked.has(t)) found.push(`${t}: ${st.text.slice(0, 120)}`);
        expect(found).toEqual([]);
      });
    }

    it(
      backend === 'pglite' ? 'the statistics keeper analyzes every table the bulk grew (PGlite runs no autovacuum)' : 'ANALYZE (autovacuum, on a live store)',
      async () => {
        const db = tv.app.db.db;
        if (backend === 'pglite') {
          const analyzed = (await analyzeStale(db)).map((a) => a.table);
          for (const t of [
            'log_entries',
            'embeddings',
            'provenance',
            'artifacts',
            'artifact_keys',
            'destruction_ledger',
            'ledger_exports',
            'audit_log',
            'subject_keys',
          ])
            expect(analyzed).toContain(t);
          // nothing changed since: the next pass has nothing to do
          expect((await analyzeStale(db)).map((a) => a.table)).not.toContain('log_entries');
        } else {
          for (const t of BULK_TABLES) await db.execute(sql.raw(`analyze ${t}`));
        }
        expect(await largeTables(db)).toEqual(
          new Set(['log_entries', 'embeddings', 'provenance', 'audit_log', 'artifacts', 'artifact_keys', 'destruction_ledger', 'ledger_exports']),
        );
      },
    );

    it('no statement of the erasure reads a large table whole', async () => {
      const v = tv.app;
      const s = await writeSubject(v, 'plans-erase');
      const large = await largeTables(v.db.db);
      const c = capture(v.db.db);
      let status: string;
      try {
        const { erasureId } = await v.erasures.request({ subject: s.subject, reason: 'plans' }, 'eraser');
        status = (await v.erasures.settle(erasureId, 120_000)).status;
      } finally {
        c.stop();
      }
      expect(status).toBe('completed');
      const statements = new Map<string, Captured>();
      for (const st of c.statements.filter(planned)) if (!statements.has(st.text)) statements.set(st.text, st);
      // every step's statements were seen: the walk up from the subject, the ledger chain, the coverage counts
      const all = [...statements.keys()].join('\n');
      for (const part of ['with recursive t(artifact_id, depth)', 'from destruction_ledger dl', 'embedding_counts']) expect(all).toContain(part);
      const found: string[] = [];
      for (const st of statements.values())
        for (const t of seqScans(await explain(v.db.db, st))) if (large.has(t)) found.push(`${t}: ${st.text.replace(/\s+/g, ' ').slice(0, 160)}`);
      expect(found).toEqual([]);
    }, 180_000);

    it("the probe's coverage counts live keys' sealed rows without counting the table", async () => {
      const v = tv.app;
      const db = v.db.db;
      // the bulk's rows are of destroyed keys: they do not count
      expect((await v.vectors.coverage()).stored).toBe(await storedLiveCount(db));
      const a = await v.log.append('user:plans-count', { text: 'One more note about the parcel.' }, 'writer');
      await v.artifacts.write({ kind: 'summary', text: 'A summary of one more note.', sources: [a.entryId] }, 'writer');
      expect((await v.vectors.coverage()).stored).toBe(await storedLiveCount(db));
      // a key's destruction: its rows go, and do not count before they go (the ledger row comes first or last, alike)
      await v.keys.destroyKey(a.keyId, { reason: 'plans', actor: 'admin' });
      expect((await v.vectors.coverage()).stored).toBe(await storedLiveCount(db));
      const c = capture(db);
      try {
        await v.vectors.coverage();
      } finally {
        c.stop();
      }
      expect(c.statements.map((s) => s.text).join('\n')).not.toMatch(/count\(\*\)[^\n]*from embeddings/i);
    });
  });
}
