/**
 * The database export a backup carries, and its restore. Everything lethe keeps in
 * PostgreSQL is ciphertext or metadata — wrapped keys, the log index, provenance,
 * sealed embeddings, the ledger, the audit chain — so the export holds no plaintext
 * and no plaintext key. Values are JSON with bytes as {"$b": base64url} and times as
 * {"$t": ISO string}, table by table in dependency order.
 */
import { getTableName, is, sql } from 'drizzle-orm';
import { getTableConfig, PgTable } from 'drizzle-orm/pg-core';
import { fromBase64Url, toBase64Url } from '../crypto/index.js';
import { type Database, type Executor, queryRows, type Transaction } from '../db/client.js';
import * as schema from '../db/schema.js';
import {
  artifactKeys,
  artifacts,
  auditHead,
  auditLog,
  destructionLedger,
  embeddings,
  epochs,
  indexQueue,
  logEntries,
  provenance,
  subjectKeys,
  subjectTombstones,
  trainingExposureRecords,
  trainingExposures,
  trainingExposureSubjects,
} from '../db/schema.js';
import { LetheError } from '../errors.js';
import { resyncLedgerSeq } from '../vault/restore.js';

export const DATABASE_EXPORT_FORMAT = 'lethe-database-export/1';

/** Parents before children (subject_keys and artifact_keys reference epochs). */
export const EXPORTED_TABLES = {
  epochs,
  subject_keys: subjectKeys,
  artifact_keys: artifactKeys,
  destruction_ledger: destructionLedger,
  log_entries: logEntries,
  artifacts,
  provenance,
  embeddings,
  // writer-registered entries not indexed yet: a restored vault indexes them (rows of destroyed keys are dropped by the indexer)
  index_queue: indexQueue,
  training_exposures: trainingExposures,
  training_exposure_records: trainingExposureRecords,
  training_exposure_subjects: trainingExposureSubjects,
  audit_log: auditLog,
  audit_head: auditHead,
  // an erased subject stays erased in a restored database: no key is created for it again until reinstated
  subject_tombstones: subjectTombstones,
} as const satisfies Record<string, PgTable>;

export type ExportedTable = keyof typeof EXPORTED_TABLES;
type Row = Record<string, unknown>;

export interface DatabaseExport {
  readonly format: typeof DATABASE_EXPORT_FORMAT;
  readonly tables: Record<ExportedTable, Row[]>;
}

function encodeValue(v: unknown): unknown {
  if (v instanceof Uint8Array) return { $b: toBase64Url(v) };
  if (v instanceof Date) return { $t: v.toISOString() };
  return v;
}

/** A value of the export as it was in the table (bytes and times decoded). */
export function decodeValue(v: unknown): unknown {
  if (v && typeof v === 'object' && !Array.isArray(v)) {
    const o = v as { $b?: unknown; $t?: unknown };
    if (typeof o.$b === 'string') {
      const bytes = fromBase64Url(o.$b);
      if (!bytes) throw new LetheError('validation_failed', 'the database export holds malformed bytes');
      return bytes;
    }
    if (typeof o.$t === 'string') return new Date(o.$t);
  }
  return v;
}

/** Every exported table as it stands, read in one repeatable-read snapshot by the caller's transaction. */
export async function exportDatabase(exec: Executor): Promise<DatabaseExport> {
  const tables = {} as Record<ExportedTable, Row[]>;
  for (const [name, table] of Object.entries(EXPORTED_TABLES) as Array<[ExportedTable, PgTable]>) {
    const rows = (await exec.select().from(table)) as Row[];
    tables[name] = rows.map((r) => Object.fromEntries(Object.entries(r).map(([k, v]) => [k, encodeValue(v)])));
  }
  return { format: DATABASE_EXPORT_FORMAT, tables };
}

export function parseDatabaseExport(bytes: Uint8Array): DatabaseExport {
  const parsed = JSON.parse(Buffer.from(bytes).toString('utf8')) as DatabaseExport;
  if (parsed.format !== DATABASE_EXPORT_FORMAT || typeof parsed.tables !== 'object') {
    throw new LetheError('validation_failed', 'not a lethe database export');
  }
  return parsed;
}

/**
 * Inserts the export's rows (those `keep` accepts) into empty tables, in batches. An
 * export taken before epochs recorded their wrap format holds epochs whose keys carry
 * the legacy, purpose-less wrap: they come back as wrap format 1.
 */
export async function importDatabase(
  tx: Transaction,
  dump: DatabaseExport,
  keep: (table: ExportedTable, row: Row) => boolean,
): Promise<Record<ExportedTable, number>> {
  const counts = {} as Record<ExportedTable, number>;
  for (const [name, table] of Object.entries(EXPORTED_TABLES) as Array<[ExportedTable, PgTable]>) {
    const rows = (dump.tables[name] ?? [])
      .map((r) => Object.fromEntries(Object.entries(r).map(([k, v]) => [k, decodeValue(v)])) as Row)
      .map((r) => (name === 'epochs' && r.wrapFormat === undefined ? { ...r, wrapFormat: 1 } : r))
      .filter((r) => keep(name, r));
    for (let i = 0; i < rows.length; i += 500) await tx.insert(table).values(rows.slice(i, i + 500) as never);
    counts[name] = rows.length;
  }
  return counts;
}

/** Rows in the tables a restore fills (it refuses a database that holds any). */
export async function occupiedTables(exec: Executor): Promise<string[]> {
  const out: string[] = [];
  for (const name of Object.keys(EXPORTED_TABLES) as ExportedTable[]) {
    if (name === 'epochs' || name === 'audit_log' || name === 'audit_head') continue; // a fresh database has these
    const [row] = await queryRows<{ x: boolean }>(exec, sql.raw(`select exists (select 1 from ${name}) as x`));
    if (row?.x) out.push(name);
  }
  return out;
}

/**
 * Every lethe table schema.ts defines, each after the tables its foreign keys name:
 * what a failed restore empties and fills again.
 */
function letheTables(): string[] {
  const tables = (Object.values(schema) as unknown[]).filter((t): t is PgTable => is(t, PgTable));
  const byName = new Map(tables.map((t) => [getTableName(t), t]));
  const ordered: string[] = [];
  const visit = (name: string, path: ReadonlySet<string>): void => {
    if (ordered.includes(name) || path.has(name)) return;
    const table = byName.get(name);
    if (!table) return;
    for (const fk of getTableConfig(table).foreignKeys) visit(getTableName(fk.reference().foreignTable), new Set([...path, name]));
    ordered.push(name);
  };
  for (const name of byName.keys()) visit(name, new Set());
  return ordered;
}

/**
 * What the database held before a restore touched it: every lethe table's rows as
 * PostgreSQL's own JSON of them (times to the microsecond, bytes as hex), so that
 * putting them back gives the same rows, not rows rounded by a driver.
 */
export interface TablesSnapshot {
  readonly tables: ReadonlyArray<{ readonly name: string; readonly rows: number; readonly json: string }>;
  /** Rows in all tables. */
  readonly rows: number;
}

/** Every lethe table's rows, read by the caller's executor (the restore reads them in its own transaction, before clearing). */
export async function snapshotTables(exec: Executor): Promise<TablesSnapshot> {
  const tables: Array<{ name: string; rows: number; json: string }> = [];
  for (const name of letheTables()) {
    const [row] = await queryRows<{ n: number | string; rows: string }>(
      exec,
      sql`select count(*) as n, coalesce(json_agg(t), '[]'::json)::text as rows from ${sql.identifier(name)} t`,
    );
    tables.push({ name, rows: Number(row?.n ?? 0), json: row?.rows ?? '[]' });
  }
  return { tables, rows: tables.reduce((n, t) => n + t.rows, 0) };
}

/**
 * Puts a snapshot back, in one transaction: every lethe table emptied (one TRUNCATE,
 * which also waits out anyone still writing them), then the snapshot's rows inserted
 * again, parents first. What a restore that failed after its database commit calls.
 */
export async function putBackTables(db: Database, snapshot: TablesSnapshot): Promise<void> {
  await db.transaction(async (tx) => {
    await tx.execute(
      sql`truncate table ${sql.join(
        snapshot.tables.map((t) => sql.identifier(t.name)),
        sql`, `,
      )}`,
    );
    // embedding_counts last: the triggers on embeddings count its rows as they go back, into a table still empty
    const ordered = [...snapshot.tables.filter((t) => t.name !== 'embedding_counts'), ...snapshot.tables.filter((t) => t.name === 'embedding_counts')];
    for (const t of ordered) {
      if (t.rows === 0) continue;
      const table = sql.identifier(t.name);
      await tx.execute(sql`insert into ${table} select * from json_populate_recordset(null::${table}, ${t.json}::json)`);
    }
    await resyncLedgerSeq(tx);
  });
}
