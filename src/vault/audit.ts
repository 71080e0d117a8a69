/**
 * The audit log: append-only and MAC-chained. Each row carries the previous row's MAC
 * and its own, HMAC-SHA256 under a subkey of the root key ('audit-chain') over the
 * previous MAC and the row's canonical encoding. Someone with write access to the
 * database but not the root key cannot edit, delete, insert or reorder rows without
 * `lethe audit verify` noticing.
 *
 * audit_head holds the tip (seq, last row's MAC) and `head_mac`, an HMAC-SHA256 of
 * that pair under a second subkey ('audit-head'). Rows removed from the end are
 * noticed whether the head is left alone (it names a row that is gone) or moved back
 * to the new last row (its MAC no longer verifies: only the root key can make one).
 * What the database alone cannot show is a head restored together with the rows it
 * once ended at — a whole-database rollback to an older state: `verify` catches that
 * only against an anchor, a tip recorded outside the database (`tip`).
 *
 * A head written before head MACs existed (head_mac null) is unanchored: `verify`
 * says so in a warning, and the next append anchors it, writing an
 * `audit.head.anchor` row first. Once the chain holds that row, a null head_mac is
 * a removed MAC, not a legacy one, and both `verify` and `append` refuse it. Appends
 * never extend a head whose MAC does not verify: that would bless a truncation.
 *
 * Rows are appended inside the caller's transaction, so a change and its audit row
 * commit together or not at all. Appends serialize on the audit_head row lock.
 */
import { bytesToHex } from '@noble/hashes/utils.js';
import { and, asc, desc, eq, type SQL, sql } from 'drizzle-orm';
import { constantTimeEqual, KeyedHasher, zeroize } from '../crypto/index.js';
import { type Executor, queryPrepared, queryRows, type Transaction } from '../db/client.js';
import { auditHead, auditLog } from '../db/schema.js';
import { LetheError } from '../errors.js';
import { ANCHOR_ACTION, type AuditAction, type AuditEvent, type AuditTip } from './audit-events.js';
import { type AuditHeadState, canonicalDetail, GENESIS, type HeadRow, headMacInput, headStateOf, MAC_BYTES, rowMac } from './audit-mac.js';
import { type AuditVerifyOptions, type AuditVerifyResult, verifyAuditChain } from './audit-verify.js';

export type { AuditAction, AuditDetail, AuditEvent, AuditTip } from './audit-events.js';
export type { AuditHeadState } from './audit-mac.js';
export type { AuditAnchorResult, AuditVerifyOptions, AuditVerifyResult } from './audit-verify.js';

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

export class AuditLog {
  readonly #key: KeyedHasher;
  readonly #headKey: KeyedHasher;
  /** Where this process believes the chain ends (for `casTurn`); undefined: read it next time. */
  #tip: AuditTip | undefined;
  /** The end of the queue of `casTurn` attempts: one at a time in this process. */
  #turn: Promise<unknown> = Promise.resolve();

  /** Consumes both keys (the 'audit-chain' and 'audit-head' subkeys): they are zeroed once keyed. */
  constructor(chainKey: Uint8Array, headKey: Uint8Array) {
    this.#key = new KeyedHasher(chainKey);
    this.#headKey = new KeyedHasher(headKey);
    zeroize(chainKey, headKey);
  }

  /** The head MAC of a tip, as audit_head.head_mac holds it. */
  #headMac(tip: AuditTip): Uint8Array {
    return this.#headKey.hash(headMacInput(tip));
  }
  #headState(head: HeadRow): AuditHeadState {
    return headStateOf(this.#headKey, head);
  }

  /**
   * Whether `head` may be extended, and whether it must be anchored first. Throws
   * when it must not: its MAC does not verify, rows follow it, or its MAC was removed
   * from a chain that had been anchored. Extending such a head would hide the damage.
   */
  async #extendable(exec: Executor, head: HeadRow & { beyond: boolean }): Promise<{ anchor: boolean }> {
    const state = this.#headState(head);
    if (state === 'invalid') {
      throw new LetheError(
        'unavailable',
        "the audit chain's head does not verify (it was moved or forged): audited changes are refused until `lethe audit verify` is looked into",
        { retryable: false },
      );
    }
    if (head.beyond) {
      throw new LetheError(
        'unavailable',
        `the audit chain continues past its head (row ${head.seq}): audited changes are refused until \`lethe audit verify\` is looked into`,
        { retryable: false },
      );
    }
    if (state === 'anchored') return { anchor: false };
    const anchoredAt = await anchorRow(exec);
    if (anchoredAt !== null) {
      throw new LetheError(
        'unavailable',
        `the audit chain's head has no MAC but the chain was anchored at row ${anchoredAt}: audited changes are refused until \`lethe audit verify\` is looked into`,
        { retryable: false },
      );
    }
    return { anchor: true };
  }

  /** The head row with whether any row follows it, optionally locked. */
  async #readHead(exec: Executor, lock: boolean): Promise<HeadRow & { beyond: boolean }> {
    const query = exec
      .select({
        seq: auditHead.seq,
        mac: auditHead.mac,
        headMac: auditHead.headMac,
        // qualified by hand: drizzle names a lone table's columns unqualified, which the subquery would take for its own.
        // max() of the primary key is one index probe whatever the planner knows; `exists (… l.seq > …)` read the
        // whole log on a store without statistics (the embedded PGlite before its first ANALYZE)
        beyond: sql<boolean>`coalesce((select max(l.seq) from audit_log l) > audit_head.seq, false)`,
      })
      .from(auditHead)
      .where(eq(auditHead.id, 1));
    const [row] = lock ? await query.for('update') : await query;
    if (!row) throw new LetheError('internal', 'audit_head row is missing: run migrations');
    return { ...row, beyond: row.beyond === true };
  }

  /**
   * Appends events in order, inside `tx`, after locking the chain's head and checking
   * its MAC. A head without one (from before head MACs) is anchored: an
   * `audit.head.anchor` row goes first.
   */
  async append(tx: Transaction, events: readonly AuditEvent[]): Promise<void> {
    if (events.length === 0) return;
    const head = await this.#readHead(tx, true);
    const { anchor } = await this.#extendable(tx, head);
    const all = anchor ? [anchorEvent(head.seq), ...events] : events;
    const chained = this.chain(all, head);
    await tx.execute(sql`
      with inserted as (${insertRows(chained.json)})
      update audit_head set seq = ${chained.tip.seq}, mac = decode(${bytesToHex(chained.tip.mac)}, 'hex'),
                            head_mac = decode(${bytesToHex(this.#headMac(chained.tip))}, 'hex')
       where id = 1`);
  }

  /**
   * Appends events in ONE statement (no explicit transaction, one round trip), on
   * two conditions checked by the database as the statement runs: the chain's head is
   * still `expected` (compare-and-set; a waiting statement re-checks it after the
   * holder commits), and `guard` — a boolean SQL expression — holds. When either
   * fails nothing is written. `lockFirst` is a locking SELECT run in the same
   * statement (e.g. shared locks on the rows the events are about).
   *
   * `expected` must come from `tip` (its head MAC checked) or from a previous
   * append's result. The new head MAC is computed here and set by the same
   * statement. An unanchored head (no MAC) or rows after the head fail the
   * compare-and-set: `append` under the head's lock anchors or refuses it.
   *
   * The statement runs prepared under `prelude.name` (its text depends only on the
   * prelude's, so one name per caller): the server plans it once per connection.
   * `prelude.more` adds CTEs after `locked` (the guard may read them), `prelude.after`
   * CTEs after the audit rows' insert (writes that go with the append: `where exists
   * (select 1 from head)`); `prelude.report` is a select list of more columns the
   * statement answers (read whether or not it appended).
   */
  async appendIfHead(
    exec: Executor,
    events: readonly AuditEvent[],
    expected: AuditTip,
    prelude: { name: string; lockFirst: SQL; guard: SQL; more?: SQL; after?: SQL; report?: SQL },
  ): Promise<{ appended: boolean; tip: AuditTip; locked: unknown; row: Record<string, unknown> }> {
    const chained = this.chain(events, expected);
    const [row] = await queryPrepared<{ appended: boolean; locked: unknown } & Record<string, unknown>>(
      exec,
      prelude.name,
      sql`with locked as (${prelude.lockFirst}),${prelude.more ?? sql``}
               head as (
                 update audit_head set seq = ${chained.tip.seq}, mac = decode(${bytesToHex(chained.tip.mac)}, 'hex'),
                                       head_mac = decode(${bytesToHex(this.#headMac(chained.tip))}, 'hex')
                  where id = 1 and seq = ${expected.seq} and mac = decode(${bytesToHex(expected.mac)}, 'hex')
                    and head_mac is not null
                    and coalesce((select max(seq) from audit_log) <= ${expected.seq}, true)
                    and (${prelude.guard})
                 returning 1),
               inserted as (${insertRows(chained.json, sql`where exists (select 1 from head)`)})${prelude.after ? sql`, ${prelude.after}` : sql``}
          select exists (select 1 from head) as appended, (select json_agg(locked) from locked) as locked${prelude.report ? sql`, ${prelude.report}` : sql``}`,
    );
    return { appended: row?.appended === true, tip: chained.tip, locked: row?.locked ?? null, row: row ?? {} };
  }

  /**
   * One compare-and-set attempt of a group commit (leases, key creation), given the tip
   * this process believes the chain ends at — read through `exec` (its head MAC checked,
   * as `tip` does) when it is not known. Attempts run one at a time in this process, so
   * its group commits take turns on the head instead of failing each other's
   * compare-and-set. `attempt` answers its value and the tip the chain ends at after it
   * (the new tip when it appended, the same one when a guard refused); undefined when
   * the head was not where it believed — it is read again for the next attempt. A
   * throw forgets the tip too.
   */
  casTurn<T>(exec: Executor, attempt: (tip: AuditTip) => Promise<{ value: T; tip: AuditTip | undefined }>): Promise<T> {
    const run = async (): Promise<T> => {
      try {
        this.#tip ??= await this.tip(exec);
        const { value, tip } = await attempt(this.#tip);
        this.#tip = tip;
        return value;
      } catch (e) {
        this.#tip = undefined;
        throw e;
      }
    };
    const turn = this.#turn.then(run, run);
    this.#turn = turn.catch(() => {});
    return turn;
  }

  /**
   * The newest row of `action` about `keyId` (by the `(key_id, at)` index), with whether
   * it is intact: its MAC holds over its contents and the MAC it follows, and that MAC
   * is the previous row's. A row edited, forged or moved without the root key is not
   * intact. (A row deleted from the middle of the chain is `verify`'s to find.)
   */
  async latest(
    exec: Executor,
    action: AuditAction,
    keyId: string,
  ): Promise<{ seq: number; at: Date; detail: Record<string, unknown>; intact: boolean } | undefined> {
    const [row] = await exec
      .select()
      .from(auditLog)
      .where(and(eq(auditLog.keyId, keyId), eq(auditLog.action, action)))
      // the chain's order, not the clock's (replicas' clocks differ); a key id has few rows of one action
      .orderBy(desc(auditLog.seq))
      .limit(1);
    if (!row) return undefined;
    let intact = row.prevMac.length === MAC_BYTES && constantTimeEqual(rowMac(this.#key, row.prevMac, row), row.mac);
    if (intact) {
      const [previous] =
        row.seq > 1
          ? await exec
              .select({ mac: auditLog.mac })
              .from(auditLog)
              .where(eq(auditLog.seq, row.seq - 1))
          : [{ mac: GENESIS }];
      intact = previous !== undefined && constantTimeEqual(previous.mac, row.prevMac);
    }
    let detail: Record<string, unknown> = {};
    try {
      const parsed: unknown = JSON.parse(row.detail);
      if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)) detail = parsed as Record<string, unknown>;
    } catch {
      intact = false;
    }
    return { seq: row.seq, at: row.at, detail, intact };
  }

  /** When the chain first recorded `action` (its oldest row, by seq), if ever. */
  async firstAt(exec: Executor, action: AuditAction): Promise<Date | undefined> {
    const [row] = await exec.select({ at: auditLog.at }).from(auditLog).where(eq(auditLog.action, action)).orderBy(asc(auditLog.seq)).limit(1);
    return row?.at;
  }

  /** The chain's head as the database holds it now, unchecked (see `tip`). */
  async head(exec: Executor): Promise<AuditTip> {
    const [head] = await exec.select().from(auditHead).where(eq(auditHead.id, 1));
    if (!head) throw new LetheError('internal', 'audit_head row is missing: run migrations');
    return { seq: head.seq, mac: head.mac };
  }

  /**
   * The chain's current tip — the last row's seq and MAC — read through `exec`, the
   * database or an open transaction (inside one it sees that transaction's appends).
   * Throws instead of answering a tip that `append` would refuse to extend: a head
   * whose MAC does not verify, rows after the head, or a MAC removed from an anchored
   * chain. An unanchored legacy head is answered as it stands. Record a tip outside
   * the database and pass it back as `verify`'s `anchor` to detect a rollback.
   */
  async tip(exec: Executor): Promise<AuditTip> {
    const head = await this.#readHead(exec, false);
    await this.#extendable(exec, head);
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

  /**
   * Walks the whole chain in bounded batches, then checks the head against the last
   * row and its MAC, and — given one — the anchor against the row it names.
   */ async verify(db: Executor, options: AuditVerifyOptions = {}): Promise<AuditVerifyResult> {
    return verifyAuditChain(db, this.#key, this.#headKey, options);
  }

  close(): void {
    this.#key.destroy();
    this.#headKey.destroy();
  }
}

/** The event an append writes first when it anchors a head that had no MAC. */
function anchorEvent(headSeq: number): AuditEvent {
  return { actor: 'lethe', action: ANCHOR_ACTION, detail: { anchoredAfter: headSeq } };
}

/** The first `audit.head.anchor` row, if the chain holds one (read only when the head has no MAC). */
async function anchorRow(exec: Executor): Promise<number | null> {
  const [row] = await queryRows<{ seq: string | number }>(exec, sql`select seq from audit_log where action = ${ANCHOR_ACTION} order by seq limit 1`);
  return row ? Number(row.seq) : null;
}
