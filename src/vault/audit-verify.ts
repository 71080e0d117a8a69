/** `lethe audit verify`: the whole chain walked, its head and an anchor recorded outside the database checked. */
import { asc, eq, gt } from 'drizzle-orm';
import { constantTimeEqual, type KeyedHasher } from '../crypto/index.js';
import type { Executor } from '../db/client.js';
import { auditHead, auditLog } from '../db/schema.js';
import { LetheError } from '../errors.js';
import { ANCHOR_ACTION, type AuditTip } from './audit-events.js';
import { type AuditHeadState, GENESIS, headStateOf, MAC_BYTES, rowMac } from './audit-mac.js';

/** What an anchor — a tip recorded outside the database — says about the chain. */
export interface AuditAnchorResult {
  readonly seq: number;
  /**
   * `matches`: row seq is in the chain with the anchor's MAC. `missing`: the chain
   * ends before it (rows removed, or the database rolled back to an older state).
   * `differs`: row seq has another MAC (another history). `unchecked`: the chain
   * broke before reaching it.
   */
  readonly state: 'matches' | 'missing' | 'differs' | 'unchecked';
}

export interface AuditVerifyOptions {
  /** A tip recorded earlier outside the database (`tip`): the chain must still hold row anchor.seq with anchor.mac. */
  readonly anchor?: AuditTip | undefined;
  /** Rows read per query. */
  readonly batchSize?: number | undefined;
}

export interface AuditVerifyResult {
  readonly ok: boolean;
  readonly rows: number;
  readonly headSeq: number;
  /** The first sequence number at which the chain breaks, when it does. */
  readonly brokenAt?: number;
  /** The first of `problems`, when there is one. */
  readonly problem?: string;
  /** Everything found wrong (empty when ok). */
  readonly problems: readonly string[];
  readonly head: AuditHeadState;
  /** Not failures, but limits of what this verification shows (e.g. an unanchored head). */
  readonly warnings: readonly string[];
  /** Present when verify was given an anchor. */
  readonly anchor?: AuditAnchorResult;
}

/**
 * Walks the whole chain in bounded batches, then checks the head against the last
 * row and its MAC, and — given one — the anchor against the row it names. `key` and
 * `headKey` are the 'audit-chain' and 'audit-head' subkeys.
 */
export async function verifyAuditChain(db: Executor, key: KeyedHasher, headKey: KeyedHasher, options: AuditVerifyOptions = {}): Promise<AuditVerifyResult> {
  const batchSize = options.batchSize ?? 2000;
  const anchor = options.anchor;
  if (anchor && (!Number.isSafeInteger(anchor.seq) || anchor.seq < 0 || anchor.mac.length !== MAC_BYTES)) {
    throw new LetheError('validation_failed', `an audit anchor is a non-negative row number and a ${MAC_BYTES}-byte MAC`);
  }
  const [head] = await db.select().from(auditHead).where(eq(auditHead.id, 1));
  if (!head) {
    const problem = 'audit_head row is missing';
    return { ok: false, rows: 0, headSeq: 0, problem, problems: [problem], head: 'invalid', warnings: [] };
  }
  const headState = headStateOf(headKey, head);
  const problems: string[] = [];
  const warnings: string[] = [];
  let brokenAt: number | undefined;
  const broken = (seq: number, problem: string): void => {
    brokenAt ??= seq;
    problems.push(problem);
  };
  let expectedSeq = 1;
  let prev = GENESIS;
  let count = 0;
  let anchoredAt: number | null = null;
  let anchorState: AuditAnchorResult['state'] | undefined = anchor?.seq === 0 ? (constantTimeEqual(anchor.mac, GENESIS) ? 'matches' : 'differs') : undefined;
  walk: for (;;) {
    const batch = await db
      .select()
      .from(auditLog)
      .where(gt(auditLog.seq, expectedSeq - 1))
      .orderBy(asc(auditLog.seq))
      .limit(batchSize);
    if (batch.length === 0) break;
    for (const row of batch) {
      if (row.seq !== expectedSeq) {
        broken(expectedSeq, `row ${expectedSeq} is missing`);
        break walk;
      }
      if (!constantTimeEqual(row.prevMac, prev)) {
        broken(row.seq, `row ${row.seq} does not follow the previous row`);
        break walk;
      }
      const mac = rowMac(key, prev, row);
      if (!constantTimeEqual(mac, row.mac)) {
        broken(row.seq, `row ${row.seq} was altered`);
        break walk;
      }
      if (anchoredAt === null && row.action === ANCHOR_ACTION) anchoredAt = row.seq;
      if (anchor && row.seq === anchor.seq) anchorState = constantTimeEqual(row.mac, anchor.mac) ? 'matches' : 'differs';
      prev = row.mac;
      expectedSeq += 1;
      count += 1;
    }
  }
  const walked = brokenAt === undefined;

  if (headState === 'invalid') {
    broken(
      Math.min(head.seq, count) + 1,
      `the head (row ${head.seq}) carries a MAC that does not verify: it was moved or forged — rows after row ${Math.min(head.seq, count)} may have been removed`,
    );
  } else if (headState === 'unanchored') {
    if (anchoredAt !== null) {
      broken(
        count + 1,
        `the head (row ${head.seq}) carries no MAC, but the chain was anchored at row ${anchoredAt}: its MAC was removed — rows after row ${Math.min(head.seq, count)} may have been removed`,
      );
    } else {
      warnings.push(
        `the head (row ${head.seq}) carries no MAC yet (a chain from before head MACs): rows removed from the end together with a moved head would not be noticed; the next audited change anchors it`,
      );
    }
  }
  if (walked) {
    if (head.seq > count) {
      broken(count + 1, `the chain ends at row ${count} but its head says ${head.seq}: rows were removed from the end`);
    } else if (head.seq < count) {
      broken(head.seq + 1, `the chain continues to row ${count} past its head at row ${head.seq}: the head was moved back`);
    } else if (!constantTimeEqual(head.mac, prev)) {
      broken(count, 'the head does not match the last row');
    }
  }
  if (anchor) {
    if (anchorState === undefined) anchorState = walked ? 'missing' : 'unchecked';
    if (anchorState === 'missing') {
      broken(
        count + 1,
        `the anchor names row ${anchor.seq} but the chain ends at row ${count}: rows were removed or the database was rolled back to an older state`,
      );
    } else if (anchorState === 'differs') {
      broken(anchor.seq, `row ${anchor.seq} does not carry the anchor's MAC: the chain was replaced by another history`);
    } else if (anchorState === 'unchecked') {
      warnings.push(`the anchor (row ${anchor.seq}) was not checked: the chain breaks before it`);
    }
  }
  return {
    ok: problems.length === 0,
    rows: count,
    headSeq: head.seq,
    ...(brokenAt !== undefined ? { brokenAt } : {}),
    ...(problems.length > 0 ? { problem: problems[0] } : {}),
    problems,
    head: headState,
    warnings,
    ...(anchor ? { anchor: { seq: anchor.seq, state: anchorState! } } : {}),
  };
}
