/**
 * The re-index (src/app/reindex.ts) on PostgreSQL: a row sealed by an older lethe —
 * shingled and embedded with the comparison form before disguises were folded away
 * (`embeddings.fold_version` 1) — hides a reformatted copy of a number from the probe
 * until it is computed again from its text; `reindex()` does that, for entries and
 * artifacts, and an app that migrates does it at start-up; one that does not leaves the
 * rows for `lethe reindex`.
 */
import { randomBytes, randomInt } from 'node:crypto';
import { Writable } from 'node:stream';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { queryRows } from '../../src/db/client.js';
import { createLogger } from '../../src/observability/logger.js';
import { upsertEmbeddings } from '../../src/vectors/embeddings.js';
import { FOLD_VERSION } from '../../src/vectors/fold.js';
import { openTestApp, type TestApp } from '../support/vault.js';

const tag = () => randomBytes(5).toString('hex');
const phone = () => ['44', String(randomInt(20, 99)), String(randomInt(1000, 9999)), String(randomInt(1000, 9999))];

describe('re-indexing rows of an older comparison form', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await openTestApp({ app: { erasureWorker: false } });
    for (let i = 0; i < 20; i++) await append(`user:bg-${i}-${tag()}`, `Phone: call the front desk about parcel ${randomInt(10, 99)} before noon.`);
  }, 60_000);

  afterAll(async () => {
    await t?.close();
  });

  const append = async (subject: string, text: string) => t.app.log.append(subject, { text }, 'writer');
  const erase = async (subject: string) => {
    const { erasureId } = await t.app.erasures.request({ subject }, 'eraser');
    return t.app.erasures.settle(erasureId);
  };
  const foldVersionOf = async (recordId: string) =>
    (await queryRows<{ v: number }>(t.app.db.db, sql`select fold_version as v from embeddings where record_id = ${recordId}`))[0]?.v;

  /**
   * An entry whose sealed row is as the older lethe wrote it: "Phone: +44 20 7946 0958"
   * shingled word by word (its digit groups apart — what a newline still keeps apart
   * today), marked fold version 1.
   */
  async function legacyEntry(digits: readonly string[]): Promise<string> {
    const { entryId, keyId } = await append(`user:holder-${tag()}`, `Phone: +${digits.join(' ')}`);
    // indexed first: the indexer's own row must not land over the older one afterwards
    await t.app.log.drained();
    const { dek } = await t.app.keys.dekFor(keyId);
    try {
      const [old] = await t.app.vectors.seal([{ recordId: entryId, recordType: 'entry', text: `Phone:\n${digits.join('\n')}` }], keyId, dek);
      await upsertEmbeddings(t.app.db.db, [{ ...old!, foldVersion: 1 }]);
    } finally {
      dek.fill(0);
    }
    return entryId;
  }

  it('a row sealed with the older form hides a reformatted number from the probe until the re-index; then the probe names it', async () => {
    const digits = phone();
    const copy = await legacyEntry(digits);
    await t.app.vectors.rebuild();
    expect(await foldVersionOf(copy)).toBe(1);
    expect(await t.app.vectors.countStale()).toBeGreaterThanOrEqual(1);

    // before: the erased "442079460958" and the stored "44 20 7946 0958" share no word
    const before = `user:w-${tag()}`;
    await append(before, `Phone: ${digits.join('')}`);
    const missed = await erase(before);
    expect(missed.probe.matches.map((m) => m.id)).not.toContain(copy);

    const result = await t.app.reindex();
    expect(result.reindexed).toBeGreaterThanOrEqual(1);
    expect(result.left).toBe(0);
    expect(await foldVersionOf(copy)).toBe(FOLD_VERSION);
    expect(await t.app.vectors.countStale()).toBe(0);
    // nothing left: a second run finds nothing
    expect(await t.app.reindex()).toEqual({ stale: 0, reindexed: 0, left: 0 });

    const after = `user:w-${tag()}`;
    await append(after, `Phone: ${digits.join('-')}`);
    const found = await erase(after);
    expect(found.status).toBe('incomplete');
    expect(found.probe.matches.map((m) => m.id)).toContain(copy);
  });

  it("re-indexes an artifact's current version from its text, under its version key", async () => {
    const { entryId } = await append(`user:src-${tag()}`, 'Anna keeps the spare key under the blue flowerpot near the gate.');
    const artifact = await t.app.artifacts.write(
      { kind: 'summary', text: `Anna: spare key under the blue flowerpot; phone +${phone().join(' ')}.`, sources: [entryId] },
      'writer',
    );
    await t.app.log.drained();
    expect(await t.app.reindex()).toMatchObject({ left: 0 });
    await t.app.db.db.execute(sql`update embeddings set fold_version = 1 where record_id = ${artifact.artifactId}`);
    const result = await t.app.reindex();
    expect(result).toEqual({ stale: 1, reindexed: 1, left: 0 });
    expect(await foldVersionOf(artifact.artifactId)).toBe(FOLD_VERSION);
    expect(t.app.vectors.lexical.has(artifact.artifactId)).toBe(true);
  });

  it('a row of another embedder model is embedded again with the configured one: a model change never mixes vector spaces', async () => {
    // written by a replica configured with another embedder (a hashed half of 256 dimensions)
    const other = await t.reopen({ migrate: false, listen: false, erasureWorker: false }, { LETHE_EMBEDDING_DIMENSIONS: '256' });
    expect(other.vectors.embedder.model).not.toBe(t.app.vectors.embedder.model);
    const { entryId } = await other.log.append(`user:model-${tag()}`, { text: 'Moved into a flat on Harbour Street last spring.' }, 'writer');
    await other.log.drained();
    await other.close();
    await t.app.vectors.rebuild();
    // its vector is of another space: not searchable, its shingles still are
    expect(t.app.vectors.index.has(entryId)).toBe(false);
    expect(t.app.vectors.lexical.has(entryId)).toBe(true);
    expect(await t.app.reindex()).toEqual({ stale: 1, reindexed: 1, left: 0 });
    const [row] = await queryRows<{ model: string }>(t.app.db.db, sql`select model from embeddings where record_id = ${entryId}`);
    expect(row!.model).toBe(t.app.vectors.embedder.model);
    expect(t.app.vectors.index.has(entryId)).toBe(true);
  });

  it('another replica loads the re-indexed rows although it holds them under the same key', async () => {
    const replica = await t.reopen();
    const setOn = (app: typeof replica, id: string) => {
      const slot = app.vectors.lexical.slotOf(id);
      return slot === undefined ? undefined : [...app.vectors.lexical.setAt(slot)!];
    };
    const copy = await legacyEntry(phone());
    // both replicas hold the row as the older lethe sealed it
    await t.app.vectors.rebuild();
    await replica.vectors.rebuild();
    const legacy = setOn(replica, copy);
    expect(legacy).toEqual(setOn(t.app, copy));
    await t.app.reindex();
    const current = setOn(t.app, copy);
    expect(current).not.toEqual(legacy);
    // told over NOTIFY that the row was rewritten under the key it already had
    const deadline = Date.now() + 15_000;
    while (JSON.stringify(setOn(replica, copy)) !== JSON.stringify(current) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 25));
    expect(setOn(replica, copy)).toEqual(current);
  });

  it('an app that migrates re-indexes at start-up; one that may not migrate leaves the rows and says so', async () => {
    const stale = await legacyEntry(phone());
    const warnings: Array<{ msg?: string; stale?: number }> = [];
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        for (const line of chunk.toString('utf8').split('\n')) if (line.trim()) warnings.push(JSON.parse(line) as { msg?: string; stale?: number });
        done();
      },
    });
    const unmigrated = await t.reopen({ migrate: false, listen: false, logger: createLogger('warn', sink) });
    expect(unmigrated.reindexed).toBeUndefined();
    expect(await foldVersionOf(stale)).toBe(1);
    expect(warnings.find((w) => w.msg?.includes('older comparison form'))).toMatchObject({ stale: 1, msg: expect.stringContaining('lethe reindex') });
    const migrated = await t.reopen({ listen: false });
    expect(migrated.reindexed).toEqual({ stale: 1, reindexed: 1, left: 0 });
    expect(await foldVersionOf(stale)).toBe(FOLD_VERSION);
  });
});
