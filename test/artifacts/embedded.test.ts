/** Derived artifacts, search and fences on the embedded default: PGlite and the local object store. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestVault, type TestVault } from '../support/vault.js';

describe('artifacts on PGlite and the local object store', () => {
  let tv: TestVault;
  beforeAll(async () => {
    tv = await openTestVault({ embedded: true });
  }, 120_000);
  afterAll(async () => {
    await tv?.close();
  });

  it('writes with provenance, searches, refuses a stale fence, regenerates, and rebuilds the index after a restart', async () => {
    const v = tv.app;
    expect([v.db.kind, v.objects.kind]).toEqual(['pglite', 'fs']);
    const a = await v.log.append('user:ea', { text: 'Anna keeps her spare key under the blue flowerpot.' }, 'writer');
    const b = await v.log.append('user:eb', { text: 'Ben is training for a half marathon.' }, 'writer');
    const s = await v.artifacts.write(
      { kind: 'summary', text: 'Anna: spare key under the blue flowerpot. Ben: half marathon.', sources: [a.entryId, b.entryId] },
      'writer',
    );
    expect(s).toMatchObject({ version: 1, subjects: 2 });
    const d = await v.artifacts.write({ kind: 'digest', text: 'Neighbourhood digest.', sources: [s.artifactId] }, 'writer');
    expect(await v.artifacts.touching('user:ea')).toEqual([
      { artifactId: s.artifactId, depth: 1 },
      { artifactId: d.artifactId, depth: 2 },
    ]);
    const hits = (await v.search.search('where is the spare key hidden', 3, { subjects: ['user:ea'] })).hits;
    expect(hits[0]).toMatchObject({ id: a.entryId, type: 'entry', subject: 'user:ea' });
    // scoped on PGlite too: the summary shared with Ben is not in Anna's scope, only in theirs together
    expect(hits.map((h) => h.id)).toEqual([a.entryId]);
    const both = (await v.search.search('spare key flowerpot half marathon', 10, { subjects: ['user:ea', 'user:eb'] })).hits;
    expect(both.map((h) => h.id).sort()).toEqual([a.entryId, b.entryId, s.artifactId, d.artifactId].sort());
    expect(both.find((h) => h.id === s.artifactId)).toMatchObject({ type: 'artifact', subject: null, kind: 'summary', metadata: null });

    const fence = (await v.artifacts.get(s.artifactId)).readFence;
    await v.keys.destroyKey(a.keyId, { reason: 'erasure', actor: 'eraser' });
    await expect(v.artifacts.write({ kind: 'fact', text: 'x', sources: [b.entryId], readFences: [fence] }, 'writer')).rejects.toMatchObject({
      code: 'source_erased',
    });
    expect((await v.search.search('spare key flowerpot', 5, { allSubjects: true })).hits.map((h) => h.id)).not.toContain(a.entryId);

    const result = await v.artifacts.regenerate([s.artifactId], { actor: 'eraser' });
    expect(result.regenerated.map((r) => [r.artifactId, r.version])).toEqual([
      [s.artifactId, 2],
      [d.artifactId, 2],
    ]);
    expect((await v.artifacts.get(d.artifactId)).text).toBe('Ben is training for a half marathon.');

    // the index is rebuilt by decrypting at start-up: same answers from a fresh process state
    await v.close();
    const reopened = await tv.reopen();
    const again = (await reopened.search.search('half marathon training', 3, { subjects: ['user:eb'] })).hits;
    // regenerated from Ben's entry alone, the summary and the digest above it are Ben's now
    expect(again.map((h) => [h.id, h.subject]).sort()).toEqual(
      [
        [b.entryId, 'user:eb'],
        [s.artifactId, 'user:eb'],
        [d.artifactId, 'user:eb'],
      ].sort(),
    );
    expect(reopened.vectors.index.has(a.entryId)).toBe(false);
  });
});
