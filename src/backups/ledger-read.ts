/** Reading the bucket's ledger chain back: verified from its genesis to the newest head (a restore, verify), or salvaged past damage (a forced restore). */
import type { KeyedHasher } from '../crypto/index.js';
import { isLetheError, LetheError } from '../errors.js';
import type { ObjectStore } from '../storage/store.js';
import {
  HEAD_FORMAT,
  LEDGER_HEAD_KEY,
  LEDGER_CHAIN_PREFIX,
  chainRecordKey,
  type LedgerEntry,
  type ChainRecord,
  type ChainHead,
  GENESIS_PREV,
  macMatches,
  parseJson,
  parseRecord,
} from './ledger-record.js';

/** The newest head with a valid MAC among every stored version of the head; undefined when there is none. */
export async function newestHead(store: ObjectStore, mac: KeyedHasher): Promise<ChainHead | undefined> {
  let best: ChainHead | undefined;
  let forged = 0;
  for (const bytes of await store.versions(LEDGER_HEAD_KEY)) {
    let value: Record<string, unknown>;
    try {
      value = parseJson(bytes, 'the ledger head');
    } catch {
      forged++;
      continue;
    }
    if (value.format !== HEAD_FORMAT || typeof value.seq !== 'number' || !macMatches(mac, value)) {
      forged++;
      continue;
    }
    const head = value as unknown as ChainHead;
    if (!best || head.seq > best.seq) best = head;
  }
  if (!best && forged > 0)
    throw new LetheError('conflict', 'the ledger head (ledger/head.json) fails its MAC: it was altered, or written under another root key');
  return best;
}

export interface VerifiedChain {
  /** False when the bucket holds no chain at all (no genesis, no head). */
  readonly present: boolean;
  /** Every destruction the chain records, by key id (from every stored version of every record with a valid MAC). */
  readonly entries: Map<string, LedgerEntry>;
  /** The newest manifest version the chain records for each backup. */
  readonly manifests: Map<string, number>;
  /** The MACs (hex) of the records on the chain at each sequence number (two after a fork). */
  readonly macs: Map<number, string[]>;
  /** The last record: where a restored database continues the chain. */
  readonly last: { readonly seq: number; readonly mac: string; readonly body: string } | undefined;
  /** The audit chain's tip as the last record saw it. */
  readonly auditHead: { readonly seq: number; readonly mac: string } | null;
  /** What was found and worked around: a record's current version removed or altered (an earlier one used), two writers' records at one sequence number. */
  readonly notes: string[];
}

/** The stored versions of record `seq` whose MAC holds, newest first, and how many did not. */
async function recordVersions(
  store: ObjectStore,
  mac: KeyedHasher,
  seq: number,
): Promise<{ valid: Array<{ record: ChainRecord; body: string }>; stored: number }> {
  const versions = await store.versions(chainRecordKey(seq));
  const valid: Array<{ record: ChainRecord; body: string }> = [];
  for (const bytes of versions) {
    try {
      valid.push({ record: parseRecord(bytes, mac, seq), body: Buffer.from(bytes).toString('utf8') });
    } catch (e) {
      if (!isLetheError(e, 'conflict')) throw e;
    }
  }
  return { valid, stored: versions.length };
}

/**
 * Reads and verifies the bucket's ledger chain from the genesis to the newest head
 * (and any whole records written after it); throws a conflict naming what is wrong.
 *
 * Every stored version of a record is read (a versioned bucket keeps what a delete or
 * an overwrite hides): the chain follows the versions whose MAC holds and whose
 * previous MAC is a record already on it, and every destruction in every such version
 * is honoured — so neither a removed current version nor two writers' records at one
 * sequence number loses one.
 */
export async function readChain(store: ObjectStore, mac: KeyedHasher): Promise<VerifiedChain> {
  const head = await newestHead(store, mac);
  const entries = new Map<string, LedgerEntry>();
  const manifests = new Map<string, number>();
  const macs = new Map<number, string[]>();
  const notes: string[] = [];
  let frontier = new Set<string>([GENESIS_PREV]);
  let last: VerifiedChain['last'];
  let auditHead: VerifiedChain['auditHead'] = null;
  for (let seq = 0; ; seq++) {
    const { valid, stored } = await recordVersions(store, mac, seq);
    if (stored === 0) {
      if (seq === 0) {
        if (head) throw new LetheError('conflict', `the ledger chain's genesis (${chainRecordKey(0)}) is missing while its head names record ${head.seq}`);
        return { present: false, entries, manifests, macs, last: undefined, auditHead: null, notes };
      }
      if (head && seq <= head.seq) {
        throw new LetheError(
          'conflict',
          `ledger chain record ${seq} (${chainRecordKey(seq)}) is missing: the head names record ${head.seq}, so records were removed`,
        );
      }
      break;
    }
    if (valid.length === 0) throw new LetheError('conflict', `ledger chain record ${seq} fails its MAC: it was altered, or written under another root key`);
    const linked = valid.filter((v) => frontier.has(v.record.prev));
    if (linked.length === 0) {
      throw new LetheError(
        'conflict',
        `ledger chain record ${seq} does not follow record ${seq - 1} (its previous MAC differs): a record was replaced or reordered`,
      );
    }
    const current = await store.get(chainRecordKey(seq)).catch(() => undefined);
    const currentMac = current
      ? (() => {
          try {
            return parseRecord(current, mac, seq).mac;
          } catch {
            return undefined;
          }
        })()
      : undefined;
    if (!linked.some((v) => v.record.mac === currentMac))
      notes.push(`ledger chain record ${seq}: its current version was removed or altered; the version lethe wrote was used`);
    const distinct = new Map(linked.map((v) => [v.record.mac, v]));
    if (distinct.size > 1)
      notes.push(
        `ledger chain record ${seq} was written twice, differently (two databases appended to this bucket's chain at once): the destructions of both are honoured`,
      );
    // every valid version's destructions count, linked or not: more destruction is the safe direction
    for (const v of valid) {
      for (const d of v.record.destructions) entries.set(d.keyId, d);
      for (const m of v.record.manifests) manifests.set(m.backupId, Math.max(manifests.get(m.backupId) ?? 0, m.version));
    }
    macs.set(seq, [...distinct.keys()]);
    // the head picks among two writers' records at its own sequence number; otherwise the newest
    const named = head && seq === head.seq ? distinct.get(head.record) : undefined;
    if (head && seq === head.seq && !named) throw new LetheError('conflict', `ledger chain record ${seq} is not the one its head names: it was replaced`);
    const chosen = named ?? [...distinct.values()][0]!;
    if (chosen.record.auditHead) auditHead = chosen.record.auditHead;
    frontier = new Set(distinct.keys());
    last = { seq, mac: chosen.record.mac, body: chosen.body };
  }
  if (!head && last && last.seq > 0) {
    throw new LetheError('conflict', `the ledger chain holds ${last.seq} record(s) but no head (ledger/head.json): the head was removed`);
  }
  return { present: true, entries, manifests, macs, last, auditHead, notes };
}

/**
 * What a forced restore past a damaged chain can still honour: every destruction in
 * every stored version, under `ledger/chain/`, of every record whose MAC holds,
 * whatever is wrong with the chain around them.
 */
export async function salvageChain(store: ObjectStore, mac: KeyedHasher): Promise<Map<string, LedgerEntry>> {
  const entries = new Map<string, LedgerEntry>();
  // records hidden by a delete marker are not listed: every sequence number up to the highest listed is read
  let highest = -1;
  for await (const o of store.list(LEDGER_CHAIN_PREFIX)) {
    const m = /(\d{16})\.json$/.exec(o.key);
    if (m) highest = Math.max(highest, Number(m[1]));
  }
  for (let seq = 0; seq <= highest; seq++) {
    const { valid } = await recordVersions(store, mac, seq);
    for (const v of valid) for (const d of v.record.destructions) entries.set(d.keyId, d);
  }
  return entries;
}
