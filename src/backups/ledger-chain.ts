/**
 * The destruction ledger's chain in the backup bucket: the write-ahead record of
 * every key destruction, so that neither a lost database nor someone who can write
 * the bucket can bring a destroyed key back.
 *
 * Layout: `ledger/chain/<seq>.json` (seq zero-padded; record 0 is the genesis) and
 * `ledger/head.json` naming the last record. Each record carries its sequence number,
 * the previous record's MAC, the audit chain's tip when it was written, the
 * destructions and manifest versions it adds, and its own MAC: HMAC-SHA256 under the
 * `ledger-chain` subkey of the root key (separate from every other subkey) over the
 * record's canonical JSON. The head is MAC'd the same way. Records are retained
 * under Object Lock when the bucket allows it.
 *
 * Writing is two-phase, one writer per bucket (an advisory lock): first the records
 * are assigned in the database (`ledger_chain`: seq, exact bytes, MAC) and the
 * destructions and manifest versions they hold are claimed; then the records not yet
 * stored are put, byte for byte as assigned, the head after them, and only then are
 * their destructions marked durable (`destruction_ledger.durable_at`). A record's
 * bytes never change once assigned, so a crash anywhere only repeats the same puts.
 *
 * Reading (`readChain`) verifies the chain from the genesis to the newest head found
 * (among every version of the head in a versioned bucket) and names what is wrong:
 * a missing record, a MAC that does not verify, a record out of sequence, a head
 * beyond the records.
 *
 * This file writes; the objects' format is in `ledger-record.ts`, reading in
 * `ledger-read.ts`, both re-exported here.
 */
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import { sql } from 'drizzle-orm';
import { constantTimeEqual, utf8 } from '../crypto/index.js';
import { type Executor, queryRows, type Transaction } from '../db/client.js';
import type { KeyReplacement } from '../db/schema.js';
import { LetheError } from '../errors.js';
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
  retention,
  parseJson,
  parseRecord,
} from './ledger-record.js';
import type { VerifiedChain } from './ledger-read.js';
import { RECORD_BATCH, lockChain, lastRecord, insertStored, startChain, followBucket, sealRecord, insertRecord } from './ledger-rows.js';

export {
  CHAIN_FORMAT,
  type ChainHead,
  chainMac,
  chainRecordKey,
  type ChainRecord,
  HEAD_FORMAT,
  LEDGER_CHAIN_PREFIX,
  LEDGER_HEAD_KEY,
  type LedgerEntry,
  macMatches,
  retention,
} from './ledger-record.js';
export { readChain, salvageChain, type VerifiedChain } from './ledger-read.js';

/**
 * Phase one: assigns records to the destructions and manifest versions not yet in
 * the bucket's chain (at most `RECORD_BATCH` each per record). Returns how many
 * records it assigned.
 *
 * Which destructions: with `everything`, every one this bucket's chain does not hold —
 * also those already durable in another bucket's chain (the backups moved, or a replica
 * writes another bucket), which takes reading the whole ledger; without, only those
 * durable in no chain yet (`durable_at` null: the partial index
 * `destruction_ledger_pending`), what a destruction's own flush needs, whatever the
 * ledger's size. The catch-ups (start-up, the periodic one, a backup) ask for everything.
 */
async function assign(ctx: BackupContext, everything: boolean): Promise<number> {
  const bucket = ctx.backup.bucket;
  // anchored: nothing is written over a cut tail (anchor.ts). Checked before the chain's lock is taken, so
  // the lock is held no longer for it: what another writer stores meanwhile only moves the head forward.
  const cut = await ctx.anchor.check();
  if (cut) {
    throw new LetheError('conflict', `${cut}: not writing the ledger chain over the gap until the missing records are put back (lethe backup repair-ledger)`, {
      retryable: false,
    });
  }
  return ctx.db.transaction(async (tx) => {
    await lockChain(tx, bucket);
    let last = (await lastRecord(tx, bucket, 'assigned')) ?? (await startChain(ctx, tx));
    last = await followBucket(ctx, tx, last);
    let assigned = 0;
    for (;;) {
      const rows = await queryRows<{
        key_id: string;
        key_kind: string;
        subject_hash: Uint8Array | null;
        destroyed_at: Date | string;
        reason: string;
        wrapped_epoch: number;
        leased_until: Date | string | null;
        replaced_by: KeyReplacement | null;
      }>(
        tx,
        sql`select dl.key_id, dl.key_kind, dl.subject_hash, dl.destroyed_at, dl.reason, dl.wrapped_epoch, dl.leased_until, dl.replaced_by
              from destruction_ledger dl
             where ${everything ? sql`` : sql`dl.durable_at is null and`}
                   not exists (select 1 from ledger_exports le where le.bucket = ${bucket} and le.key_id = dl.key_id and le.chain_seq is not null)
             order by dl.destroyed_at, dl.key_id limit ${RECORD_BATCH}`,
      );
      const manifests = await queryRows<{ backup_id: string; manifest_version: number }>(
        tx,
        sql`select backup_id, manifest_version from backups where manifest_version > chained_version order by backup_id limit ${RECORD_BATCH}`,
      );
      if (rows.length === 0 && manifests.length === 0) return assigned;
      const seq = last.seq + 1;
      const sealed = sealRecord(ctx.ledgerMac, {
        seq,
        prev: bytesToHex(last.mac),
        auditHead: await auditTip(ctx, tx),
        destructions: rows.map((r) => ({
          keyId: r.key_id,
          keyKind: r.key_kind,
          subjectHash: r.subject_hash ? Buffer.from(r.subject_hash).toString('hex') : null,
          destroyedAt: new Date(r.destroyed_at).toISOString(),
          reason: r.reason,
          wrappedEpoch: Number(r.wrapped_epoch),
          leasedUntil: r.leased_until ? new Date(r.leased_until).toISOString() : null,
          ...(r.replaced_by ? { replacedBy: r.replaced_by } : {}),
        })),
        manifests: manifests.map((m) => ({ backupId: m.backup_id, version: Number(m.manifest_version) })),
      });
      await insertRecord(tx, bucket, sealed);
      if (rows.length > 0) {
        const keyIds = JSON.stringify(rows.map((r) => r.key_id));
        await tx.execute(sql`insert into ledger_exports (bucket, key_id, exported_at, chain_seq)
                             select ${bucket}, k, now(), ${seq} from json_array_elements_text(${keyIds}::json) as k
                             on conflict (bucket, key_id) do update set chain_seq = excluded.chain_seq, exported_at = excluded.exported_at`);
      }
      for (const m of manifests) {
        await tx.execute(sql`update backups set chained_version = greatest(chained_version, ${Number(m.manifest_version)}) where backup_id = ${m.backup_id}`);
      }
      last = { seq, mac: hexToBytes(sealed.record.mac) };
      assigned++;
    }
  });
}

async function auditTip(ctx: BackupContext, tx: Transaction): Promise<{ seq: number; mac: string } | null> {
  const tip = await ctx.audit.tip(tx);
  return tip.seq > 0 ? { seq: tip.seq, mac: bytesToHex(tip.mac) } : null;
}

/**
 * Phase two: puts every assigned record not yet stored, in order, then the head
 * naming the last one, then marks their destructions durable. Returns the key ids
 * that became durable.
 */
async function store(ctx: BackupContext): Promise<string[]> {
  const bucket = ctx.backup.bucket;
  return ctx.db.transaction(async (tx) => {
    await lockChain(tx, bucket);
    const pending = await queryRows<{ seq: number | string; body: string; mac: Uint8Array }>(
      tx,
      sql`select seq, body, mac from ledger_chain where bucket = ${bucket} and stored_at is null order by seq`,
    );
    if (pending.length === 0) return [];
    // test fault injection: the process dies after the destruction committed in PostgreSQL, before its record is written
    if (pending.some((r) => (JSON.parse(r.body) as ChainRecord).destructions.length > 0)) ctx.failpoint?.('ledger-before-store');
    const retain = retention(ctx, await ctx.backup.lockable());
    // only what this vault sealed reaches the bucket, where Object Lock keeps it for good: each record's
    // MAC, sequence number and link to the one before are checked first (a row edited in SQL is refused)
    let prev = pending[0] && Number(pending[0].seq) === 0 ? GENESIS_PREV : (await lastRecord(tx, bucket, 'stored'))?.mac;
    for (const r of pending) {
      const seq = Number(r.seq);
      const unsealed = `ledger chain record ${seq} in the database (ledger_chain) is not one this vault sealed`;
      let record: ChainRecord;
      try {
        record = parseRecord(utf8.encode(r.body), ctx.ledgerMac, seq);
      } catch (e) {
        throw new LetheError('conflict', `${unsealed}: ${e instanceof Error ? e.message : String(e)}; not writing it to the backup bucket`, {
          retryable: false,
        });
      }
      const previous = typeof prev === 'string' ? prev : prev ? bytesToHex(prev) : undefined;
      if (record.mac !== bytesToHex(new Uint8Array(r.mac)) || (previous !== undefined && record.prev !== previous)) {
        throw new LetheError(
          'conflict',
          `${unsealed}: its MAC or its link to record ${seq - 1} differs from what the database holds; not writing it to the backup bucket`,
          { retryable: false },
        );
      }
      prev = record.mac;
    }
    for (const r of pending) {
      const key = chainRecordKey(Number(r.seq));
      const bytes = utf8.encode(r.body);
      // a record is created, never replaced: one already there must be this one (a retry after a crash), else another database wrote it first
      if (await ctx.backup.putIfAbsent(key, bytes, retain ? { retain } : {})) continue;
      const there = await ctx.backup.get(key);
      if (!constantTimeEqual(there, bytes)) {
        throw new LetheError(
          'conflict',
          `ledger chain record ${Number(r.seq)} in the backup bucket was written by another database first: nothing is acknowledged now; the next attempt withdraws this database's record and appends after the other's`,
        );
      }
    }
    const last = pending[pending.length - 1]!;
    const unsealed = {
      format: HEAD_FORMAT as typeof HEAD_FORMAT,
      seq: Number(last.seq),
      record: bytesToHex(new Uint8Array(last.mac)),
      at: new Date().toISOString(),
    };
    const head: ChainHead = { ...unsealed, mac: chainMac(ctx.ledgerMac, unsealed) };
    const headBytes = utf8.encode(JSON.stringify(head));
    await ctx.backup.put(LEDGER_HEAD_KEY, headBytes, retain ? { retain } : {});
    // read back before anything is acknowledged: another database appending to this bucket at the same instant shows here
    const storedHead = parseJson(await ctx.backup.get(LEDGER_HEAD_KEY), 'the ledger head');
    const storedLast = parseRecord(await ctx.backup.get(chainRecordKey(head.seq)), ctx.ledgerMac, head.seq);
    if (storedHead.seq !== head.seq || storedHead.record !== head.record || storedLast.mac !== head.record) {
      throw new LetheError(
        'conflict',
        `the backup bucket's ledger chain changed under this write at record ${head.seq}: another database writes this bucket's ledger; nothing is acknowledged until one of them is retired`,
        { retryable: false },
      );
    }
    await ctx.anchor.mirror(headBytes);
    const seqs = JSON.stringify(pending.map((r) => Number(r.seq)));
    await tx.execute(sql`update ledger_chain set stored_at = now()
                          where bucket = ${bucket} and seq in (select s::bigint from json_array_elements_text(${seqs}::json) as s)`);
    const keys = await queryRows<{ key_id: string }>(
      tx,
      sql`select key_id from ledger_exports
           where bucket = ${bucket} and chain_seq = any(array(select s::bigint from json_array_elements_text(${seqs}::json) as s))`,
    );
    const keyIds = keys.map((k) => k.key_id);
    await ctx.destructions.markDurable(tx, keyIds);
    return keyIds;
  });
}

/**
 * Writes every destruction and manifest version not yet in the bucket's ledger chain
 * there, durably, and marks those destructions durable. Throws when the bucket
 * cannot be written (nothing is marked then; the caller retries). `everything: false`
 * leaves out destructions already durable in another bucket's chain (`assign`): the
 * flush of a destruction, whose cost must not grow with the ledger.
 */
export async function flushLedger(ctx: BackupContext, options: { everything?: boolean } = {}): Promise<{ records: number; durable: string[] }> {
  const records = await assign(ctx, options.everything ?? true);
  const durable = await store(ctx);
  return { records, durable };
}

/** The last record of the bucket's chain this database has stored: where a backup taken now stands. */
export async function chainPosition(db: Executor, bucket: string): Promise<{ seq: number; mac: string } | undefined> {
  const last = await lastRecord(db, bucket, 'stored');
  return last ? { seq: last.seq, mac: bytesToHex(last.mac) } : undefined;
}

/**
 * After a restore: the restored database continues the bucket's chain from its last
 * record, and every destruction the chain holds is claimed and durable.
 */
export async function adoptChain(tx: Transaction, bucket: string, chain: VerifiedChain): Promise<void> {
  await tx.execute(sql`delete from ledger_chain where bucket = ${bucket}`);
  if (!chain.last) return;
  await insertStored(tx, bucket, chain.last.seq, chain.last.body, chain.last.mac);
  const keyIds = JSON.stringify([...chain.entries.keys()]);
  await tx.execute(sql`insert into ledger_exports (bucket, key_id, exported_at, chain_seq)
                       select ${bucket}, k, now(), ${chain.last.seq} from json_array_elements_text(${keyIds}::json) as k
                       on conflict (bucket, key_id) do update set chain_seq = excluded.chain_seq`);
  for (const [backupId, version] of chain.manifests) {
    await tx.execute(sql`update backups set chained_version = greatest(chained_version, ${version}) where backup_id = ${backupId}`);
  }
}
