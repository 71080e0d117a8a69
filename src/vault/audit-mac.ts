/**
 * The audit chain's MACs: a row's canonical encoding and its MAC over the previous
 * row's, the head's encoding, and whether a head's MAC verifies.
 */
import { bytesToHex } from '@noble/hashes/utils.js';
import { constantTimeEqual, type KeyedHasher, utf8 } from '../crypto/index.js';
import type { AuditRow } from '../db/schema.js';
import { LetheError } from '../errors.js';
import type { AuditDetail, AuditTip } from './audit-events.js';

export const GENESIS: Uint8Array = new Uint8Array(32);
export const MAC_BYTES = 32;

const HEAD_DOMAIN = utf8.encode('lethe/v1/audit-head');

/**
 * The canonical encoding the head MAC covers: the domain, a zero byte, seq as 8 bytes
 * big-endian, then the 32-byte MAC of row seq. Fixed lengths: one encoding per pair.
 */
export function headMacInput(tip: AuditTip): Uint8Array {
  if (!Number.isSafeInteger(tip.seq) || tip.seq < 0) throw new LetheError('internal', 'an audit head sequence number must be a non-negative integer');
  if (tip.mac.length !== MAC_BYTES) throw new LetheError('internal', `an audit row MAC is ${MAC_BYTES} bytes`);
  const out = new Uint8Array(HEAD_DOMAIN.length + 1 + 8 + MAC_BYTES);
  out.set(HEAD_DOMAIN, 0);
  new DataView(out.buffer).setBigUint64(HEAD_DOMAIN.length + 1, BigInt(tip.seq), false);
  out.set(tip.mac, HEAD_DOMAIN.length + 1 + 8);
  return out;
}

export function canonicalDetail(detail: AuditDetail | undefined): string {
  const d = detail ?? {};
  return JSON.stringify(
    Object.fromEntries(
      Object.keys(d)
        .sort()
        .map((k) => [k, d[k]]),
    ),
  );
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

export function rowMac(key: KeyedHasher, prevMac: Uint8Array, row: Parameters<typeof macInput>[0]): Uint8Array {
  const body = macInput(row);
  const input = new Uint8Array(prevMac.length + body.length);
  input.set(prevMac, 0);
  input.set(body, prevMac.length);
  return key.hash(input);
}

/**
 * The head's MAC: `anchored` verifies for (seq, mac); `unanchored` is null (a head
 * from before head MACs, until the next append); `invalid` does not verify — the
 * head was moved or forged.
 */
export type AuditHeadState = 'anchored' | 'unanchored' | 'invalid';

export interface HeadRow {
  readonly seq: number;
  readonly mac: Uint8Array;
  readonly headMac: Uint8Array | null;
}

/** The state of a head's MAC under the 'audit-head' subkey. */
export function headStateOf(headKey: KeyedHasher, head: HeadRow): AuditHeadState {
  if (head.headMac === null) return 'unanchored';
  if (head.mac.length !== MAC_BYTES || !Number.isSafeInteger(head.seq) || head.seq < 0) return 'invalid';
  return constantTimeEqual(headKey.hash(headMacInput(head)), head.headMac) ? 'anchored' : 'invalid';
}
