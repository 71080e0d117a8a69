/** Erasure on the embedded default: PGlite and the local object store, with the background worker; no re-learning until reinstated. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyCertificate } from '../../src/crypto/certificate.js';
import { isLetheError } from '../../src/errors.js';
import { openTestVault, type TestVault } from '../support/vault.js';

describe('erasure on PGlite and the local object store', () => {
  let tv: TestVault;
  beforeAll(async () => {
    tv = await openTestVault({ embedded: true, extraEnv: { LETHE_ERASURE_POLL_MS: '50' } });
  }, 120_000);
  afterAll(async () => {
    await tv?.close();
  });

  it('the background worker runs a class B erasure to completion, and the result survives a restart', async () => {
    const v = tv.app;
    expect([v.db.kind, v.objects.kind]).toEqual(['pglite', 'fs']);
    const a = await v.log.append('user:emb-a', { text: 'Anna keeps her spare key under the blue flowerpot near the gate.' }, 'writer');
    const b = await v.log.append('user:emb-b', { text: 'Ben is training for a half marathon in October.' }, 'writer');
    const s = await v.artifacts.write(
      { kind: 'summary', text: 'Anna: spare key under the blue flowerpot near the gate. Ben: half marathon in October.', sources: [a.entryId, b.entryId] },
      'writer',
    );
    const { erasureId, status } = await v.erasures.request({ subject: 'user:emb-a', publicAttributes: ['Anna'] }, 'eraser');
    expect(status).toBe('pending');
    // no settle(): the worker started with the vault claims and runs it
    const deadline = Date.now() + 30_000;
    let view = await v.erasures.get(erasureId);
    while ((view.status === 'pending' || view.status === 'running') && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 50));
      view = await v.erasures.get(erasureId);
    }
    expect(view).toMatchObject({ status: 'completed', class: 'B' });
    const summary = await v.artifacts.get(s.artifactId);
    expect(summary.version).toBe(2);
    expect(summary.text).not.toMatch(/flowerpot/);
    expect(summary.text).toContain('half marathon');
    expect((await v.search.search('spare key blue flowerpot gate', 5, { allSubjects: true })).hits.map((h) => h.text).join(' ')).not.toMatch(/flowerpot/);
    expect(verifyCertificate(view.certificate, await v.certificateKeys.publicKeys()).valid).toBe(true);

    await v.close();
    const reopened = await tv.reopen();
    const again = await reopened.erasures.get(erasureId);
    expect(again.status).toBe('completed');
    expect(again.certificate?.signature).toBe(view.certificate?.signature);
    // no re-learning, across the restart: the erased subject gets no key, lease or append
    await expect(reopened.log.append('user:emb-a', { text: 'learned again' }, 'writer')).rejects.toSatisfy((e) => isLetheError(e, 'subject_erased'));
    await expect(reopened.keys.lease('user:emb-a', 'writer')).rejects.toSatisfy((e) => isLetheError(e, 'subject_erased'));
    await expect(reopened.keys.ensureKey('user:emb-a', 'writer')).rejects.toSatisfy((e) => isLetheError(e, 'subject_erased'));
    // until an admin reinstates it (audited): then a new key, nothing of the old one
    await expect(reopened.erasures.reinstate('user:emb-b', 'never erased', 'admin')).rejects.toSatisfy((e) => isLetheError(e, 'conflict'));
    expect(await reopened.erasures.reinstate('user:emb-a', 'came back', 'admin')).toMatchObject({ erasureId });
    const fresh = await reopened.log.append('user:emb-a', { text: 'new beginning' }, 'writer');
    expect(fresh.keyId).not.toBe(a.keyId);
    expect((await reopened.log.list('user:emb-a')).map((e) => e.text)).toEqual(['new beginning']);
    expect(await reopened.audit.verify(reopened.db.db)).toMatchObject({ ok: true });
  });
});

describe('forgetting one memory on PGlite and the local object store', () => {
  let tv: TestVault;
  beforeAll(async () => {
    tv = await openTestVault({ embedded: true, extraEnv: { LETHE_ERASURE_POLL_MS: '50' } });
  }, 120_000);
  afterAll(async () => {
    await tv?.close();
  });

  it('the worker re-keys the subject without the entry, regenerates what cites it, certifies; the subject keeps its other memories and writes on', async () => {
    const v = tv.app;
    const keep = await v.log.append('user:emb-f', { text: 'Farid takes the 7:40 train to the office on Mondays.' }, 'writer');
    const gone = await v.log.append('user:emb-f', { text: 'Farid confided his therapist appointment is every Thursday at noon.' }, 'writer');
    const s = await v.artifacts.write(
      { kind: 'summary', text: 'Farid: 7:40 train on Mondays; therapist every Thursday at noon.', sources: [keep.entryId, gone.entryId] },
      'writer',
    );
    const { erasureId } = await v.erasures.forgetEntry(gone.entryId, 'eraser');
    await expect(v.log.get(gone.entryId)).rejects.toSatisfy((e) => isLetheError(e, 'entry_forgotten'));
    const deadline = Date.now() + 30_000;
    let view = await v.erasures.get(erasureId);
    while ((view.status === 'pending' || view.status === 'running') && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 50));
      view = await v.erasures.get(erasureId);
    }
    expect(view, JSON.stringify(view.steps)).toMatchObject({ status: 'completed', scope: 'records', entryIds: [gone.entryId] });
    expect(verifyCertificate(view.certificate, await v.certificateKeys.publicKeys()).valid).toBe(true);
    expect((await v.log.list('user:emb-f')).map((e) => e.entryId)).toEqual([keep.entryId]);
    const summary = await v.artifacts.get(s.artifactId);
    expect(summary.version).toBe(2);
    expect(summary.text).not.toMatch(/therapist/);
    const hits = (await v.search.search('therapist appointment every Thursday at noon', 5, { subjects: ['user:emb-f'] })).hits;
    expect(hits.map((h) => h.id)).not.toContain(gone.entryId);
    for (const h of hits) expect(h.text).not.toMatch(/therapist/);
    const later = await v.log.append('user:emb-f', { text: 'Farid switched to cycling.' }, 'writer');
    expect(later.keyId).not.toBe(keep.keyId);
    expect((await v.log.list('user:emb-f')).map((e) => e.entryId)).toEqual([keep.entryId, later.entryId]);
  });
});
