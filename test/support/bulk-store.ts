/**
 * A store made large with SQL alone (set-based inserts, `generate_series`): the rows of
 * many other subjects, shaped like the rows lethe writes, so that the tables and their
 * indexes are as large as a store's of `entries` entries while nothing has to be
 * sealed. The erasure bench (bench/erasure.ts) and the plan tests
 * (test/erasure/plans.test.ts) fill their stores with it; a subject written through
 * the services afterwards sits among these rows.
 *
 * What it holds, for `entries` = E (about 50 entries a subject, one summary per 10
 * entries):
 *
 * - `subject_keys`: E/50 live keys (a dummy 16-byte wrapped DEK each: never unwrapped —
 *   no lease, append or embedding names them);
 * - `log_entries`: E entries under those keys (scattered md5 ids; segments that are
 *   not in the object store);
 * - `embeddings`: E rows (a 128-byte dummy `sealed`, a real one is ~600–800 B) under
 *   E/1000 keys that the destruction ledger names — the copies of destroyed keys that
 *   lethe never opens nor counts (a restored database may hold such rows): the table is
 *   store-sized while the in-memory indexes hold only what the services wrote;
 * - `artifacts`: E/10 summaries at version 2 with their `artifact_keys` row (dummy
 *   wrapped key) and 5 `provenance` edges each to scattered bulk entries; their
 *   version-1 keys are in `destruction_ledger` (regenerated), durable and exported to
 *   `backupBucket`'s chain (`ledger_exports`, 10 a record — a flush records what is
 *   pending, seldom more — at negative record numbers that are never assigned);
 * - `audit_log`: E rows at negative sequence numbers (`key.lease` of bulk keys, three
 *   days old: before the chain's head, which stays where it was);
 * - `backup_keys`: every bulk subject key listed in one of three backups (no
 *   manifest: no erasure of a bulk subject runs).
 *
 * An erasure reaches none of these rows: it follows the subject's key and hash, and the
 * provenance edges above the subject's entries.
 */
import { sql } from 'drizzle-orm';
import { type Database, queryRows } from '../../src/db/client.js';

export interface BulkStore {
  readonly entries: number;
  readonly subjects: number;
  readonly summaries: number;
  readonly embeddings: number;
  readonly ledger: number;
  /** Seconds each statement took, by what it inserted. */
  readonly seconds: Record<string, number>;
}

/** The large tables the bulk fills (what a plan must not read whole). */
export const BULK_TABLES = [
  'subject_keys',
  'log_entries',
  'embeddings',
  'artifacts',
  'artifact_keys',
  'provenance',
  'destruction_ledger',
  'ledger_exports',
  'audit_log',
  'backup_keys',
] as const;

const int = (n: number): string => {
  if (!Number.isSafeInteger(n) || n < 0) throw new Error(`not a whole number: ${n}`);
  return String(n);
};

/**
 * Fills the store behind `db` with `entries` bulk entries and what goes with them (above).
 * The vault must have been opened once (migrations run, an active epoch).
 */
export async function seedBulkStore(db: Database, options: { entries: number; model: string; backupBucket: string; label?: string }): Promise<BulkStore> {
  const E = options.entries;
  const tag = options.label ?? 'bulk';
  if (!/^[a-z0-9-]+$/.test(options.model)) throw new Error(`unexpected embedder model name ${options.model}`);
  if (!/^[a-z0-9.-]+$/.test(options.backupBucket)) throw new Error(`unexpected bucket name ${options.backupBucket}`);
  if (!/^[a-z0-9]+$/.test(tag)) throw new Error(`unexpected label ${tag}`);
  const NS = Math.max(1, Math.ceil(E / 50));
  const NG = Math.max(1, Math.ceil(E / 1000));
  const NA = Math.floor(E / 10);
  // a prime that scatters the summaries' sources over the entries
  const P = 1_000_003;
  if (E % P === 0) throw new Error('bulk size is a multiple of the scattering prime');
  const eid = (e: string) => `'entry_' || substr(md5('${tag}e' || (${e})::text), 1, 22)`;
  const kid = (e: string) => `'key_${tag}_' || (${e})`;
  const aid = (e: string) => `'art_' || substr(md5('${tag}a' || (${e})::text), 1, 22)`;
  const epoch = `(select epoch from epochs where state = 'active')`;
  // bulk audit rows go below every row there is (negative seqs: the chain's head stays where it was)
  const [low] = await queryRows<{ seq: string | number | null }>(db, sql`select min(seq) as seq from audit_log`);
  const auditFrom = Math.min(0, Number(low?.seq ?? 0)) - 1;
  if (!Number.isSafeInteger(auditFrom)) throw new Error("unexpected audit_log seq");
  const statements: Array<[string, string]> = [
    [
      'subject keys',
      `insert into subject_keys (key_id, subject_hash, state, epoch, wrapped_dek, created_at, updated_at, next_seq)
       select ${kid('s')}, sha256(convert_to('${tag}-subject-' || s, 'UTF8')), 'active', ${epoch}, decode(md5('wk' || s), 'hex'), now(), now(), ${int(Math.ceil(E / NS) + 1)}
         from generate_series(0, ${int(NS - 1)}) s`,
    ],
    [
      'log entries',
      `insert into log_entries (entry_id, subject_hash, key_id, seq, segment, frame_offset, frame_length, created_at)
       select ${eid('i')}, k.subject_hash, k.key_id, i / ${int(NS)} + 1, 'log/seg_${tag}_' || (i / 64), 16 + (i % 64) * 700, 700, now() - interval '2 day'
         from generate_series(0, ${int(E - 1)}) i join subject_keys k on k.key_id = ${kid(`i % ${int(NS)}`)}`,
    ],
    [
      'destroyed keys of the stored embeddings',
      `with d as (
         insert into destruction_ledger (key_id, key_kind, subject_hash, destroyed_at, reason, wrapped_epoch, durable_at)
         select 'key_${tag}gone_' || g, 'subject', sha256(convert_to('${tag}-gone-' || g, 'UTF8')), now() - interval '2 day' + g * interval '1 ms', 'bench', ${epoch}, now()
           from generate_series(0, ${int(NG - 1)}) g
         returning key_id)
       insert into ledger_exports (bucket, key_id, exported_at, chain_seq) select '${options.backupBucket}', key_id, now(), -1 - row_number() over () / 10 from d`,
    ],
    [
      'embeddings',
      `insert into embeddings (record_id, record_type, key_id, model, sealed)
       select ${eid('i')}, 'entry', 'key_${tag}gone_' || (i % ${int(NG)}), '${options.model}', '\\x${'5a'.repeat(128)}'::bytea
         from generate_series(0, ${int(E - 1)}) i`,
    ],
    [
      'summaries and their keys',
      `with a as (
         insert into artifacts (artifact_id, kind, state, version, height, key_id, object, generator, created_at, updated_at)
         select ${aid('a')}, 'summary', 'live', 2, 1, 'akey_${tag}_' || a, null, 'bulk', now() - interval '1 day', now() - interval '1 day'
           from generate_series(0, ${int(NA - 1)}) a
         returning artifact_id, key_id)
       insert into artifact_keys (key_id, artifact_id, version, epoch, wrapped_dek, created_at)
       select key_id, artifact_id, 2, ${epoch}, decode(md5(key_id), 'hex'), now() from a`,
    ],
    [
      'destroyed version-1 keys of the summaries',
      `with d as (
         insert into destruction_ledger (key_id, key_kind, subject_hash, destroyed_at, reason, wrapped_epoch, durable_at)
         select 'akey_${tag}v1_' || a, 'artifact-version', null, now() - interval '1 day' + a * interval '1 ms', 'regenerated', ${epoch}, now()
           from generate_series(0, ${int(NA - 1)}) a
         returning key_id)
       insert into ledger_exports (bucket, key_id, exported_at, chain_seq) select '${options.backupBucket}', key_id, now(), -1 - row_number() over () / 10 from d`,
    ],
    [
      'provenance edges',
      `insert into provenance (artifact_id, source_id, source_type)
       select ${aid('a')}, ${eid(`((a::bigint * 5 + j) * ${P}) % ${int(E)}`)}, 'entry'
         from generate_series(0, ${int(NA - 1)}) a, generate_series(0, 4) j`,
    ],
    [
      'audit rows',
      `insert into audit_log (seq, at, actor, action, key_id, subject_hash, epoch, detail, prev_mac, mac)
       select ${String(auditFrom)} - i, now() - interval '3 day', 'bulk', 'key.lease', ${kid(`i % ${int(NS)}`)}, null, null, '{}', '\\x${'00'.repeat(32)}'::bytea, '\\x${'00'.repeat(32)}'::bytea
         from generate_series(0, ${int(E - 1)}) i`,
    ],
    [
      'backup listings',
      `insert into backup_keys (key_id, backup_id) select ${kid('s')}, 'bkp_${tag}_' || (s % 3) from generate_series(0, ${int(NS - 1)}) s`,
    ],
  ];
  const seconds: Record<string, number> = {};
  for (const [what, text] of statements) {
    const started = performance.now();
    await db.execute(sql.raw(text));
    seconds[what] = (performance.now() - started) / 1000;
  }
  return { entries: E, subjects: NS, summaries: NA, embeddings: E, ledger: NG + NA, seconds };
}
