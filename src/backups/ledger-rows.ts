/** The chain's rows in `ledger_chain` (locked per bucket, last record, inserts) and where the next record starts: a new chain, another writer's head followed, records never stored withdrawn. */
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import { sql } from 'drizzle-orm';
import { type KeyedHasher, utf8 } from '../crypto/index.js';
import { type Executor, queryRows, type Transaction } from '../db/client.js';
import { isLetheError, LetheError } from '../errors.js';
import type { BackupContext } from './context.js';
import {
  CHAIN_FORMAT,
  HEAD_FORMAT,
  LEDGER_HEAD_KEY,
  chainRecordKey,
  type ChainRecord,
  type ChainHead,
  GENESIS_PREV,
  chainMac,
  macMatches,
  parseJson,
  parseRecord,
} from './ledger-record.js';
import { newestHead } from './ledger-read.js';

/** How many destructions (and manifest versions) one record holds at most. */
export const RECORD_BATCH = 1000;

/** The bucket's advisory lock: one chain writer per bucket across replicas. */
export function lockChain(tx: Transaction, bucket: string): Promise<unknown> {
  return tx.execute(sql`select pg_advisory_xact_lock(hashtext(${`lethe-ledger-chain:${bucket}`}))`);
}

/** The last record of the bucket's chain this database assigned (`stored`: and stored). */
export async function lastRecord(tx: Executor, bucket: string, only: 'assigned' | 'stored'): Promise<{ seq: number; mac: Uint8Array } | undefined> {
  const stored = only === 'stored' ? sql`and stored_at is not null` : sql``;
  const [row] = await queryRows<{ seq: number | string; mac: Uint8Array }>(
    tx,
    sql`select seq, mac from ledger_chain where bucket = ${bucket} ${stored} order by seq desc limit 1`,
  );
  return row ? { seq: Number(row.seq), mac: new Uint8Array(row.mac) } : undefined;
}

/** A record read from the bucket, recorded as this database's (already stored). */
export async function insertStored(tx: Transaction, bucket: string, seq: number, body: string, macHex: string): Promise<{ seq: number; mac: Uint8Array }> {
  const mac = hexToBytes(macHex);
  await tx.execute(sql`insert into ledger_chain (bucket, seq, body, mac, created_at, stored_at)
                       values (${bucket}, ${seq}, ${body}, ${Buffer.from(mac)}, now(), now())`);
  return { seq, mac };
}

/**
 * Where this database starts the bucket's chain: the genesis (assigned, not yet
 * stored) for a bucket without one, or the bucket's verified head for a bucket that
 * already holds a chain (a new database on an existing bucket continues it).
 */
export async function startChain(ctx: BackupContext, tx: Transaction): Promise<{ seq: number; mac: Uint8Array }> {
  const bucket = ctx.backup.bucket;
  const head = await newestHead(ctx.backup, ctx.ledgerMac);
  if (head) {
    const bytes = await ctx.backup.get(chainRecordKey(head.seq));
    const record = parseRecord(bytes, ctx.ledgerMac, head.seq);
    if (record.mac !== head.record) throw new LetheError('conflict', `ledger chain record ${head.seq} does not match the head that names it`);
    return insertStored(tx, bucket, head.seq, Buffer.from(bytes).toString('utf8'), record.mac);
  }
  if (await ctx.backup.head(chainRecordKey(0))) {
    throw new LetheError('conflict', 'the backup bucket holds a ledger chain without a readable head (ledger/head.json): it was removed or altered');
  }
  const genesis = sealRecord(ctx.ledgerMac, { seq: 0, prev: GENESIS_PREV, auditHead: null, destructions: [], manifests: [] });
  await insertRecord(tx, bucket, genesis);
  return { seq: 0, mac: hexToBytes(genesis.record.mac) };
}

/**
 * Another database may have appended to this bucket's chain since this one last did
 * (a restored copy of it, sharing the backup bucket): when the bucket's current head
 * is ahead and descends from this database's last record, the chain continues after
 * it; when the bucket's chain has diverged from this database's, nothing is written
 * and the conflict names it. Two databases appending at the same instant cannot both
 * create one record: records are put create-if-absent (`store`); the loser, whose
 * record was never stored nor acknowledged, withdraws it and appends again after the
 * winner's.
 */
export async function followBucket(ctx: BackupContext, tx: Transaction, last: { seq: number; mac: Uint8Array }): Promise<{ seq: number; mac: Uint8Array }> {
  let bytes: Uint8Array;
  try {
    bytes = await ctx.backup.get(LEDGER_HEAD_KEY);
  } catch (e) {
    if (isLetheError(e, 'not_found')) return last;
    throw e;
  }
  let value: Record<string, unknown> | undefined;
  try {
    value = parseJson(bytes, 'the ledger head');
  } catch {
    value = undefined;
  }
  if (!value || value.format !== HEAD_FORMAT || typeof value.seq !== 'number' || !macMatches(ctx.ledgerMac, value)) {
    // noise someone put over the head: this database's own chain goes on, and its next head replaces it
    // (a restore reads the newest valid head among every stored version, so the noise is ignored there too)
    ctx.logger.warn('the ledger head (ledger/head.json) in the backup bucket fails its MAC: it was altered; writing a new head over it');
    return last;
  }
  const head = value as unknown as ChainHead;
  const ours = bytesToHex(last.mac);
  if (head.seq < last.seq) return last; // this database stored records after the head it wrote last (a crash before the head's put)
  if (head.seq === last.seq) {
    if (head.record === ours) return last;
  } else {
    // ahead: continue after it if its chain holds this database's last record
    const mine = await ctx.backup.get(chainRecordKey(last.seq)).catch(() => undefined);
    const record = mine ? parseRecord(mine, ctx.ledgerMac, last.seq) : undefined;
    if (record?.mac === ours) {
      const headBytes = await ctx.backup.get(chainRecordKey(head.seq));
      const newest = parseRecord(headBytes, ctx.ledgerMac, head.seq);
      if (newest.mac !== head.record) throw new LetheError('conflict', `ledger chain record ${head.seq} does not match the head that names it`);
      return insertStored(tx, ctx.backup.bucket, head.seq, Buffer.from(headBytes).toString('utf8'), newest.mac);
    }
  }
  // Another database stored its record where this one had only assigned its own: nothing
  // of this database's unstored records was acknowledged, so they are withdrawn (their
  // destructions and manifest versions go back to pending) and the chain is followed
  // from this database's last stored record.
  const stored = await withdrawUnstored(ctx, tx);
  if (stored && stored.seq < last.seq) return followBucket(ctx, tx, stored);
  throw new LetheError(
    'conflict',
    `the backup bucket's ledger chain has diverged from this database's at record ${Math.min(head.seq, last.seq)}: another database (a restored copy, or a second deployment) writes this bucket's ledger; not appending until one of them is retired`,
    { retryable: false },
  );
}

/**
 * Withdraws this database's assigned, never stored records of the bucket's chain:
 * their destructions are pending again (claimed by no record), the backups whose
 * manifest versions they carried are recorded again. Answers the last stored record.
 */
export async function withdrawUnstored(ctx: BackupContext, tx: Transaction): Promise<{ seq: number; mac: Uint8Array } | undefined> {
  const bucket = ctx.backup.bucket;
  const rows = await queryRows<{ seq: number | string; body: string }>(
    tx,
    sql`select seq, body from ledger_chain where bucket = ${bucket} and stored_at is null`,
  );
  if (rows.length > 0) {
    const seqs = JSON.stringify(rows.map((r) => Number(r.seq)));
    await tx.execute(
      sql`delete from ledger_exports where bucket = ${bucket} and chain_seq = any(array(select s::bigint from json_array_elements_text(${seqs}::json) as s))`,
    );
    const backupIds = JSON.stringify([...new Set(rows.flatMap((r) => (JSON.parse(r.body) as ChainRecord).manifests.map((m) => m.backupId)))]);
    await tx.execute(sql`update backups set chained_version = 0 where backup_id in (select b from json_array_elements_text(${backupIds}::json) as b)`);
    await tx.execute(sql`delete from ledger_chain where bucket = ${bucket} and stored_at is null`);
    ctx.logger.warn(
      { withdrawn: rows.length },
      "another database appended to the backup bucket's ledger chain first: this database's unstored records are withdrawn and written again after it",
    );
  }
  return lastRecord(tx, bucket, 'stored');
}

export function sealRecord(
  mac: KeyedHasher,
  fields: Pick<ChainRecord, 'seq' | 'prev' | 'auditHead' | 'destructions' | 'manifests'>,
): { record: ChainRecord; body: string } {
  const unsealed = { format: CHAIN_FORMAT as typeof CHAIN_FORMAT, ...fields, at: new Date().toISOString() };
  const record: ChainRecord = { ...unsealed, mac: chainMac(mac, unsealed) };
  return { record, body: JSON.stringify(record) };
}

export async function insertRecord(tx: Transaction, bucket: string, sealed: { record: ChainRecord; body: string }): Promise<void> {
  await tx.execute(sql`insert into ledger_chain (bucket, seq, body, mac, created_at)
                       values (${bucket}, ${sealed.record.seq}, ${sealed.body}, ${Buffer.from(hexToBytes(sealed.record.mac))}, now())`);
}
