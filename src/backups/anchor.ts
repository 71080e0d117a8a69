/**
 * Anchoring the ledger chain: someone who can delete from the backup bucket can cut
 * the chain's tail (and put an older head back), and an intact prefix verifies on its
 * own. So the newest point of the chain is witnessed elsewhere, and both a restore and
 * the running service compare the chain with the furthest witness:
 *
 * - a restore refuses a chain that does not reach the newest record any witness saw:
 *   every backup manifest in the bucket (each names the record it was taken at, and the
 *   chain must record the restored backup's own manifest), the erasure certificates and
 *   head files an operator hands it (`--witness`), and the mirror of the head
 *   (`LETHE_LEDGER_WITNESS_DIR`), which the service writes after every head it stores;
 * - the running service checks, before each flush and every minute, that the last record
 *   it stored is still in the bucket, byte for byte, and that the head names it or a
 *   later one; a cut raises the alarm (error log, metric, `/readyz`) and no record is
 *   written over the gap until the missing records are put back (`repairLedger`).
 */
import { sql } from 'drizzle-orm';
import type { KeyedHasher } from '../crypto/index.js';
import { constantTimeEqual, utf8 } from '../crypto/index.js';
import { type Executor, queryRows } from '../db/client.js';
import { isLetheError, LetheError } from '../errors.js';
import type { Logger } from '../observability/logger.js';
import type { ObjectStore } from '../storage/store.js';
import type { AnchorState, BackupContext, Witness } from './context.js';

export type { Witness } from './context.js';
import {
  CHAIN_FORMAT,
  type ChainHead,
  chainMac,
  chainRecordKey,
  HEAD_FORMAT,
  LEDGER_HEAD_KEY,
  macMatches,
  retention,
  type VerifiedChain,
} from './ledger-chain.js';
import { MANIFEST_FORMAT, type Manifest, manifestMacState } from './manifest.js';

const MAC_PATTERN = /^[0-9a-f]{64}$/;

function isPosition(value: unknown): value is { seq: number; mac: string; bucket?: unknown } {
  const v = value as { seq?: unknown; mac?: unknown } | null;
  return !!v && typeof v === 'object' && Number.isSafeInteger(v.seq) && (v.seq as number) >= 0 && typeof v.mac === 'string' && MAC_PATTERN.test(v.mac);
}

/** A stored head, checked against its MAC: the witness it is, or undefined when it is not a valid head. */
export function headWitness(mac: KeyedHasher, value: unknown, source: string): Witness | undefined {
  const head = value as Partial<ChainHead> | null;
  if (!head || typeof head !== 'object' || head.format !== HEAD_FORMAT || typeof head.seq !== 'number' || typeof head.record !== 'string') return undefined;
  if (!macMatches(mac, head)) return undefined;
  return { source, seq: head.seq, mac: head.record };
}

/**
 * The witnesses in a file an operator hands a restore: a saved `ledger/head.json` (its
 * MAC checked), an erasure certificate (its `ledger` field: the chain record its
 * destruction was durable in), or a JSON array of these. Anything else is refused,
 * naming the file: a witness that cannot be read must not be skipped silently.
 */
export function parseWitnessFile(mac: KeyedHasher, name: string, bytes: Uint8Array): Witness[] {
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(bytes).toString('utf8'));
  } catch {
    throw new LetheError('validation_failed', `witness ${name} is not JSON: give a saved ledger head (ledger/head.json) or an erasure certificate`);
  }
  const items = Array.isArray(value) ? value : [value];
  return items.map((item, i) => {
    const where = items.length > 1 ? `${name} [${i}]` : name;
    const v = item as { format?: unknown; payload?: { erasureId?: unknown; ledger?: unknown } } | null;
    if (v && typeof v === 'object' && v.format === HEAD_FORMAT) {
      const head = headWitness(mac, v, `the ledger head in ${where}`);
      if (!head)
        throw new LetheError('validation_failed', `witness ${where} is a ledger head that fails its MAC: it was altered, or written under another root key`);
      return head;
    }
    const ledger = v?.payload?.ledger;
    if (isPosition(ledger)) {
      const erasure = typeof v?.payload?.erasureId === 'string' ? v.payload.erasureId : '?';
      return {
        source: `the certificate of erasure ${erasure} (${where})`,
        seq: ledger.seq,
        mac: ledger.mac,
        ...(typeof ledger.bucket === 'string' ? { bucket: ledger.bucket } : {}),
      };
    }
    throw new LetheError(
      'validation_failed',
      `witness ${where} is neither a ledger head nor an erasure certificate naming its ledger record (certificates signed before they named one cannot witness)`,
    );
  });
}

/** Every backup manifest in the bucket whose MAC holds, as a witness of the record it was taken at. */
export async function manifestWitnesses(store: ObjectStore, mac: KeyedHasher): Promise<Witness[]> {
  const out: Witness[] = [];
  for await (const o of store.list('backups/')) {
    if (!o.key.endsWith('/manifest.json')) continue;
    let manifest: Manifest;
    try {
      manifest = JSON.parse(Buffer.from(await store.get(o.key)).toString('utf8')) as Manifest;
    } catch {
      continue;
    }
    if (!manifest || manifest.format !== MANIFEST_FORMAT || manifestMacState(mac, manifest) !== 'valid' || !isPosition(manifest.ledgerHead)) continue;
    out.push({ source: `the manifest of backup ${manifest.backupId}`, seq: manifest.ledgerHead.seq, mac: manifest.ledgerHead.mac });
  }
  return out;
}

/** The witnesses the chain does not reach (or holds with another MAC at their record), each with why. */
export function unreachedWitnesses(chain: VerifiedChain, bucket: string, witnesses: readonly Witness[]): Array<{ witness: Witness; problem: string }> {
  const out: Array<{ witness: Witness; problem: string }> = [];
  const lastSeq = chain.last?.seq ?? -1;
  for (const w of witnesses) {
    if (w.bucket !== undefined && w.bucket !== bucket) continue;
    const held = chain.macs.get(w.seq);
    if (held?.includes(w.mac)) continue;
    out.push({
      witness: w,
      problem: held
        ? `${w.source} saw record ${w.seq} with another MAC than the chain holds there (the chain was replaced)`
        : `${w.source} saw record ${w.seq}, and the chain ends at record ${lastSeq} (its tail was cut)`,
    });
  }
  return out.sort((a, b) => b.witness.seq - a.witness.seq);
}

/**
 * Why a restore of `backupId` must not trust `chain` (a verified, intact prefix) as the
 * whole chain, or undefined: the chain does not record the backup's own manifest (it
 * records every manifest right after its backup), or a witness — every manifest in the
 * bucket, the mirrored head, those handed to the restore — saw further. Witnesses of
 * another bucket are named in `warnings` and not compared.
 */
export async function unanchored(
  ctx: Pick<BackupContext, 'backup' | 'ledgerMac' | 'anchor'>,
  restore: { backupId: string; manifest: Manifest; chain: VerifiedChain; witnesses: readonly Witness[]; warnings: string[] },
): Promise<string | undefined> {
  const { backupId, manifest, chain } = restore;
  if (manifest.ledgerHead && !chain.manifests.has(backupId)) {
    return `the ledger chain in the backup bucket does not record backup ${backupId}'s own manifest, which it records right after every backup: its tail was cut`;
  }
  const mirrored = await ctx.anchor.mirrored();
  const witnesses = [...restore.witnesses, ...(mirrored ? [mirrored] : []), ...(await manifestWitnesses(ctx.backup, ctx.ledgerMac))];
  for (const w of witnesses) {
    if (w.bucket !== undefined && w.bucket !== ctx.backup.bucket)
      restore.warnings.push(`${w.source} names the backup bucket ${w.bucket}, not ${ctx.backup.bucket}: not compared with this chain`);
  }
  const unreached = unreachedWitnesses(chain, ctx.backup.bucket, witnesses);
  return unreached.length > 0 ? `the ledger chain in the backup bucket does not reach what a witness saw: ${unreached[0]!.problem}` : undefined;
}

/** What a restore forced past an unanchored chain brings back, naming the keys (the first ten). */
export function restoredLiveConsequence(liveKeyIds: readonly string[]): string {
  const named = liveKeyIds.length > 10 ? `${liveKeyIds.slice(0, 10).join(', ')} and ${liveKeyIds.length - 10} more` : liveKeyIds.join(', ');
  return `keys destroyed after the chain's last record ARE RESTORED AS LIVE; the subject keys this restore brings back live, any of which may have been destroyed since: ${named || 'none'}; erase them again.`;
}

/** The object's bytes, or undefined when the store holds none. */
function getIfAny(store: ObjectStore, key: string): Promise<Uint8Array | undefined> {
  return store.get(key).catch((e: unknown) => {
    if (isLetheError(e, 'not_found')) return undefined;
    throw e;
  });
}

/** How the bucket's copy of record `seq`, which this database stored as `body`, differs from it: gone, replaced, or not at all. */
async function recordDiffers(store: ObjectStore, seq: number, body: string): Promise<'gone' | 'replaced' | undefined> {
  const stored = await getIfAny(store, chainRecordKey(seq));
  if (!stored) return 'gone';
  return constantTimeEqual(stored, utf8.encode(body)) ? undefined : 'replaced';
}

/** Records the periodic check reads whole each time, besides the last one and the head. */
const SWEEP_RECORDS = 16;

function parseHead(mac: KeyedHasher, bytes: Uint8Array, source: string): Witness | undefined {
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(bytes).toString('utf8'));
  } catch {
    return undefined;
  }
  return headWitness(mac, value, source);
}

/**
 * The running service's side: checks that the chain still holds what this database
 * stored (before each flush, and every `LETHE_LEDGER_CHECK_SECONDS`), raises the alarm
 * on a cut, and mirrors each head it stores to the witness folder.
 */
export class LedgerAnchor {
  #state: AnchorState = { state: 'unchecked', checkedAt: null };
  /** The last record the sweep read whole (-1: start over). */
  #sweptTo = -1;
  /** A record the sweep found missing or replaced, until it is back. */
  #gap: { seq: number; problem: string } | undefined;

  constructor(
    private readonly deps: {
      readonly db: Executor;
      readonly backup: ObjectStore;
      readonly ledgerMac: KeyedHasher;
      /** The witness folder's store for this bucket (LETHE_LEDGER_WITNESS_DIR); undefined: none. */
      readonly witness: ObjectStore | undefined;
      readonly logger: Logger;
      /** Told 1 while the chain is cut, 0 once it is anchored again (a gauge). */
      readonly onState?: (cut: boolean) => void;
    },
  ) {}

  get state(): AnchorState {
    return this.#state;
  }

  /**
   * Compares the bucket's chain with the last record this database stored there: that
   * record must still be in the bucket, byte for byte, and the head must name it or a
   * later one. Records the outcome (the alarm on a cut) and answers the problem, or
   * undefined when the chain is anchored.
   */
  async check(db: Executor = this.deps.db, options: { sweep?: boolean } = {}): Promise<string | undefined> {
    const problem = (await this.#findCut(db)) ?? (options.sweep ? await this.#sweep(db) : this.#gap?.problem);
    const was = this.#state.state;
    this.#state = problem ? { state: 'cut', problem, checkedAt: new Date() } : { state: 'ok', checkedAt: new Date() };
    if (problem && was !== 'cut') {
      this.deps.logger.error(
        { problem },
        `THE LEDGER CHAIN IN THE BACKUP BUCKET WAS CUT: ${problem}. Someone with the bucket's credential removed destruction records; a restore could bring destroyed keys back. No record is written over the gap until it is repaired (lethe backup repair-ledger).`,
      );
    } else if (!problem && was === 'cut') {
      this.deps.logger.warn('the ledger chain in the backup bucket holds every record this database stored again');
    }
    this.deps.onState?.(problem !== undefined);
    return problem;
  }

  /**
   * The periodic check also reads, each time, the next SWEEP_RECORDS records this
   * database stored (round robin): a record removed from the middle, the last one and
   * the head kept, is found within (records ÷ SWEEP_RECORDS) checks. A gap found is
   * checked first every time after, until it is repaired.
   */
  async #sweep(db: Executor): Promise<string | undefined> {
    const { backup } = this.deps;
    const gap = this.#gap;
    const rows = await queryRows<{ seq: number | string; body: string }>(
      db,
      gap
        ? sql`select seq, body from ledger_chain where bucket = ${backup.bucket} and stored_at is not null and seq = ${gap.seq}`
        : sql`select seq, body from ledger_chain where bucket = ${backup.bucket} and stored_at is not null and seq > ${this.#sweptTo}
               order by seq limit ${SWEEP_RECORDS}`,
    );
    if (rows.length === 0) {
      this.#gap = undefined;
      this.#sweptTo = -1;
      return undefined;
    }
    for (const r of rows) {
      const seq = Number(r.seq);
      const key = chainRecordKey(seq);
      const differs = await recordDiffers(backup, seq, r.body);
      if (differs) {
        this.#gap = {
          seq,
          problem: `ledger chain record ${seq} (${key}), which this database stored, is ${differs} in the backup bucket: a record in the middle of the chain`,
        };
        return this.#gap.problem;
      }
      this.#sweptTo = seq;
    }
    this.#gap = undefined;
    return undefined;
  }

  async #findCut(db: Executor): Promise<string | undefined> {
    const { backup } = this.deps;
    const [last] = await queryRows<{ seq: number | string; body: string }>(
      db,
      sql`select seq, body from ledger_chain where bucket = ${backup.bucket} and stored_at is not null order by seq desc limit 1`,
    );
    if (!last) return undefined;
    const seq = Number(last.seq);
    const key = chainRecordKey(seq);
    const differs = await recordDiffers(backup, seq, last.body);
    if (differs === 'gone') return `ledger chain record ${seq} (${key}), which this database stored, is gone from the backup bucket`;
    if (differs) return `ledger chain record ${seq} (${key}), which this database stored, was replaced in the backup bucket`;
    const headBytes = await getIfAny(backup, LEDGER_HEAD_KEY);
    if (!headBytes) return `the ledger head (${LEDGER_HEAD_KEY}) is gone from the backup bucket, which holds record ${seq}`;
    // noise over the head is replaced by the next head written (a restore reads every valid version)
    const head = parseHead(this.deps.ledgerMac, headBytes, 'the head');
    if (head && head.seq < seq) return `the ledger head names record ${head.seq}, older than record ${seq} this database stored: an older head was put back`;
    return undefined;
  }

  /** Writes a head just stored to the witness folder too (a failure is logged: the chain itself is stored). */
  async mirror(head: Uint8Array): Promise<void> {
    const { witness, logger } = this.deps;
    if (!witness) return;
    try {
      await witness.put(LEDGER_HEAD_KEY, head);
    } catch (e) {
      logger.error(
        { err: e instanceof Error ? e.message : String(e) },
        'the ledger head could not be mirrored to LETHE_LEDGER_WITNESS_DIR: the next head written tries again',
      );
    }
  }

  /** The head mirrored to the witness folder, as a witness; undefined when none is configured or written yet. */
  async mirrored(): Promise<Witness | undefined> {
    const { witness, ledgerMac } = this.deps;
    if (!witness) return undefined;
    const bytes = await getIfAny(witness, LEDGER_HEAD_KEY);
    if (!bytes) return undefined;
    const head = parseHead(ledgerMac, bytes, 'the ledger head mirrored to the witness folder (LETHE_LEDGER_WITNESS_DIR)');
    if (!head)
      throw new LetheError(
        'conflict',
        'the ledger head mirrored to the witness folder (LETHE_LEDGER_WITNESS_DIR) fails its MAC: it was altered, or written under another root key',
      );
    return head;
  }
}

/** Whether `bytes` is a ledger chain record for `seq` whose MAC holds. */
function isSealedRecord(mac: KeyedHasher, bytes: Uint8Array, seq: number): boolean {
  try {
    const value = JSON.parse(Buffer.from(bytes).toString('utf8')) as { format?: unknown; seq?: unknown; mac?: unknown } | null;
    return !!value && typeof value === 'object' && value.format === CHAIN_FORMAT && value.seq === seq && macMatches(mac, value);
  } catch {
    return false;
  }
}

/**
 * Puts back, byte for byte, every record this database stored that the bucket no
 * longer holds (create-if-absent; a record there is replaced only when it is not one
 * any vault sealed: an overwrite), then a head naming
 * the last when the bucket's head is older. Answers the records put back.
 */
export async function repairCut(ctx: BackupContext): Promise<number[]> {
  const bucket = ctx.backup.bucket;
  const rows = await queryRows<{ seq: number | string; body: string; mac: Uint8Array }>(
    ctx.db,
    sql`select seq, body, mac from ledger_chain where bucket = ${bucket} and stored_at is not null order by seq`,
  );
  const retain = retention(ctx, await ctx.backup.lockable());
  const putBack: number[] = [];
  for (const r of rows) {
    const key = chainRecordKey(Number(r.seq));
    const body = utf8.encode(r.body);
    if (await ctx.backup.putIfAbsent(key, body, retain ? { retain } : {})) {
      putBack.push(Number(r.seq));
      continue;
    }
    // there, but overwritten with something no vault sealed (a plain put over it): this database's record
    // becomes the current version again (a versioned bucket keeps the overwrite too). A sealed record
    // that differs is another database's, and is left alone: the check names the divergence.
    const current = await getIfAny(ctx.backup, key);
    if (current && !constantTimeEqual(current, body) && !isSealedRecord(ctx.ledgerMac, current, Number(r.seq))) {
      await ctx.backup.put(key, body, retain ? { retain } : {});
      putBack.push(Number(r.seq));
    }
  }
  const last = rows.at(-1);
  if (last) {
    const current = await getIfAny(ctx.backup, LEDGER_HEAD_KEY);
    const head = current ? parseHead(ctx.ledgerMac, current, 'the head') : undefined;
    if (!head || head.seq < Number(last.seq)) {
      const unsealed = {
        format: HEAD_FORMAT as typeof HEAD_FORMAT,
        seq: Number(last.seq),
        record: Buffer.from(last.mac).toString('hex'),
        at: new Date().toISOString(),
      };
      const bytes = utf8.encode(JSON.stringify({ ...unsealed, mac: chainMac(ctx.ledgerMac, unsealed) }));
      await ctx.backup.put(LEDGER_HEAD_KEY, bytes, retain ? { retain } : {});
      await ctx.anchor.mirror(bytes);
    }
  }
  await ctx.anchor.check(ctx.db, { sweep: true });
  return putBack;
}
