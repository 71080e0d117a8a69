/**
 * The erasure probe never certifies over text it has not seen (src/erasure/steps/probe.ts):
 * entries a writer registered before the probe started wait in the indexing queue
 * (src/log/indexer.ts) until indexed. The probe waits for them (bounded); one still
 * queued past the bound leaves the erasure `incomplete` with an `unindexed` residual
 * naming the count. On PostgreSQL and a real MinIO.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../src/app/open.js';
import { toBase64Url, zeroize } from '../../src/crypto/index.js';
import { newId, newSegmentKey } from '../../src/ids.js';
import { sealEntry } from '../../src/log/frame.js';
import { encodeSegment } from '../../src/log/segment.js';
import { minioEnv, openTestVault, type TestVault } from '../support/vault.js';

const tag = () => randomBytes(5).toString('hex');

/** A writer's registration of `texts` for `subject` (sealed with record keys, uploaded, registered): queued for the indexer. */
async function registerTexts(vault: App, subject: string, texts: readonly string[]): Promise<string[]> {
  const { keyId, firstSeq } = await vault.log.reserve(subject, texts.length, 'writer');
  const { dek } = await vault.keys.dekFor(keyId);
  try {
    const sealed = texts.map((text, i) => {
      const entryId = newId('entry');
      return { entryId, seq: firstSeq + i, ...sealEntry(dek, { keyId, entryId, seq: firstSeq + i }, { text, kind: null, metadata: null }) };
    });
    const { bytes, places } = encodeSegment(sealed.map((s) => s.envelope));
    const segment = newSegmentKey();
    await vault.objects.put(segment, bytes);
    const results = await vault.log.register(
      segment,
      sealed.map((s, i) => ({ entryId: s.entryId, subject, keyId, seq: s.seq, wrappedKey: toBase64Url(s.wrappedKey), ...places[i]! })),
    );
    expect(results.every((r) => r.status === 'registered')).toBe(true);
    return sealed.map((s) => s.entryId);
  } finally {
    zeroize(dek);
  }
}

describe('the erasure probe and the indexing queue', () => {
  let tv: TestVault;

  beforeAll(async () => {
    // no indexer runs unless a test starts it; the probe waits 50 ms in place, at most 3 parks
    tv = await openTestVault({
      extraEnv: minioEnv('lethe-pq'),
      app: { erasureWorker: false, indexWorker: false, probeQueueWait: { waitMs: 50, parks: 3 } },
    });
  }, 60_000);

  afterAll(async () => {
    await tv?.close();
  });

  const erase = async (subject: string) => {
    const { erasureId } = await tv.app.erasures.request({ subject }, 'eraser');
    return tv.app.erasures.settle(erasureId);
  };

  it('an entry queued before the probe and never indexed: the erasure ends incomplete, the residual naming the count', async () => {
    const A = `user:pq-a-${tag()}`;
    const canary = `PQCANARY${tag()}`;
    await tv.app.log.append(A, { text: `Anna's door code is ${canary}, written on the fridge` }, 'writer');
    // another subject's writer copies A's words: registered, queued, never indexed (no worker runs)
    const [copy] = await registerTexts(tv.app, `user:pq-b-${tag()}`, [`Overheard: Anna's door code is ${canary}, written on the fridge`]);
    const view = await erase(A);
    expect(view.status).toBe('incomplete');
    expect(view.probe).toMatchObject({ unindexed: 1 });
    expect(view.probe.matches.map((m) => m.id)).not.toContain(copy);
    const residual = view.residuals.find((r) => r.kind === 'unindexed');
    expect(residual).toMatchObject({ tier: 'vector-index', bound: '1 unprobed entry, until probed' });
    expect(residual!.detail).toMatch(/^1 entry registered by writers before the probe started/);
    expect(view.certificate!.payload.probe).toMatchObject({ unindexed: 1 });
    expect(view.steps.find((s) => s.name === 'probe')!.detail).toMatch(/1 entry registered before the probe started still not indexed after 3 waits/);
    // the queue drains for the next tests
    await tv.app.log.drained();
  });

  it('the probe waits for the entries queued before it started, and finds the erased content in them once indexed', async () => {
    const A = `user:pq-c-${tag()}`;
    const canary = `PQWAIT${tag()}`;
    await tv.app.log.append(A, { text: `Carl hides the spare key ${canary} under the blue flowerpot` }, 'writer');
    const [copy] = await registerTexts(tv.app, `user:pq-d-${tag()}`, [`Note to self: Carl hides the spare key ${canary} under the blue flowerpot`]);
    const { erasureId } = await tv.app.erasures.request({ subject: A }, 'eraser');
    // run the erasure until its probe parks on the queue, then let the indexer run
    let parked = false;
    for (let i = 0; i < 200 && !parked; i++) {
      await tv.app.erasures.drain();
      const view = await tv.app.erasures.get(erasureId);
      parked = /wait in the indexing queue/.test(view.steps.find((s) => s.name === 'probe')?.detail ?? '');
      if (!parked) await new Promise((r) => setTimeout(r, 20));
    }
    expect(parked).toBe(true);
    tv.app.log.indexer.start();
    try {
      const view = await tv.app.erasures.settle(erasureId);
      // the copy was indexed while the probe waited, and the probe found it
      expect(view.probe.unindexed).toBeUndefined();
      expect(view.probe.matches.map((m) => m.id)).toContain(copy);
      expect(view.residuals.map((r) => r.kind)).not.toContain('unindexed');
      expect(view.residuals.map((r) => r.kind)).toContain('cross-subject');
    } finally {
      await tv.app.log.indexer.stop();
    }
  });
});
