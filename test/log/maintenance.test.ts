import { randomBytes } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { queryRows } from '../../src/db/client.js';
import { compact, fsck } from '../../src/log/maintenance.js';
import { encodeSegment } from '../../src/log/segment.js';
import { openTestVault, type TestVault } from '../support/vault.js';

describe('log fsck and compaction', () => {
  let tv: TestVault;
  beforeAll(async () => {
    tv = await openTestVault();
  });
  afterAll(async () => {
    await tv?.close();
  });

  it('fsck finds orphan segments and missing ones, repairs orphans past the grace period, and never touches indexed data', async () => {
    const { app } = tv;
    const deps = { db: app.db.db, objects: app.objects };
    for (const s of ['user:f1', 'user:f2']) for (let i = 0; i < 3; i++) await app.log.append(s, { text: `${s} ${i}` }, 'writer');
    expect(await fsck(deps)).toMatchObject({ ok: true, segmentsStored: 6, segmentsIndexed: 6, orphans: [], missing: [] });

    // a writer that crashed between upload and index
    await app.objects.put('log/seg_crashed', encodeSegment([randomBytes(80)]).bytes);
    const young = await fsck(deps, { repair: true, graceSeconds: 3600 });
    expect(young.orphans).toEqual([{ segment: 'log/seg_crashed', size: expect.any(Number), action: 'kept: younger than the grace period' }]);
    const repaired = await fsck(deps, { repair: true, graceSeconds: 0 });
    expect(repaired.orphans).toEqual([{ segment: 'log/seg_crashed', size: expect.any(Number), action: 'deleted' }]);
    expect(await app.objects.head('log/seg_crashed')).toBeUndefined();

    // an indexed segment that went missing is reported, not repaired
    const [row] = await queryRows<{ segment: string }>(app.db.db, sql`select segment from log_entries order by seq limit 1`);
    const saved = await app.objects.get(row!.segment);
    await app.objects.delete(row!.segment);
    const lost = await fsck(deps, { repair: true, graceSeconds: 0, deep: true });
    expect(lost.ok).toBe(false);
    expect(lost.missing).toEqual([{ segment: row!.segment, entries: 1 }]);
    await app.objects.put(row!.segment, saved);
    expect((await fsck(deps, { deep: true })).ok).toBe(true);
    expect((await app.log.list('user:f1')).map((e) => e.text)).toEqual(['user:f1 0', 'user:f1 1', 'user:f1 2']);
  });

  it('compaction removes the frames of destroyed keys and keeps every live entry readable', async () => {
    const { app } = tv;
    const deps = { db: app.db.db, objects: app.objects };
    const doomed = (await app.keys.findKey('user:f2'))!.keyId;
    const doomedEntry = (await app.log.list('user:f2'))[0]!.entryId;
    await app.keys.destroyKey(doomed, { reason: 'compaction test', actor: 'admin' });
    const report = await compact(deps);
    expect(report).toMatchObject({ segmentsExamined: 3, segmentsRemoved: 3, framesDropped: 3 });
    expect(await compact(deps)).toMatchObject({ segmentsExamined: 0 });
    const stored: string[] = [];
    for await (const o of app.objects.list('log/')) stored.push(o.key);
    expect(stored).toHaveLength(3);
    await expect(app.log.get(doomedEntry)).rejects.toMatchObject({ code: 'key_destroyed' });
    expect((await app.log.list('user:f1')).map((e) => e.text)).toEqual(['user:f1 0', 'user:f1 1', 'user:f1 2']);
    expect((await fsck(deps, { deep: true })).ok).toBe(true);
  });

  it("concurrent appends share segments (segment-batch.ts): erasing one subject, compaction keeps the others' frames and drops its own", async () => {
    const { app } = tv;
    const deps = { db: app.db.db, objects: app.objects };
    const tag = randomBytes(4).toString('hex');
    const [kept, erased] = [`user:share-kept-${tag}`, `user:share-erased-${tag}`];
    await Promise.all(
      Array.from({ length: 20 }, (_, i) => app.log.append(i % 2 ? kept : erased, { text: `shared ${i % 2 ? 'kept' : 'erased'} ${i}` }, 'writer')),
    );
    const [mixed] = await queryRows<{ n: string }>(
      app.db.db,
      sql`select count(*) as n from (select segment from log_entries group by segment having count(distinct key_id) > 1) s`,
    );
    expect(Number(mixed!.n)).toBeGreaterThan(0); // both subjects' frames in one segment
    expect((await fsck(deps, { deep: true })).ok).toBe(true);
    const erasedEntries = await app.log.list(erased);
    await app.keys.destroyKey((await app.keys.findKey(erased))!.keyId, { reason: 'shared segments', actor: 'admin' });
    const report = await compact(deps);
    expect(report.segmentsRewritten).toBeGreaterThan(0);
    expect(report.framesDropped).toBe(10);
    expect((await app.log.list(kept)).map((e) => e.text).sort()).toEqual([1, 3, 5, 7, 9, 11, 13, 15, 17, 19].map((i) => `shared kept ${i}`).sort());
    for (const e of erasedEntries) await expect(app.log.get(e.entryId)).rejects.toMatchObject({ code: 'key_destroyed' });
    expect((await fsck(deps, { deep: true })).ok).toBe(true);
  });
});

describe('appends on a replica whose DEK cache is stale', () => {
  it("use the subject's new key when the cached one was destroyed elsewhere, and refuse while it is fenced", async () => {
    const tv = await openTestVault();
    try {
      const replica = await tv.reopen({ listen: false }); // hears no invalidations
      const first = await replica.log.append('user:stale', { text: 'one' }, 'writer');
      await tv.app.keys.destroyKey(first.keyId, { reason: 'stale cache test', actor: 'admin' });
      const second = await replica.log.append('user:stale', { text: 'two' }, 'writer');
      expect(second.keyId).not.toBe(first.keyId);
      expect((await tv.app.log.list('user:stale')).map((e) => e.text)).toEqual(['two']);
      await tv.app.keys.fenceKey(second.keyId, 'eraser');
      await expect(replica.log.append('user:stale', { text: 'three' }, 'writer')).rejects.toMatchObject({ code: 'erasure_in_progress' });
    } finally {
      await tv.close();
    }
  });
});
