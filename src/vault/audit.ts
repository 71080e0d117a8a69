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
import { asc, eq, gt, type SQL, sql } from 'drizzle-orm';
import { constantTimeEqual, KeyedHasher, utf8, zeroize } from '../crypto/index.js';
import { type Executor, queryRows, type Transaction } from '../db/client.js';
import { auditHead, auditLog, type AuditRow } from '../db/schema.js';

export type AuditAction =
  | 'key.create'
  | 'key.lease'
  | 'key.fence'
  | 'key.unfence'
  | 'key.destroy'
  | 'kek.epoch.create'
  | 'kek.rotate'
  | 'kek.epoch.retire'
  | 'artifact.write'
  | 'artifact.regenerate'
  | 'artifact.erase'
  | 'artifact.key.destroy'
  | 'training.exposure'
  | 'backup.restore';

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

/** The chain's tip: the last row's sequence number and MAC. */
export interface AuditTip {
  readonly seq: number;
  readonly mac: Uint8Array;
}

/**
 * The INSERT of a JSON array of chained rows: one statement with one parameter,
 * whatever the number of rows, so the server reuses its prepared statement.
 */
function insertRows(json: string, where: SQL = sql``): SQL {
  return sql`insert into audit_log (seq, at, actor, action, key_id, subject_hash, epoch, detail, prev_mac, mac)
    select v.seq, v.at, v.actor, v.action, v.key_id, decode(v.subject_hash, 'hex'), v.epoch, v.detail,
           decode(v.prev_mac, 'hex'), decode(v.mac, 'hex')
      from json_to_recordset(${json}::json) as v(seq bigint, at timestamptz, actor text, action text, key_id text,
           subject_hash text, epoch integer, detail text, prev_mac text, mac text)
      ${where}
    returning 1`;
}

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

function rowMac(key: KeyedHasher, prevMac: Uint8Array, row: Parameters<typeof macInput>[0]): Uint8Array {
  const body = macInput(row);
  const input = new Uint8Array(prevMac.length + body.length);
  input.set(prevMac, 0);
  input.set(body, prevMac.length);
  return key.hash(input);
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
  readonly #key: KeyedHasher;

  /** Consumes the MAC key: it is zeroed once keyed. */
  constructor(macKey: Uint8Array) {
    this.#key = new KeyedHasher(macKey);
    zeroize(macKey);
  }

  /** Appends events in order, inside `tx`, after locking the chain's head. */
  async append(tx: Transaction, events: readonly AuditEvent[]): Promise<void> {
    if (events.length === 0) return;
    const [head] = await tx.select().from(auditHead).where(eq(auditHead.id, 1)).for('update');
    if (!head) throw new Error('audit_head row is missing: run migrations');
    const chained = this.chain(events, head);
    await tx.execute(sql`
      with inserted as (${insertRows(chained.json)})
      update audit_head set seq = ${chained.tip.seq}, mac = decode(${bytesToHex(chained.tip.mac)}, 'hex') where id = 1`);
  }

  /**
   * Appends events in ONE statement (no explicit transaction, one round trip), on
   * two conditions checked by the database as the statement runs: the chain's head is
   * still `expected` (compare-and-set; a waiting statement re-checks it after the
   * holder commits), and `guard` — a boolean SQL expression — holds. When either
   * fails nothing is written. `lockFirst` is a locking SELECT run in the same
   * statement (e.g. shared locks on the rows the events are about).
   */
  async appendIfHead(
    exec: Executor,
    events: readonly AuditEvent[],
    expected: AuditTip,
    prelude: { lockFirst: SQL; guard: SQL },
  ): Promise<{ appended: boolean; tip: AuditTip; locked: unknown }> {
    const chained = this.chain(events, expected);
    const [row] = await queryRows<{ appended: boolean; locked: unknown }>(
      exec,
      sql`with locked as (${prelude.lockFirst}),
               head as (
                 update audit_head set seq = ${chained.tip.seq}, mac = decode(${bytesToHex(chained.tip.mac)}, 'hex')
                  where id = 1 and seq = ${expected.seq} and mac = decode(${bytesToHex(expected.mac)}, 'hex') and (${prelude.guard})
                 returning 1),
               inserted as (${insertRows(chained.json, sql`where exists (select 1 from head)`)})
          select exists (select 1 from head) as appended, (select json_agg(locked) from locked) as locked`,
    );
    return { appended: row?.appended === true, tip: chained.tip, locked: row?.locked ?? null };
  }

  /** The chain's head as the database holds it now. */
  async head(exec: Executor): Promise<AuditTip> {
    const [head] = await exec.select().from(auditHead).where(eq(auditHead.id, 1));
    if (!head) throw new Error('audit_head row is missing: run migrations');
    return { seq: head.seq, mac: head.mac };
  }

  /** MACs `events` onto the chain after `from`; the rows as one JSON parameter. */
  chain(events: readonly AuditEvent[], from: AuditTip): { json: string; tip: AuditTip } {
    let seq = from.seq;
    let prev = from.mac;
    const at = new Date();
    const rows: Array<Record<string, unknown>> = [];
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
      rows.push({
        seq,
        at: at.toISOString(),
        actor: base.actor,
        action: base.action,
        key_id: base.keyId,
        subject_hash: base.subjectHash ? bytesToHex(base.subjectHash) : null,
        epoch: base.epoch,
        detail: base.detail,
        prev_mac: bytesToHex(prev),
        mac: bytesToHex(mac),
      });
      prev = mac;
    }
    return { json: JSON.stringify(rows), tip: { seq, mac: prev } };
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
    this.#key.destroy();
  }
}
