/**
 * The indexer (src/log/indexer.ts): writer registrations answered before their entries
 * are embedded, the durable queue drained by workers in every replica — on PostgreSQL
 * with a real MinIO, and on the embedded PGlite default. Each test states the
 * invariant it checks.
 */
import { randomBytes } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../src/app/open.js';
import { LetheWriter } from '../../src/client/index.js';
import { queryRows } from '../../src/db/client.js';
import { FREE_RETRIES, MAX_BACKOFF_SECONDS } from '../../src/log/indexer.js';
import { S3ObjectStore } from '../../src/storage/s3.js';
import { type Embedder, HashingEmbedder } from '../../src/vectors/embedder.js';
import { shingleSet } from '../../src/vectors/shingles.js';
import { serveTestVault, type ServedVault } from '../client/served.js';
import { ok } from '../support/http.js';
import { registerTexts, upload } from '../support/registration.js';
import { minioEnv, openTestVault, TOKENS, type TestVault } from '../support/vault.js';

const count = async (vault: App, query: ReturnType<typeof sql>) => Number((await queryRows<{ n: string | number }>(vault.db.db, query))[0]?.n ?? 0);
const embedded = (vault: App, ids: readonly string[]) => count(vault, sql`select count(*) as n from embeddings where record_id in ${ids}`);
const queued = (vault: App, ids: readonly string[]) => count(vault, sql`select count(*) as n from index_queue where entry_id in ${ids}`);

/** An embedder that counts the texts it embedded (a canary per text tells them apart). */
class CountingEmbedder implements Embedder {
  readonly inner = new HashingEmbedder(512);
  readonly model = this.inner.model;
  readonly dimensions = this.inner.dimensions;
  readonly seen = new Map<string, number>();
  async embed(texts: readonly string[]): Promise<Float32Array[]> {
    for (const t of texts) this.seen.set(t, (this.seen.get(t) ?? 0) + 1);
    return this.inner.embed(texts);
  }
}

/** A Prometheus sample's value from a registry's text (the first matching line). */
function sample(text: string, name: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${name} `) || l.startsWith(`${name}{`));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
}

describe('the indexer on PostgreSQL and MinIO', () => {
  describe('appends through the writer client', () => {
    let served: ServedVault;
    beforeAll(async () => {
      // the worker does not run: what the registration did alone is what the test sees
      served = await serveTestVault({ extraEnv: minioEnv('lethe-idx'), app: { indexWorker: false } });
    });
    afterAll(async () => {
      await served?.close();
    });

    it('an append is answered before it is embedded, is readable at once, and becomes searchable once the queue drains; the lag is in /metrics and /readyz', async () => {
      const { t, baseUrl } = served;
      const vault = t.app;
      const minio = t.env as Record<string, string>;
      const store = new S3ObjectStore({
        endpoint: minio.S3_ENDPOINT!,
        accessKey: minio.S3_ACCESS_KEY!,
        secretKey: minio.S3_SECRET_KEY!,
        bucket: minio.S3_BUCKET!,
      });
      const writer = new LetheWriter({ baseUrl, token: TOKENS.writer, store, segmentMaxAgeMs: 10 });
      const subject = `user:idx-${randomBytes(3).toString('hex')}`;
      const canary = `quetzal-${randomBytes(4).toString('hex')}`;
      const appended = await writer.append(subject, { text: `The spare key hides under the ${canary} flowerpot` });
      await writer.close();
      // acknowledged: indexed and queued, not embedded
      expect(await queued(vault, [appended.entryId])).toBe(1);
      expect(await embedded(vault, [appended.entryId])).toBe(0);
      expect(vault.vectors.index.has(appended.entryId)).toBe(false);
      // readable at once
      const entry = await ok<{ text: string }>(t.call('GET', `/v1/entries/${appended.entryId}`), 200);
      expect(entry.text).toContain(canary);
      // found at once by its subject's searches (they rank its queued entries besides the index), not yet by an all-subjects one; the lag is measured
      const scoped = await ok<{ hits: Array<{ id: string }> }>(t.call('POST', '/v1/search', { body: { query: `${canary} flowerpot`, k: 5, subject } }), 200);
      expect(scoped.hits.map((h) => h.id)).toEqual([appended.entryId]);
      const before = await ok<{ hits: Array<{ id: string }> }>(
        t.call('POST', '/v1/search', { body: { query: `${canary} flowerpot`, k: 5, allSubjects: true }, role: 'admin' }),
        200,
      );
      expect(before.hits.map((h) => h.id)).not.toContain(appended.entryId);
      await new Promise((r) => setTimeout(r, 20));
      const metrics = await (await t.call('GET', '/metrics', { role: 'none' })).text();
      expect(sample(metrics, 'lethe_search_lag_seconds')).toBeGreaterThan(0);
      expect(sample(metrics, 'lethe_search_queue_entries')).toBeGreaterThanOrEqual(1);
      const ready = await ok<{ replica?: { searchQueued?: number; searchLagSeconds?: number; indexWorker?: string } }>(
        t.call('GET', '/readyz', { role: 'none' }),
        200,
      );
      expect(ready.replica).toMatchObject({ indexWorker: 'stopped' });
      expect(ready.replica?.searchQueued).toBeGreaterThanOrEqual(1);
      expect(ready.replica?.searchLagSeconds).toBeGreaterThan(0);
      // the queue drains: searchable, the lag back to 0, the delay observed
      vault.log.indexer.start();
      try {
        await vault.log.drained({ timeoutMs: 60_000 });
      } finally {
        await vault.log.indexer.stop();
      }
      expect(await queued(vault, [appended.entryId])).toBe(0);
      expect(await embedded(vault, [appended.entryId])).toBe(1);
      const after = await ok<{ hits: Array<{ id: string }> }>(
        t.call('POST', '/v1/search', { body: { query: `${canary} flowerpot`, k: 5, allSubjects: true }, role: 'admin' }),
        200,
      );
      expect(after.hits[0]?.id).toBe(appended.entryId);
      const drained = await (await t.call('GET', '/metrics', { role: 'none' })).text();
      expect(sample(drained, 'lethe_search_lag_seconds')).toBe(0);
      expect(sample(drained, 'lethe_search_queue_entries')).toBe(0);
      expect(sample(drained, 'lethe_search_index_delay_seconds_count')).toBeGreaterThanOrEqual(1);
    });

    it('a frame not checked yet that does not open is left out of reads (not an error), then quarantined by the indexer', async () => {
      const vault = served.t.app;
      const subject = `user:idx-bad-${randomBytes(3).toString('hex')}`;
      const body = await upload(vault, subject, ['a readable neighbour', 'tampered after sealing']);
      // the second entry's wrapped record key replaced: its frame cannot open under the key it names
      const forged = body.entries.map((e, i) => (i === 1 ? { ...e, wrappedKey: body.entries[0]!.wrappedKey } : e));
      expect((await vault.log.register(body.segment, forged)).map((r) => r.status)).toEqual(['registered', 'registered']);
      const listed = (await ok<{ entries: Array<{ entryId: string }> }>(served.t.call('GET', `/v1/subjects/${subject}/entries`), 200)).entries;
      expect(listed.map((e) => e.entryId)).toEqual([body.entries[0]!.entryId]);
      // a page of one still finds the readable entry past the one left out
      const paged = await ok<{ entries: Array<{ entryId: string }> }>(served.t.call('GET', `/v1/subjects/${subject}/entries?limit=1`), 200);
      expect(paged.entries.map((e) => e.entryId)).toEqual([body.entries[0]!.entryId]);
      await vault.log.drained({ timeoutMs: 60_000 });
      const rows = await queryRows<{ refused: string | null }>(
        vault.db.db,
        sql`select refused from log_entries where entry_id in ${body.entries.map((e) => e.entryId)} order by seq`,
      );
      expect(rows.map((r) => r.refused)).toEqual([null, 'frame_unopened']);
      expect(vault.vectors.index.has(body.entries[1]!.entryId)).toBe(false);
    });
  });

  describe('the durable queue', () => {
    let tv: TestVault;
    /** The vaults the running test reopened: closed when it ends. */
    const reopened: App[] = [];
    beforeAll(async () => {
      const opened = await openTestVault({ extraEnv: minioEnv('lethe-idxq'), app: { indexWorker: false } });
      tv = { ...opened, reopen: async (...args) => reopened[reopened.push(await opened.reopen(...args)) - 1]! };
    });
    // each vault has a pool of up to 10 connections: a dozen left open until the end reached PostgreSQL's
    // max_connections (100) beside another suite, and a query failed with 53300 "too many clients already"
    afterEach(async () => {
      await Promise.all(reopened.splice(0).map((v) => v.close()));
    });
    afterAll(async () => {
      await tv?.close();
    });

    it('survives a restart: entries queued by a process that stopped are drained by the next one', async () => {
      const first = await tv.reopen({ indexWorker: false });
      const { ids } = await registerTexts(first, `user:restart-${randomBytes(3).toString('hex')}`, ['queued before the restart', 'and another one']);
      expect(await queued(first, ids)).toBe(2);
      await first.close();
      // a new process on the same database, its worker running
      const next = await tv.reopen({ indexWorker: true });
      await next.log.drained({ timeoutMs: 60_000 });
      expect(await queued(next, ids)).toBe(0);
      expect(await embedded(next, ids)).toBe(2);
      expect(ids.every((id) => next.vectors.index.has(id))).toBe(true);
      // the tests below count who indexes what
      await next.log.indexer.stop();
    });

    it('two workers on one database (two vaults) never embed one entry twice', async () => {
      const a = new CountingEmbedder();
      const b = new CountingEmbedder();
      const indexing = { batchSize: 8 };
      const one = await tv.reopen({ indexWorker: false, embedder: a, indexing });
      const two = await tv.reopen({ indexWorker: false, embedder: b, indexing });
      const texts: string[] = [];
      const ids: string[] = [];
      for (let s = 0; s < 6; s++) {
        const batch = Array.from({ length: 20 }, (_, i) => `entry ${i} of subject ${s}: canary ${randomBytes(6).toString('hex')}`);
        texts.push(...batch);
        ids.push(...(await registerTexts(one, `user:two-${s}-${randomBytes(3).toString('hex')}`, batch)).ids);
      }
      one.log.indexer.start();
      two.log.indexer.start();
      try {
        await Promise.all([one.log.drained({ timeoutMs: 60_000 }), two.log.drained({ timeoutMs: 60_000 })]);
      } finally {
        await Promise.all([one.log.indexer.stop(), two.log.indexer.stop()]);
      }
      expect(await embedded(one, ids)).toBe(ids.length);
      for (const text of texts) expect((a.seen.get(text) ?? 0) + (b.seen.get(text) ?? 0), text).toBe(1);
    });

    it('drained() resolves once this replica has published what its worker committed: its own index holds the entries', async () => {
      // the window between a batch's commit (its queue rows gone) and its vectors published, held open
      let hold: Promise<void> | undefined;
      const vault = await tv.reopen({ indexWorker: false, indexing: { afterCommit: () => hold } });
      const { ids } = await registerTexts(vault, `user:drained-${randomBytes(3).toString('hex')}`, ['published before drained() resolves']);
      hold = new Promise((r) => setTimeout(r, 300));
      vault.log.indexer.start();
      try {
        await vault.log.drained({ timeoutMs: 10_000 });
        expect(ids.map((id) => vault.vectors.index.has(id))).toEqual([true]);
      } finally {
        await vault.log.indexer.stop();
      }
    });

    it('a batch that fails after sealing, or rolls back after its insert, leaves its entries queued; the next claim indexes each once', async () => {
      let failSeal = true;
      let failCommit = true;
      const embedder = new CountingEmbedder();
      const vault = await tv.reopen({
        indexWorker: false,
        embedder,
        indexing: {
          afterSeal: () => {
            if (failSeal) {
              failSeal = false;
              throw new Error('the worker died after sealing');
            }
          },
          beforeCommit: () => {
            if (failCommit) {
              failCommit = false;
              throw new Error('the worker died after the insert, before the commit');
            }
          },
        },
      });
      const texts = ['fault one', 'fault two', 'fault three'].map((t) => `${t} ${randomBytes(4).toString('hex')}`);
      const { ids } = await registerTexts(vault, `user:faults-${randomBytes(3).toString('hex')}`, texts);
      await expect(vault.log.indexer.runOnce()).rejects.toThrow(/after sealing/);
      expect(await queued(vault, ids)).toBe(3);
      await expect(vault.log.indexer.runOnce()).rejects.toThrow(/before the commit/);
      expect(await queued(vault, ids)).toBe(3);
      expect(await embedded(vault, ids)).toBe(0);
      expect(ids.some((id) => vault.vectors.index.has(id))).toBe(false);
      expect(await vault.log.indexer.runOnce()).toMatchObject({ claimed: 3, indexed: 3 });
      expect(await embedded(vault, ids)).toBe(3);
      expect(await queued(vault, ids)).toBe(0);
      // sealed three times, stored once
      for (const t of texts) expect(embedder.seen.get(t)).toBe(3);
    });

    it('a batch that keeps failing backs off after its free retries: it stays queued and does not hold the claim at the head of the queue', async () => {
      const vault = await tv.reopen({
        indexWorker: false,
        indexing: {
          afterSeal: () => {
            throw new Error('this batch always fails');
          },
        },
      });
      const { ids } = await registerTexts(vault, `user:poison-${randomBytes(3).toString('hex')}`, [`poison ${randomBytes(4).toString('hex')}`]);
      // the free retries: claimed again at once
      for (let i = 0; i < FREE_RETRIES + 1; i++) await expect(vault.log.indexer.runOnce()).rejects.toThrow(/always fails/);
      // past them: released with a backoff, so the next claim does not take it (the queue behind it would be taken instead)
      expect(await vault.log.indexer.runOnce()).toMatchObject({ claimed: 0 });
      expect(await queued(vault, ids)).toBe(1);
      const [row] = await queryRows<{ wait: number; attempts: number }>(
        vault.db.db,
        sql`select extract(epoch from claimed_until - now())::float8 as wait, attempts from index_queue where entry_id = ${ids[0]!}`,
      );
      expect(row!.attempts).toBe(FREE_RETRIES + 1);
      expect(row!.wait).toBeGreaterThan(2 ** (FREE_RETRIES + 1) - 2);
      expect(row!.wait).toBeLessThanOrEqual(MAX_BACKOFF_SECONDS);
    });

    it('a worker that hangs past its claim loses it: another replica indexes the entries, and the late commit writes nothing', async () => {
      let release: () => void = () => {};
      const hung = new Promise<void>((r) => (release = r));
      let hanging = true;
      const slow = await tv.reopen({
        indexWorker: false,
        indexing: { claimSeconds: 1, afterSeal: () => (hanging ? hung : undefined) },
      });
      const other = await tv.reopen({ indexWorker: false });
      const { ids } = await registerTexts(slow, `user:hung-${randomBytes(3).toString('hex')}`, ['claimed by a worker that hangs', 'and its neighbour']);
      const late = slow.log.indexer.runOnce();
      // the claim lapses after a second; the other replica claims and indexes
      let taken = { claimed: 0, indexed: 0 };
      for (let i = 0; i < 50 && taken.claimed === 0; i++) {
        await new Promise((r) => setTimeout(r, 100));
        taken = await other.log.indexer.runOnce();
      }
      expect(taken).toMatchObject({ claimed: 2, indexed: 2 });
      hanging = false;
      release();
      expect(await late).toMatchObject({ claimed: 2, indexed: 0 });
      expect(await embedded(other, ids)).toBe(2);
      expect(await count(other, sql`select count(*) as n from embeddings where record_id in ${ids}`)).toBe(2);
    });

    it('a key destroyed while its entries are queued takes their queue rows; a worker that sealed them before the destruction commits nothing', async () => {
      const vault = await tv.reopen({ indexWorker: false });
      // destroyed while queued: the destruction drops the rows
      const gone = await registerTexts(vault, `user:gone-${randomBytes(3).toString('hex')}`, ['queued, then erased']);
      await vault.keys.destroyKey(gone.keyId, { reason: 'test', actor: 'admin' });
      expect(await queued(vault, gone.ids)).toBe(0);
      expect((await vault.log.indexer.runOnce()).indexed).toBe(0);
      expect(await embedded(vault, gone.ids)).toBe(0);
      // the race: sealed under the key, destroyed before the commit
      let destroy: (() => Promise<void>) | undefined;
      const racing = await tv.reopen({ indexWorker: false, indexing: { afterSeal: () => destroy?.() } });
      const raced = await registerTexts(racing, `user:raced-${randomBytes(3).toString('hex')}`, ['sealed, then its key destroyed', 'the same']);
      destroy = async () => {
        await racing.keys.destroyKey(raced.keyId, { reason: 'test', actor: 'admin' });
      };
      expect(await racing.log.indexer.runOnce()).toMatchObject({ claimed: 2, indexed: 0 });
      expect(await embedded(racing, raced.ids)).toBe(0);
      expect(await queued(racing, raced.ids)).toBe(0);
      expect(raced.ids.some((id) => racing.vectors.index.has(id))).toBe(false);
    });

    it('a re-key while entries are queued queues the survivors again under the new key; they are indexed under it', async () => {
      const vault = await tv.reopen({ indexWorker: false });
      const subject = `user:rekeyq-${randomBytes(3).toString('hex')}`;
      const { ids } = await registerTexts(vault, subject, ['kept through the re-key', 'forgotten by it', 'kept as well']);
      const result = await vault.log.rekeySubject(subject, { actor: 'test', exclude: [ids[1]!] });
      expect(await queued(vault, [ids[0]!, ids[2]!])).toBe(2);
      expect(await queued(vault, [ids[1]!])).toBe(0);
      await vault.log.drained({ timeoutMs: 60_000 });
      const rows = await queryRows<{ record_id: string; key_id: string }>(
        vault.db.db,
        sql`select record_id, key_id from embeddings where record_id in ${ids} order by record_id`,
      );
      expect(rows.map((r) => r.key_id)).toEqual([result.newKeyId, result.newKeyId]);
      expect(new Set(rows.map((r) => r.record_id))).toEqual(new Set([ids[0], ids[2]]));
    });

    it('coverage counts queued entries as not covered', async () => {
      const vault = await tv.reopen({ indexWorker: false, searchIndex: true });
      await vault.log.drained({ timeoutMs: 60_000 });
      const settled = await vault.vectors.coverage();
      expect(settled.queued).toBe(0);
      const { ids } = await registerTexts(vault, `user:cov-${randomBytes(3).toString('hex')}`, ['not covered yet']);
      const waiting = await vault.vectors.coverage();
      expect(waiting.queued).toBe(1);
      expect(waiting.stored).toBe(settled.stored + 1);
      await vault.log.drained({ timeoutMs: 60_000 });
      expect(vault.vectors.lexical.has(ids[0]!)).toBe(true);
      const covered = await vault.vectors.coverage();
      expect(covered).toMatchObject({ queued: 0, stored: settled.stored + 1 });
    });
  });
});

describe('the indexer on the embedded PGlite default', () => {
  let tv: TestVault;
  beforeAll(async () => {
    tv = await openTestVault({ embedded: true });
  });
  afterAll(async () => {
    await tv?.close();
  });

  it('claims with SKIP LOCKED in one process, indexes a registration, and answers the lag', async () => {
    const vault = tv.app;
    await vault.log.indexer.stop();
    const subject = `user:pglite-${randomBytes(3).toString('hex')}`;
    const { ids } = await registerTexts(vault, subject, ['an embedded registration', 'and a second one']);
    expect(await queued(vault, ids)).toBe(2);
    expect((await vault.log.queueStatus()).queued).toBe(2);
    vault.log.indexer.start();
    await vault.log.drained({ timeoutMs: 60_000 });
    expect(await embedded(vault, ids)).toBe(2);
    expect(ids.every((id) => vault.vectors.index.has(id))).toBe(true);
    expect(await vault.log.queueStatus()).toEqual({ queued: 0, lagSeconds: 0 });
    const hits = await vault.search.search('an embedded registration', 2, { subjects: [subject] });
    expect(hits.hits.map((h) => h.id)).toContain(ids[0]);
  });
});

describe('the indexer with a seal worker', () => {
  let tv: TestVault;
  beforeAll(async () => {
    tv = await openTestVault({ extraEnv: minioEnv('lethe-idxw'), app: { indexWorker: false, sealWorkers: 1 } });
  });
  afterAll(async () => {
    await tv?.close();
  });

  it('seals its batches off the service thread once the worker is ready: the same records, searchable, none sealed on the service thread', async () => {
    const vault = tv.app;
    expect(await vault.vectors.sealWorkersReady()).toBe(true);
    let sealedHere = 0;
    const sealEach = vault.vectors.sealEach;
    vault.vectors.sealEach = (...args) => {
      sealedHere++;
      return sealEach(...args);
    };
    try {
      const subject = `user:sealw-${randomBytes(3).toString('hex')}`;
      const canary = `axolotl-${randomBytes(4).toString('hex')}`;
      const { ids } = await registerTexts(vault, subject, [`The ${canary} lives in the blue tank`, 'a second note about the garden shed']);
      vault.log.indexer.start();
      await vault.log.drained({ timeoutMs: 60_000 });
      await vault.log.indexer.stop();
      expect(sealedHere).toBe(0);
      expect(await embedded(vault, ids)).toBe(2);
      expect(ids.every((id) => vault.vectors.index.has(id))).toBe(true);
      const hits = await vault.search.search(`${canary} tank`, 2, { subjects: [subject] });
      expect(hits.hits[0]?.id).toBe(ids[0]);
      // filed under the shingles this thread computes for the text (the worker keyed them under the same index key)
      expect(Array.from(vault.vectors.lexical.setAt(vault.vectors.lexical.slotOf(ids[0]!)!) ?? [])).toEqual(
        Array.from(shingleSet(vault.vectors.shinglesOf(`The ${canary} lives in the blue tank`))),
      );
    } finally {
      vault.vectors.sealEach = sealEach;
    }
  });
});
