/**
 * The indexer: makes writer-registered entries searchable off the acknowledgement path.
 *
 * A registration (registration.ts) commits each entry's index row and a row in the
 * durable queue (`index_queue`) in one statement and answers; it never fetches the
 * segment. Workers in every replica drain the queue:
 *
 *   claim    up to BATCH rows, oldest first, with FOR UPDATE SKIP LOCKED, for
 *            CLAIM_SECONDS (a token of its own in `claimed_by`); a claim that lapses —
 *            its worker died or hung — is taken again by any replica;
 *   open     each segment fetched once, each frame opened under the key its row names
 *            (the record key unwrapped under the subject DEK) and held to the entry
 *            schema (payload.ts): a frame that does not open, or whose payload the
 *            schema refuses, is refused — quarantined (`log_entries.refused`), counted
 *            (`lethe_log_entries_refused_total`), logged by entry id and reason, never
 *            with plaintext — and never indexed nor served;
 *   embed    one embedder call per EMBED_CHUNK entries, keyed shingles, the record sealed
 *            under the entry's subject key (src/vectors);
 *   commit   one transaction: the claimed queue rows deleted — only while this claim
 *            still holds them and the entry is still under the key it was sealed with,
 *            that key taking a shared lock (a destruction is ordered against it) — and
 *            the sealed embeddings of exactly those rows inserted, with the replicas'
 *            notification; refused entries marked; what is left of the claim (the key
 *            moved by a re-key meanwhile) released to be taken again;
 *   publish  the committed records into this replica's indexes.
 *
 * Idempotent: a batch that dies anywhere before its commit leaves its rows queued (a
 * failed batch releases its claim — at once twice, then after a doubling backoff —, a dead worker's claim lapses) and the next claim
 * does the work again; the commit inserts an embedding only with the deletion of the
 * queue row it came from, so no entry is embedded into the store twice. A key
 * destroyed while its entries are queued takes their queue rows in its destruction
 * transaction (`dropQueuedUnder`, registered with KeyDestructions.within): a worker
 * holding them finds nothing to delete and inserts nothing.
 */
import { hostname } from 'node:os';
import { sql } from 'drizzle-orm';
import { randomBytes, toBase64Url, zeroize } from '../crypto/index.js';
import { queryRows, type Transaction } from '../db/client.js';
import { isLetheError } from '../errors.js';
import { idArrayLiteral } from '../ids.js';
import { describeError } from '../observability/logger.js';
import { insertEmbeddingsCte, notifyEmbeddings } from '../vectors/embeddings.js';
import type { Sealed } from '../vectors/service.js';
import type { LogDeps } from './deps.js';
import { openEntry } from './frame.js';
import { FramePayloadSchema, payloadProblem } from './payload.js';
import { frameAt } from './segment.js';

/** Queue rows one claim takes (a writer's segment holds up to ~255 entries of 512 B). */
export const BATCH = 256;
/** Texts per embedder call. */
export const EMBED_CHUNK = 64;
/**
 * Entries opened, shingled and sealed, or published, between two turns of the event
 * loop (a few milliseconds of work): the indexer shares the replica's one thread with
 * the requests it serves.
 */
const YIELD_EVERY = 8;
/** A turn of the event loop that took longer than this ran other work: requests are waiting. */
const BUSY_TURN_MS = 2;

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * Gives the event loop back between chunks of indexing work. A turn that ran other
 * callbacks for longer than BUSY_TURN_MS means requests are being served: the indexer
 * then also pauses as long as its last chunk took, so it takes at most about half of
 * a busy replica's thread (an idle one it uses whole). A backlog of registrations
 * then waits in the queue (the search lag grows) instead of every request waiting
 * behind the indexer.
 */
function pacer(): () => Promise<void> {
  let since = performance.now();
  return async () => {
    const worked = performance.now() - since;
    const before = performance.now();
    await turn();
    if (performance.now() - before > BUSY_TURN_MS) await sleep(Math.min(worked, 50));
    since = performance.now();
  };
}
/** How long a claim holds its rows; a worker that has not committed by then loses them to the next claim. */
export const CLAIM_SECONDS = 30;
/** Failed attempts of a batch retried at once, before the backoff. */
export const FREE_RETRIES = 2;
/** The longest a batch that failed waits before it is claimed again. */
export const MAX_BACKOFF_SECONDS = 300;
/** How often an idle worker looks at the queue (a registration on this replica wakes it at once). */
export const POLL_MS = 500;
/** Batches a replica works on at once: the store and the database answer one while the other is sealed. */
export const CONCURRENCY = 2;
/** Segments fetched at once. */
const FETCH_CONCURRENCY = 4;

/** Why the indexer refused an entry: the class and the top-level field, never anything of the content. */
export type Refusal = 'frame_unopened' | 'segment_missing' | `payload_refused:${string}`;

export interface IndexerOptions {
  readonly batchSize?: number;
  /** Batches one replica works on at once (default CONCURRENCY): one fetches and seals while another commits. */
  readonly concurrency?: number;
  readonly claimSeconds?: number;
  readonly pollMs?: number;
  /** Tests: runs after a batch is sealed, before its commit (throw: the batch fails). */
  readonly afterSeal?: () => void | Promise<void>;
  /** Tests: runs inside the commit's transaction after the embeddings' insert (throw: it rolls back). */
  readonly beforeCommit?: () => void | Promise<void>;
  /** LETHE_FAILPOINT (tests): `indexer-sealed`, `indexer-inserted` kill the process there. */
  readonly failpoint?: (name: string) => void;
}

/** What the indexer works with: the log's own dependencies (deps.ts). */
export type IndexerDeps = LogDeps;

interface Claimed {
  entry_id: string;
  key_id: string;
  seq: number;
  segment: string;
  frame_offset: number;
  frame_length: number;
  wrapped_key: Uint8Array | null;
}

export interface QueueStatus {
  /** Entries waiting (claimed or not). */
  readonly queued: number;
  /** Age of the oldest, in seconds; 0 when none waits. */
  readonly lagSeconds: number;
}

/** The outcome of one batch. */
export interface BatchResult {
  readonly claimed: number;
  readonly indexed: number;
  readonly refused: number;
  /** Left to be claimed again (the key moved meanwhile, the store did not answer). */
  readonly released: number;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export class Indexer {
  readonly #d: IndexerDeps;
  readonly #o: Required<Pick<IndexerOptions, 'batchSize' | 'claimSeconds' | 'pollMs' | 'concurrency'>> & IndexerOptions;
  readonly #replica = `${hostname()}:${process.pid}:${toBase64Url(randomBytes(6))}`;
  #claims = 0;
  #running = false;
  #loop: Promise<void> | undefined;
  readonly #wakers = new Set<() => void>();
  #woken = false;
  #lastPassAt: Date | undefined;

  constructor(deps: IndexerDeps, options: IndexerOptions = {}) {
    this.#d = deps;
    this.#o = { batchSize: BATCH, claimSeconds: CLAIM_SECONDS, pollMs: POLL_MS, concurrency: CONCURRENCY, ...options };
  }

  /** Whether this replica's worker runs, and when it last found the queue empty. */
  status(): { running: boolean; lastPassAt: Date | undefined } {
    return { running: this.#running, lastPassAt: this.#lastPassAt };
  }

  /** Starts draining the queue in the background. */
  start(): void {
    if (this.#running) return;
    this.#running = true;
    this.#loop = Promise.all(Array.from({ length: this.#o.concurrency }, () => this.#run())).then(() => undefined);
  }

  async stop(): Promise<void> {
    this.#running = false;
    this.poke();
    await this.#loop;
    this.#loop = undefined;
  }

  /** Work arrived (a registration on this replica committed): the worker looks now. */
  poke(): void {
    this.#woken = true;
    for (const wake of this.#wakers) wake();
  }

  async #run(): Promise<void> {
    let failures = 0;
    while (this.#running) {
      let claimed = 0;
      let progressed = false;
      try {
        const batch = await this.runOnce();
        claimed = batch.claimed;
        progressed = batch.indexed + batch.refused > 0 || batch.released < batch.claimed;
        failures = 0;
      } catch (e) {
        failures++;
        this.#d.logger?.warn({ err: describeError(e), failures }, 'the search indexer could not index a batch; its entries stay queued and are claimed again');
      }
      if (!this.#running) break;
      if (progressed) continue;
      if (claimed === 0) this.#lastPassAt = new Date();
      await this.#idle(failures > 0 ? Math.min(5000, 100 * 2 ** failures) : this.#o.pollMs);
    }
  }

  /** Waits `ms`, or less when poked. */
  async #idle(ms: number): Promise<void> {
    if (this.#woken) {
      this.#woken = false;
      return;
    }
    let wake: () => void = () => {};
    await new Promise<void>((resolve) => {
      const timer = setTimeout(() => wake(), ms);
      wake = () => {
        clearTimeout(timer);
        resolve();
      };
      this.#wakers.add(wake);
    });
    this.#wakers.delete(wake);
    this.#woken = false;
  }

  /** Entries waiting now, and the age of the oldest. */
  async queueStatus(): Promise<QueueStatus> {
    const [row] = await queryRows<{ n: string | number; lag: string | number | null }>(
      this.#d.db,
      sql`select count(*) as n, extract(epoch from (now() - min(enqueued_at)))::float8 as lag from index_queue`,
    );
    return { queued: Number(row?.n ?? 0), lagSeconds: Math.max(0, Number(row?.lag ?? 0)) };
  }

  /** The queue's high-water mark: the greatest `seq` queued now (0 when empty). */
  async mark(): Promise<number> {
    const [row] = await queryRows<{ m: string | number | null }>(this.#d.db, sql`select max(seq) as m from index_queue`);
    return Number(row?.m ?? 0);
  }

  /** Whether the entry waits in the queue (registered, not checked by the indexer yet). */
  async isQueued(entryId: string): Promise<boolean> {
    const rows = await queryRows<{ one: number }>(this.#d.db, sql`select 1 as one from index_queue where entry_id = ${entryId}`);
    return rows.length > 0;
  }

  /** Entries still queued at or below `mark` (of the subject, when given). */
  async pendingUpTo(mark: number, subjectHash?: Uint8Array): Promise<number> {
    const [row] = await queryRows<{ n: string | number }>(
      this.#d.db,
      subjectHash
        ? sql`select count(*) as n from index_queue q join log_entries e on e.entry_id = q.entry_id
               where q.seq <= ${mark} and e.subject_hash = ${subjectHash}`
        : sql`select count(*) as n from index_queue where seq <= ${mark}`,
    );
    return Number(row?.n ?? 0);
  }

  /**
   * Waits until every entry queued up to `mark` (default: now; of the subject, when
   * given) is indexed or refused, at most `timeoutMs`; answers how many are left (0:
   * drained). `drain`: without a running worker here (a vault that does not listen),
   * index them itself; otherwise it only waits for the workers of the replicas.
   */
  async waitIndexed(options: { timeoutMs?: number; subjectHash?: Uint8Array; mark?: number; drain?: boolean } = {}): Promise<number> {
    const mark = options.mark ?? (await this.mark());
    const deadline = Date.now() + (options.timeoutMs ?? 10_000);
    for (;;) {
      const left = mark === 0 ? 0 : await this.pendingUpTo(mark, options.subjectHash);
      if (left === 0 || Date.now() >= deadline) return left;
      if (this.#running || !options.drain) {
        this.poke();
        await sleep(20);
      } else if ((await this.runOnce()).claimed === 0) await sleep(20);
    }
  }

  /** Claims one batch and indexes it (see the module comment). */
  async runOnce(): Promise<BatchResult> {
    const claim = `${this.#replica}#${++this.#claims}`;
    const rows = await queryRows<Claimed>(
      this.#d.db,
      sql`with c as (
            select entry_id from index_queue
             where claimed_until is null or claimed_until < now()
             order by seq limit ${this.#o.batchSize}
             for update skip locked)
          update index_queue q
             set claimed_by = ${claim}, claimed_until = now() + make_interval(secs => ${this.#o.claimSeconds}), attempts = q.attempts + 1
            from c, log_entries e
           where q.entry_id = c.entry_id and e.entry_id = q.entry_id
       returning q.entry_id, e.key_id, e.seq, e.segment, e.frame_offset, e.frame_length, e.wrapped_key`,
    );
    if (rows.length === 0) return { claimed: 0, indexed: 0, refused: 0, released: 0 };
    try {
      return await this.#index(claim, rows);
    } catch (e) {
      // give the rows back (a worker that dies instead leaves them to its claim's lapse): at once for the first
      // FREE_RETRIES attempts, then after a backoff that doubles with each (8 s … 5 min), so that a batch that keeps
      // failing does not hold up the entries queued after it
      await this.#d.db
        .execute(
          sql`update index_queue set claimed_by = null,
                     claimed_until = case when attempts <= ${FREE_RETRIES} then null
                                          else now() + make_interval(secs => least(${MAX_BACKOFF_SECONDS}, power(2, least(attempts, 16)))::float8) end
               where claimed_by = ${claim}`,
        )
        .catch(() => undefined);
      throw e;
    }
  }

  async #index(claim: string, rows: readonly Claimed[]): Promise<BatchResult> {
    const refused = new Map<string, { keyId: string; reason: Refusal }>();
    const segments = await this.#fetchSegments([...new Set(rows.map((r) => r.segment))]);
    for (const r of rows) if (segments.get(r.segment) === 'missing') refused.set(r.entry_id, { keyId: r.key_id, reason: 'segment_missing' });
    const deks = await this.#d.keys.deksFor([...new Set(rows.map((r) => r.key_id))]);
    const sealed: Sealed[] = [];
    const pace = pacer();
    try {
      const records: Array<{ recordId: string; recordType: 'entry'; text: string; keyId: string; key: Uint8Array }> = [];
      for (const [i, r] of rows.entries()) {
        if (i > 0 && i % YIELD_EVERY === 0) await pace();
        const bytes = segments.get(r.segment);
        const dek = deks.get(r.key_id);
        // destroyed meanwhile (its queue row went with it), or a store that did not answer: left to the release below
        if (!dek || bytes === undefined || bytes === 'missing') continue;
        let payload: unknown;
        try {
          const wrapped = r.wrapped_key === null ? null : new Uint8Array(r.wrapped_key.buffer, r.wrapped_key.byteOffset, r.wrapped_key.byteLength);
          payload = openEntry(dek, { keyId: r.key_id, entryId: r.entry_id, seq: Number(r.seq) }, wrapped, frameAt(bytes, { offset: Number(r.frame_offset), length: Number(r.frame_length) }));
        } catch {
          refused.set(r.entry_id, { keyId: r.key_id, reason: 'frame_unopened' });
          continue;
        }
        // what GET /v1/entries answers must fit the published Entry schema (the service's own appends are held to the same)
        const problem = payloadProblem(FramePayloadSchema, payload);
        if (problem) {
          refused.set(r.entry_id, { keyId: r.key_id, reason: `payload_refused:${topField(problem)}` });
          continue;
        }
        records.push({ recordId: r.entry_id, recordType: 'entry', text: (payload as { text: string }).text, keyId: r.key_id, key: dek });
      }
      for (let i = 0; i < records.length; i += EMBED_CHUNK) {
        const chunk = records.slice(i, i + EMBED_CHUNK);
        await pace();
        const vectors = await this.#d.vectors.embedder.embed(chunk.map((r) => r.text));
        for (let j = 0; j < chunk.length; j += YIELD_EVERY) {
          await pace();
          sealed.push(...(await this.#d.vectors.sealEach(chunk.slice(j, j + YIELD_EVERY), vectors.slice(j, j + YIELD_EVERY))));
        }
      }
    } finally {
      for (const dek of deks.values()) zeroize(dek);
    }
    await this.#o.afterSeal?.();
    this.#o.failpoint?.('indexer-sealed');
    const started = performance.now();
    // this replica publishes what it commits: the records' own notifications, which may come back first, load nothing again
    const { inserted, marked, released } = await this.#d.vectors.publishingUnder([...new Set(sealed.map((r) => r.keyId))], async () => {
      const committed = await this.#d.db.transaction((tx) => this.#commit(tx, claim, sealed, refused));
      const published = sealed.filter((r) => committed.inserted.has(r.recordId));
      for (let i = 0; i < published.length; i += YIELD_EVERY) {
        if (i > 0) await pace();
        const part = published.slice(i, i + YIELD_EVERY);
        this.#d.vectors.publish(part);
        const since = (performance.now() - started) / 1000;
        for (const r of part) this.#d.metrics?.searchIndexDelay.observe(committed.inserted.get(r.recordId)! + since);
      }
      return committed;
    });
    for (const [entryId, { reason }] of refused) {
      if (!marked.has(entryId)) continue;
      this.#d.metrics?.entriesRefused.inc({ reason: reason.startsWith('payload_refused') ? 'payload_refused' : reason });
      this.#d.logger?.warn({ entryId, reason }, 'a writer-registered entry was refused and quarantined: it is neither served nor searchable');
    }
    return { claimed: rows.length, indexed: inserted.size, refused: marked.size, released };
  }

  /** Each segment's bytes; `missing` when the store has no such object; absent when the store did not answer. */
  async #fetchSegments(keys: readonly string[]): Promise<Map<string, Uint8Array | 'missing'>> {
    const out = new Map<string, Uint8Array | 'missing'>();
    let next = 0;
    let failure: unknown;
    const worker = async () => {
      while (next < keys.length) {
        const key = keys[next++]!;
        try {
          out.set(key, await this.#d.objects.get(key));
        } catch (e) {
          if (isLetheError(e, 'not_found')) out.set(key, 'missing');
          else failure ??= e;
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(FETCH_CONCURRENCY, keys.length) }, worker));
    if (out.size === 0 && failure !== undefined) throw failure;
    return out;
  }

  /**
   * The batch's commit, in `tx`: queue rows of this claim deleted and their embeddings
   * inserted together (only for entries still under the key they were sealed with, that
   * key still live), refused entries marked, the rest of the claim released.
   * Answers the inserted records (with the seconds each waited since it was queued),
   * the entries marked refused, and how many rows were released.
   */
  async #commit(
    tx: Transaction,
    claim: string,
    sealed: readonly Sealed[],
    refused: ReadonlyMap<string, { keyId: string; reason: Refusal }>,
  ): Promise<{ inserted: Map<string, number>; marked: Set<string>; released: number }> {
    const inserted = new Map<string, number>();
    if (sealed.length > 0) {
      const rows = await queryRows<{ record_id: string; key_id: string; waited: number | string }>(
        tx,
        sql`with v as (
              select * from json_to_recordset(${JSON.stringify(sealed.map((r) => ({ record_id: r.recordId, key_id: r.keyId })))}::json)
                as v(record_id text, key_id text)),
            ok as (
              select v.record_id from v
                join log_entries e on e.entry_id = v.record_id and e.key_id = v.key_id
                join subject_keys k on k.key_id = v.key_id
               for key share of k),
            done as (
              delete from index_queue q using ok
               where q.entry_id = ok.record_id and q.claimed_by = ${claim}
           returning q.entry_id, q.enqueued_at),
            ${insertEmbeddingsCte(sealed, 'done')}
          select emb.record_id, emb.key_id, extract(epoch from (now() - done.enqueued_at))::float8 as waited
            from emb join done on done.entry_id = emb.record_id`,
      );
      for (const r of rows) inserted.set(r.record_id, Math.max(0, Number(r.waited)));
      await notifyEmbeddings(tx, rows.map((r) => ({ recordId: r.record_id, keyId: r.key_id })));
      await this.#o.beforeCommit?.();
      this.#o.failpoint?.('indexer-inserted');
    }
    const marked = new Set<string>();
    if (refused.size > 0) {
      const json = JSON.stringify([...refused].map(([entry_id, r]) => ({ entry_id, key_id: r.keyId, reason: r.reason })));
      const rows = await queryRows<{ entry_id: string }>(
        tx,
        sql`with v as (select * from json_to_recordset(${json}::json) as v(entry_id text, key_id text, reason text)),
            done as (
              delete from index_queue q using v, log_entries e
               where q.entry_id = v.entry_id and q.claimed_by = ${claim} and e.entry_id = v.entry_id and e.key_id = v.key_id
           returning q.entry_id)
          update log_entries e set refused = v.reason
            from v join done on done.entry_id = v.entry_id
           where e.entry_id = v.entry_id
       returning e.entry_id`,
      );
      for (const r of rows) marked.add(r.entry_id);
    }
    // entries whose key is gone (a destruction not through this queue's hook, a restored database): nothing to index
    await tx.execute(sql`delete from index_queue q using log_entries e
                          where q.claimed_by = ${claim} and e.entry_id = q.entry_id
                            and not exists (select 1 from subject_keys k where k.key_id = e.key_id)`);
    // the rest (a re-key moved the entry meanwhile, a segment the store did not return): claimed again in a second
    const left = await queryRows<{ entry_id: string }>(
      tx,
      sql`update index_queue set claimed_by = null, claimed_until = now() + interval '1 second' where claimed_by = ${claim} returning entry_id`,
    );
    return { inserted, marked, released: left.length };
  }

  /**
   * Inside a re-key's switch (rekey.ts): its survivors not embedded yet queued again
   * (the old key's destruction, earlier in the transaction, dropped their rows), with
   * the time they were first registered. Refused entries are not.
   */
  async requeue(tx: Transaction, entryIds: readonly string[]): Promise<void> {
    if (entryIds.length === 0) return;
    await tx.execute(sql`insert into index_queue (entry_id, enqueued_at)
                         select entry_id, created_at from log_entries
                          where entry_id = any(${idArrayLiteral(entryIds)}::text[]) and refused is null
                         on conflict (entry_id) do nothing`);
  }

  /**
   * Inside a key destruction's transaction (registered with KeyDestructions.within):
   * the queued entries of the destroyed keys will never be indexed (their frames are
   * unreadable now); their queue rows go with the key.
   */
  async dropQueuedUnder(tx: Transaction, keyIds: readonly string[]): Promise<void> {
    await tx.execute(sql`delete from index_queue q using log_entries e
                          where e.entry_id = q.entry_id and e.key_id = any(${idArrayLiteral(keyIds)}::text[])`);
  }
}

/** The top-level field of a payload problem ("metadata.a.1: …" → "metadata"): deeper paths may name the writer's metadata keys. */
function topField(problem: string): string {
  const field = problem.slice(0, problem.indexOf(':')).split('.')[0] ?? 'payload';
  return ['text', 'kind', 'metadata'].includes(field) ? field : 'payload';
}
