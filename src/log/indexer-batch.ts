/**
 * One batch of the indexing queue (see indexer.ts): claimed, its segments fetched, its
 * frames opened and checked (refused ones quarantined), embedded, shingled and sealed,
 * committed (indexer-commit.ts) and published; on failure its claim given back.
 */
import { sql } from 'drizzle-orm';
import { zeroize } from '../crypto/index.js';
import { queryRows } from '../db/client.js';
import { isLetheError } from '../errors.js';
import type { Sealed } from '../vectors/service.js';
import { openEntry } from './frame.js';
import { commitBatch } from './indexer-commit.js';
import { type BatchResult, type Claimed, EMBED_CHUNK, FREE_RETRIES, type IndexerContext, MAX_BACKOFF_SECONDS, type Refusal, sleep } from './indexer-types.js';
import { FramePayloadSchema, payloadProblem } from './payload.js';
import { frameAt, frameKey } from './segment.js';

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

/** Segments fetched at once. */
const FETCH_CONCURRENCY = 4;

/** Claims one batch and indexes it (see indexer.ts). */
export async function runOnce(c: IndexerContext): Promise<BatchResult> {
  const claim = `${c.replica}#${++c.claims}`;
  const rows = await queryRows<Claimed>(
    c.d.db,
    sql`with c as (
          select entry_id from index_queue
           where claimed_until is null or claimed_until < now()
           order by seq limit ${c.o.batchSize}
           for update skip locked)
        update index_queue q
           set claimed_by = ${claim}, claimed_until = now() + make_interval(secs => ${c.o.claimSeconds}), attempts = q.attempts + 1
          from c, log_entries e
         where q.entry_id = c.entry_id and e.entry_id = q.entry_id
     returning q.entry_id, e.key_id, e.seq, e.segment, e.frame_offset, e.frame_length, e.wrapped_key`,
  );
  if (rows.length === 0) return { claimed: 0, indexed: 0, refused: 0, released: 0 };
  try {
    return await indexClaimed(c, claim, rows);
  } catch (e) {
    // give the rows back (a worker that dies instead leaves them to its claim's lapse): at once for the first
    // FREE_RETRIES attempts, then after a backoff that doubles with each (8 s … 5 min), so that a batch that keeps
    // failing does not hold up the entries queued after it
    await c.d.db
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

async function indexClaimed(c: IndexerContext, claim: string, rows: readonly Claimed[]): Promise<BatchResult> {
  const refused = new Map<string, { keyId: string; reason: Refusal }>();
  const segments = await fetchSegments(c, [...new Set(rows.map((r) => r.segment))]);
  for (const r of rows) if (segments.get(r.segment) === 'missing') refused.set(r.entry_id, { keyId: r.key_id, reason: 'segment_missing' });
  const deks = await c.d.keys.deksFor([...new Set(rows.map((r) => r.key_id))]);
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
      const place = { offset: Number(r.frame_offset), length: Number(r.frame_length) };
      let frame: Uint8Array;
      try {
        const wrapped = r.wrapped_key === null ? null : new Uint8Array(r.wrapped_key.buffer, r.wrapped_key.byteOffset, r.wrapped_key.byteLength);
        frame = frameAt(bytes, place);
        payload = openEntry(dek, { keyId: r.key_id, entryId: r.entry_id, seq: Number(r.seq) }, wrapped, frame);
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
      // a copy: a view would hold the whole segment
      c.d.frames?.set(frameKey(r.segment, place), frame.slice());
    }
    // on a seal worker when the replica has one ready, else here, paced
    const offThread = await c.d.vectors.sealOffThread(records);
    if (offThread) sealed.push(...offThread);
    else
      for (let i = 0; i < records.length; i += EMBED_CHUNK) {
        const chunk = records.slice(i, i + EMBED_CHUNK);
        await pace();
        const vectors = await c.d.vectors.embedder.embed(chunk.map((r) => r.text));
        for (let j = 0; j < chunk.length; j += YIELD_EVERY) {
          await pace();
          sealed.push(...(await c.d.vectors.sealEach(chunk.slice(j, j + YIELD_EVERY), vectors.slice(j, j + YIELD_EVERY))));
        }
      }
  } finally {
    for (const dek of deks.values()) zeroize(dek);
  }
  await c.o.afterSeal?.();
  c.o.failpoint?.('indexer-sealed');
  const started = performance.now();
  // this replica publishes what it commits: the records' own notifications, which may come back first, load nothing again
  // (by record and key: another replica's appends under the same keys, or these records re-keyed, still load)
  const publishing = c.d.vectors.publishingRecords(
    sealed.map((r) => ({ recordId: r.recordId, keyId: r.keyId })),
    async () => {
      const committed = await c.d.db.transaction((tx) => commitBatch(c, tx, claim, sealed, refused));
      await c.o.afterCommit?.();
      const published = sealed.filter((r) => committed.inserted.has(r.recordId));
      for (let i = 0; i < published.length; i += YIELD_EVERY) {
        if (i > 0) await pace();
        const part = published.slice(i, i + YIELD_EVERY);
        c.d.vectors.publish(part);
        const since = (performance.now() - started) / 1000;
        for (const r of part) c.d.metrics?.searchIndexDelay.observe(committed.inserted.get(r.recordId)! + since);
      }
      return committed;
    },
  );
  // the queue reads drained from the commit on, this replica's index only once published: waitIndexed waits for both
  c.publishing.add(publishing);
  const { inserted, marked, released } = await publishing.finally(() => c.publishing.delete(publishing));
  for (const [entryId, { reason }] of refused) {
    if (!marked.has(entryId)) continue;
    c.d.metrics?.entriesRefused.inc({ reason: reason.startsWith('payload_refused') ? 'payload_refused' : reason });
    c.d.logger?.warn({ entryId, reason }, 'a writer-registered entry was refused and quarantined: it is neither served nor searchable');
  }
  return { claimed: rows.length, indexed: inserted.size, refused: marked.size, released };
}

/** Each segment's bytes; `missing` when the store has no such object; absent when the store did not answer. */
async function fetchSegments(c: IndexerContext, keys: readonly string[]): Promise<Map<string, Uint8Array | 'missing'>> {
  const out = new Map<string, Uint8Array | 'missing'>();
  let next = 0;
  let failure: unknown;
  const worker = async () => {
    while (next < keys.length) {
      const key = keys[next++]!;
      try {
        out.set(key, await c.d.objects.get(key));
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

/** The top-level field of a payload problem ("metadata.a.1: …" → "metadata"): deeper paths may name the writer's metadata keys. */
function topField(problem: string): string {
  const field = problem.slice(0, problem.indexOf(':')).split('.')[0] ?? 'payload';
  return ['text', 'kind', 'metadata'].includes(field) ? field : 'payload';
}
