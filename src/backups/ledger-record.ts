/** The ledger chain's objects: where a record and the head are stored, their format, their MAC, parsing them back; their retention under Object Lock. */
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import { canonicalJson, type Json } from '../crypto/certificate.js';
import { constantTimeEqual, type KeyedHasher, utf8 } from '../crypto/index.js';
import type { KeyReplacement } from '../db/schema.js';
import { LetheError } from '../errors.js';
import type { Retention } from '../storage/store.js';
import type { BackupContext } from './context.js';

export const CHAIN_FORMAT = 'lethe-ledger-chain/1';
export const HEAD_FORMAT = 'lethe-ledger-head/1';
export const LEDGER_HEAD_KEY = 'ledger/head.json';
export const LEDGER_CHAIN_PREFIX = 'ledger/chain/';

export function chainRecordKey(seq: number): string {
  return `${LEDGER_CHAIN_PREFIX}${String(seq).padStart(16, '0')}.json`;
}

/** One destruction as the ledger chain holds it: the key by id, the subject only by its keyed hash. */
export interface LedgerEntry {
  readonly keyId: string;
  readonly keyKind: string;
  /** The subject's keyed hash (hex), never the subject id. */
  readonly subjectHash: string | null;
  readonly destroyedAt: string;
  readonly reason: string;
  readonly wrappedEpoch: number;
  readonly leasedUntil: string | null;
  /** A re-key's replacement (ciphertext only): what a restore replays to bring the survivors back. */
  readonly replacedBy?: KeyReplacement;
}

export interface ChainRecord {
  readonly format: typeof CHAIN_FORMAT;
  readonly seq: number;
  /** The previous record's MAC (hex); 64 zeros for the genesis. */
  readonly prev: string;
  readonly at: string;
  /** The audit chain's tip when the record was assigned: a database rolled back behind it is visible. */
  readonly auditHead: { readonly seq: number; readonly mac: string } | null;
  readonly destructions: LedgerEntry[];
  /** Manifest versions written since the previous record: a restore refuses an older manifest. */
  readonly manifests: { readonly backupId: string; readonly version: number }[];
  readonly mac: string;
}

export interface ChainHead {
  readonly format: typeof HEAD_FORMAT;
  readonly seq: number;
  /** The MAC of record `seq`. */
  readonly record: string;
  readonly at: string;
  readonly mac: string;
}

export const GENESIS_PREV = '0'.repeat(64);

/** The MAC of a record or head: over its canonical JSON without the `mac` field. */
export function chainMac(mac: KeyedHasher, value: object): string {
  const { mac: _omitted, ...rest } = value as { mac?: unknown };
  return bytesToHex(mac.hash(utf8.encode(canonicalJson(JSON.parse(JSON.stringify(rest)) as Json))));
}

export function macMatches(mac: KeyedHasher, value: { mac?: unknown }): boolean {
  if (typeof value.mac !== 'string' || !/^[0-9a-f]{64}$/.test(value.mac)) return false;
  return constantTimeEqual(hexToBytes(chainMac(mac, value)), hexToBytes(value.mac));
}

export function retention(ctx: Pick<BackupContext, 'ledgerLock'>, lockable: boolean): Retention | undefined {
  const lock = ctx.ledgerLock;
  if (!lock || !lockable) return undefined;
  return { mode: lock.mode, until: new Date(Date.now() + lock.days * 86_400_000) };
}

export function parseJson(bytes: Uint8Array, what: string): Record<string, unknown> {
  try {
    const value = JSON.parse(Buffer.from(bytes).toString('utf8')) as unknown;
    if (value && typeof value === 'object' && !Array.isArray(value)) return value as Record<string, unknown>;
  } catch {
    // named below
  }
  throw new LetheError('conflict', `${what} is not a ledger chain object (unreadable JSON)`);
}

export function parseRecord(bytes: Uint8Array, mac: KeyedHasher, seq: number): ChainRecord {
  const value = parseJson(bytes, `ledger chain record ${seq}`);
  if (value.format !== CHAIN_FORMAT || value.seq !== seq)
    throw new LetheError('conflict', `ledger chain record ${seq} is out of sequence or of another format`);
  if (!macMatches(mac, value)) throw new LetheError('conflict', `ledger chain record ${seq} fails its MAC: it was altered, or written under another root key`);
  return value as unknown as ChainRecord;
}
