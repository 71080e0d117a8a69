/**
 * The database export a backup carries, and its restore. Everything lethe keeps in
 * PostgreSQL is ciphertext or metadata — wrapped keys, the log index, provenance,
 * sealed embeddings, the ledger, the audit chain — so the export holds no plaintext
 * and no plaintext key. Values are JSON with bytes as {"$b": base64url} and times as
 * {"$t": ISO string}, table by table in dependency order.
 */
import { sql } from 'drizzle-orm';
import type { PgTable } from 'drizzle-orm/pg-core';
import { fromBase64Url, toBase64Url } from '../crypto/index.js';
import { type Executor, queryRows, type Transaction } from '../db/client.js';
import {
  artifactKeys,
  artifacts,
  auditHead,
  auditLog,
  destructionLedger,
  embeddings,
  epochs,
  logEntries,
  provenance,
  subjectKeys,
  trainingExposureRecords,
  trainingExposures,
  trainingExposureSubjects,
} from '../db/schema.js';
import { LetheError } from '../errors.js';

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
  training_exposures: trainingExposures,
  training_exposure_records: trainingExposureRecords,
  training_exposure_subjects: trainingExposureSubjects,
  audit_log: auditLog,
  audit_head: auditHead,
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

function decodeValue(v: unknown): unknown {
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

/** Inserts the export's rows (those `keep` accepts) into empty tables, in batches. */
export async function importDatabase(tx: Transaction, dump: DatabaseExport, keep: (table: ExportedTable, row: Row) => boolean): Promise<Record<ExportedTable, number>> {
  const counts = {} as Record<ExportedTable, number>;
  for (const [name, table] of Object.entries(EXPORTED_TABLES) as Array<[ExportedTable, PgTable]>) {
    const rows = (dump.tables[name] ?? [])
      .map((r) => Object.fromEntries(Object.entries(r).map(([k, v]) => [k, decodeValue(v)])) as Row)
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
