/**
 * The audit log: append-only and MAC-chained. Each row carries the previous row's MAC
 * and its own, HMAC-SHA256 under a subkey of the root key over the previous MAC and
 * the row's canonical encoding. Someone with write access to the database but not
 * the root key cannot edit, delete, insert or reorder rows without `lethe audit
 * verify` noticing; audit_head holds the tip so a truncated tail is noticed too.
 *
 * Rows are appended inside the caller's transaction, so a change and its audit row
 * commit together or not at all. Appends serialize on the audit_head row lock.
 */
import { bytesToHex } from '@noble/hashes/utils.js';
import { asc, eq, gt } from 'drizzle-orm';
import { constantTimeEqual, keyedHash, utf8, zeroize } from '../crypto/index.js';
import type { Executor, Transaction } from '../db/client.js';
import { auditHead, auditLog, type AuditRow } from '../db/schema.js';

export type AuditAction =
  | 'key.create'
  | 'key.lease'
  | 'key.fence'
  | 'key.unfence'
  | 'key.destroy'
  | 'kek.epoch.create'
  | 'kek.rotate'
  | 'kek.epoch.retire';

export type AuditDetail = Readonly<Record<string, string | number | boolean | null>>;

export interface AuditEvent {
  readonly actor: string;
  readonly action: AuditAction;
  readonly keyId?: string | undefined;
  readonly subjectHash?: Uint8Array | undefined;
  readonly epoch?: number | undefined;
  readonly detail?: AuditDetail | undefined;
}

const GENESIS: Uint8Array = new Uint8Array(32);

function canonicalDetail(detail: AuditDetail | undefined): string {
  const d = detail ?? {};
  return JSON.stringify(Object.fromEntries(Object.keys(d).sort().map((k) => [k, d[k]])));
}

function macInput(row: Pick<AuditRow, 'seq' | 'at' | 'actor' | 'action' | 'keyId' | 'subjectHash' | 'epoch' | 'detail'>): Uint8Array {
  return utf8.encode(
    JSON.stringify([
      row.seq,
      row.at.toISOString(),
      row.actor,
      row.action,
      row.keyId,
      row.subjectHash ? bytesToHex(row.subjectHash) : null,
      row.epoch,
      row.detail,
    ]),
  );
}

function rowMac(key: Uint8Array, prevMac: Uint8Array, row: Parameters<typeof macInput>[0]): Uint8Array {
  const body = macInput(row);
  const input = new Uint8Array(prevMac.length + body.length);
  input.set(prevMac, 0);
  input.set(body, prevMac.length);
  return keyedHash(key, input);
}

export interface AuditVerifyResult {
  readonly ok: boolean;
  readonly rows: number;
  readonly headSeq: number;
  /** The first sequence number at which the chain breaks, when it does. */
  readonly brokenAt?: number;
  readonly problem?: string;
}

export class AuditLog {
  readonly #key: Uint8Array;

  /** Takes ownership of the MAC key. */
  constructor(macKey: Uint8Array) {
    this.#key = macKey;
  }

  /** Appends events in order, inside `tx`. */
  async append(tx: Transaction, events: readonly AuditEvent[]): Promise<void> {
    if (events.length === 0) return;
    const [head] = await tx.select().from(auditHead).where(eq(auditHead.id, 1)).for('update');
    if (!head) throw new Error('audit_head row is missing: run migrations');
    let seq = head.seq;
    let prev = head.mac;
    const at = new Date();
    const rows: AuditRow[] = [];
    for (const e of events) {
      seq += 1;
      const base = {
        seq,
        at,
        actor: e.actor,
        action: e.action,
        keyId: e.keyId ?? null,
        subjectHash: e.subjectHash ?? null,
        epoch: e.epoch ?? null,
        detail: canonicalDetail(e.detail),
      };
      const mac = rowMac(this.#key, prev, base);
      rows.push({ ...base, prevMac: prev, mac });
      prev = mac;
    }
    // Bounded chunks keep each statement under PostgreSQL's parameter limit.
    for (let i = 0; i < rows.length; i += 1000) await tx.insert(auditLog).values(rows.slice(i, i + 1000));
    await tx.update(auditHead).set({ seq, mac: prev }).where(eq(auditHead.id, 1));
  }

  /** Walks the whole chain in bounded batches. */
  async verify(db: Executor, batchSize = 2000): Promise<AuditVerifyResult> {
    const [head] = await db.select().from(auditHead).where(eq(auditHead.id, 1));
    if (!head) return { ok: false, rows: 0, headSeq: 0, problem: 'audit_head row is missing' };
    let expectedSeq = 1;
    let prev = GENESIS;
    let count = 0;
    for (;;) {
      const batch = await db
        .select()
        .from(auditLog)
        .where(gt(auditLog.seq, expectedSeq - 1))
        .orderBy(asc(auditLog.seq))
        .limit(batchSize);
      if (batch.length === 0) break;
      for (const row of batch) {
        if (row.seq !== expectedSeq) {
          return { ok: false, rows: count, headSeq: head.seq, brokenAt: expectedSeq, problem: `row ${expectedSeq} is missing` };
        }
        if (!constantTimeEqual(row.prevMac, prev)) {
          return { ok: false, rows: count, headSeq: head.seq, brokenAt: row.seq, problem: `row ${row.seq} does not follow the previous row` };
        }
        const mac = rowMac(this.#key, prev, row);
        if (!constantTimeEqual(mac, row.mac)) {
          return { ok: false, rows: count, headSeq: head.seq, brokenAt: row.seq, problem: `row ${row.seq} was altered` };
        }
        prev = row.mac;
        expectedSeq += 1;
        count += 1;
      }
    }
    if (head.seq !== count) {
      return {
        ok: false,
        rows: count,
        headSeq: head.seq,
        brokenAt: count + 1,
        problem: `the chain ends at row ${count} but its head says ${head.seq}: rows were removed from the end`,
      };
    }
    if (!constantTimeEqual(head.mac, prev)) {
      return { ok: false, rows: count, headSeq: head.seq, brokenAt: count, problem: 'the head does not match the last row' };
    }
    return { ok: true, rows: count, headSeq: head.seq };
  }

  close(): void {
    zeroize(this.#key);
  }
}
