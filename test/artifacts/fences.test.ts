/**
 * Read fences: a write that presents the fence of an earlier read is refused when
 * anything that read returned was erased since — whether or not the write cites it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestApp, type TestApp } from '../support/vault.js';

interface Written {
  entryId: string;
  keyId: string;
}

describe('read fences', () => {
  let t: TestApp;
  const append = async (subject: string, text: string): Promise<Written> => {
    const res = await t.call('POST', `/v1/subjects/${subject}/entries`, { body: { text } });
    expect(res.status).toBe(201);
    return (await res.json()) as Written;
  };
  const readFence = async (path: string): Promise<string> => {
    const res = await t.call('GET', path);
    expect(res.status).toBe(200);
    const body = (await res.json()) as { readFence: string };
    expect(body.readFence).toMatch(/^rf1\./);
    return body.readFence;
  };
  const writeArtifact = (body: Record<string, unknown>) => t.call('POST', '/v1/artifacts', { body: { kind: 'summary', text: 'consolidated', ...body } });

  beforeAll(async () => {
    t = await openTestApp();
  });
  afterAll(async () => {
    await t?.close();
  });

  it('a consolidation job that read before an erasure cannot write after it, even citing only survivors', async () => {
    const a = await append('user:fa', 'A: the door code is 4711.');
    const b = await append('user:fb', 'B: prefers tea.');
    // the job reads both subjects' logs…
    const fenceA = await readFence('/v1/subjects/user:fa/entries');
    const fenceB = await readFence('/v1/subjects/user:fb/entries');
    // …A is erased meanwhile (key destroyed)…
    await t.app.keys.destroyKey(a.keyId, { reason: 'erasure', actor: 'eraser' });
    // …and the job writes a summary that cites only B but was made from both reads
    const res = await writeArtifact({ sources: [b.entryId], readFences: [fenceA, fenceB] });
    expect(res.status).toBe(409);
    const problem = (await res.json()) as { code: string; detail: string };
    expect(problem.code).toBe('source_erased');
    expect(problem.detail).not.toContain('4711');
    // with the API's single readFence field, too
    expect((await writeArtifact({ sources: [b.entryId], readFence: fenceA })).status).toBe(409);
    // a job that only read B is unaffected
    const ok = await writeArtifact({ sources: [b.entryId], readFence: fenceB });
    expect(ok.status).toBe(201);
  });

  it('a fence taken from one entry read covers that entry', async () => {
    const a = await append('user:fc', 'C: allergic to penicillin.');
    const b = await append('user:fd', 'D: runs marathons.');
    const fence = await readFence(`/v1/entries/${a.entryId}`);
    await t.app.keys.destroyKey(a.keyId, { reason: 'erasure', actor: 'eraser' });
    const res = await writeArtifact({ sources: [b.entryId], readFence: fence });
    expect(res.status).toBe(409);
    expect(((await res.json()) as { code: string }).code).toBe('source_erased');
  });

  it('a fence from an artifact read covers its version and every subject in its closure', async () => {
    const e = await append('user:fe', 'E: works nights.');
    const f = await append('user:ff', 'F: has two dogs.');
    const g = await append('user:fg', 'G: learning piano.');
    const summary = (await (await writeArtifact({ sources: [e.entryId, f.entryId] })).json()) as { artifactId: string };
    const fence = await readFence(`/v1/artifacts/${summary.artifactId}`);
    // E erased: the summary's closure is affected even before it is regenerated
    await t.app.keys.destroyKey(e.keyId, { reason: 'erasure', actor: 'eraser' });
    const res = await writeArtifact({ sources: [g.entryId], readFence: fence });
    expect(res.status).toBe(409);

    // and after a regeneration, a fence of version 1 no longer holds either
    const h = await append('user:fh', 'H: plays go.');
    const other = (await (await writeArtifact({ sources: [f.entryId, h.entryId] })).json()) as { artifactId: string };
    const fence1 = await readFence(`/v1/artifacts/${other.artifactId}`);
    const regen = await t.call('POST', `/v1/artifacts/${other.artifactId}/regenerate`, { role: 'eraser', body: { excluding: [h.entryId] } });
    expect(regen.status).toBe(200);
    expect((await writeArtifact({ sources: [g.entryId], readFence: fence1 })).status).toBe(409);
    const fence2 = await readFence(`/v1/artifacts/${other.artifactId}`);
    expect((await writeArtifact({ sources: [g.entryId], readFence: fence2 })).status).toBe(201);
  });

  it('a fence from a search covers every hit', async () => {
    const i = await append('user:fi', 'I: the boat is moored at pier seven.');
    const j = await append('user:fj', 'J: collects stamps.');
    const res = await t.call('POST', '/v1/search', { body: { query: 'boat moored pier seven', k: 3, subjects: ['user:fi', 'user:fj'] } });
    expect(res.status).toBe(200);
    const { hits, readFence: fence } = (await res.json()) as { hits: Array<{ id: string }>; readFence: string };
    expect(hits.map((h) => h.id)).toContain(i.entryId);
    await t.app.keys.destroyKey(i.keyId, { reason: 'erasure', actor: 'eraser' });
    expect((await writeArtifact({ sources: [j.entryId], readFence: fence })).status).toBe(409);
  });

  it('a write whose fence covers a subject being erased right now answers erasure_in_progress', async () => {
    const k = await append('user:fk', 'K: birthday in May.');
    const l = await append('user:fl', 'L: speaks Finnish.');
    const fence = await readFence('/v1/subjects/user:fk/entries');
    await t.app.keys.fenceKey(k.keyId, 'eraser');
    const res = await writeArtifact({ sources: [l.entryId], readFence: fence });
    expect(res.status).toBe(409);
    expect(((await res.json()) as { code: string }).code).toBe('erasure_in_progress');
    await t.app.keys.unfenceKey(k.keyId, 'eraser');
    expect((await writeArtifact({ sources: [l.entryId], readFence: fence })).status).toBe(201);
  });

  it('a redaction (re-key without some entries) invalidates fences over the old key', async () => {
    const m1 = await append('user:fm', 'M: first note.');
    await append('user:fm', 'M: second note, to be redacted.');
    const n = await append('user:fn', 'N: keeps bees.');
    const fence = await readFence('/v1/subjects/user:fm/entries');
    await t.app.log.rekeySubject('user:fm', { exclude: [m1.entryId], actor: 'eraser' });
    expect((await writeArtifact({ sources: [n.entryId], readFence: fence })).status).toBe(409);
    expect((await writeArtifact({ sources: [n.entryId], readFence: await readFence('/v1/subjects/user:fm/entries') })).status).toBe(201);
  });

  it('refuses a fence this vault did not issue, or one edited by hand, with 400', async () => {
    const o = await append('user:fo', 'O: a note.');
    const fence = await readFence('/v1/subjects/user:fo/entries');
    const [prefix, body, mac] = fence.split('.') as [string, string, string];
    const flipped = `${prefix}.${body}.${mac.startsWith('A') ? 'B' : 'A'}${mac.slice(1)}`;
    const edited = `${prefix}.${Buffer.from(JSON.stringify({ at: 0, k: [] })).toString('base64url')}.${mac}`;
    for (const bad of [flipped, edited, 'rf1.x.y', 'not-a-fence']) {
      const res = await writeArtifact({ sources: [o.entryId], readFence: bad });
      expect(res.status).toBe(400);
      expect(res.headers.get('content-type')).toContain('application/problem+json');
      expect(((await res.json()) as { code: string; detail: string }).detail).toContain('readFence');
    }
    // a fence from another vault (another root key) is refused as well
    const other = await openTestApp();
    try {
      const res = await other.call('POST', '/v1/subjects/user:x/entries', { body: { text: 'x' } });
      expect(res.status).toBe(201);
      const foreign = ((await (await other.call('GET', '/v1/subjects/user:x/entries')).json()) as { readFence: string }).readFence;
      expect((await writeArtifact({ sources: [o.entryId], readFence: foreign })).status).toBe(400);
    } finally {
      await other.close();
    }
  });
});
