/**
 * The `Lethe` facade (src/client/lethe.ts) against a vault served over real HTTP, on
 * PostgreSQL with the erasure worker running: entries (service appends, idempotent
 * retries, reads with fences, lists followed page by page), artifacts with read
 * fences (create, get, list, provenance, regenerate), a subject's erasure followed
 * over its event stream to the end, its certificate downloaded and verified against
 * the vault's keys (and a forged one refused), subject keys and leases, backups, and
 * errors as typed LetheErrors.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ErasureTransition, isLetheError, Lethe, LetheError, ServiceError } from '../../src/client/index.js';
import { signCertificate } from '../../src/crypto/certificate.js';
import { deriveSubkey } from '../../src/crypto/index.js';
import { asKeyringBeforeSigningKeys, TOKENS } from '../support/vault.js';
import { type ServedVault, serveTestVault } from './served.js';

let v: ServedVault;
let lethe: Lethe;

beforeAll(async () => {
  v = await serveTestVault();
  // a vault from before signing keys: it lists the retired root-derived key, whose private part the root key derives again
  asKeyringBeforeSigningKeys(v.t.config.keyringDir);
  lethe = new Lethe({
    baseUrl: v.baseUrl,
    tokens: { writer: TOKENS.writer, eraser: TOKENS.eraser, approver: TOKENS.approver, backup: TOKENS.backup, admin: TOKENS.admin },
  });
}, 180_000);
afterAll(async () => {
  await v?.close();
});

async function rejection(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (e) {
    return e;
  }
  throw new Error('expected a rejection');
}

describe('entries', () => {
  it('appends through the service (an idempotent retry stores nothing), reads one with its fence, and lists a subject page after page', async () => {
    const subject = 'user:client-ana';
    const appended = [];
    for (let i = 1; i <= 5; i++) appended.push(await lethe.entries.append(subject, { text: `ana note number ${i}`, kind: 'note', metadata: { n: i } }));
    const first = await lethe.entries.append(subject, { text: 'ana keyed note' }, { idempotencyKey: 'ana-key-1' });
    const again = await lethe.entries.append(subject, { text: 'ana keyed note' }, { idempotencyKey: 'ana-key-1' });
    expect(first.replayed).toBe(false);
    expect(again).toEqual({ ...first, replayed: true });

    const one = await lethe.entries.get(appended[2]!.entryId);
    expect(one).toMatchObject({ entryId: appended[2]!.entryId, text: 'ana note number 3', kind: 'note', metadata: { n: 3 } });
    expect(typeof one.readFence).toBe('string');

    const listed = [];
    for await (const e of lethe.entries.list(subject, { limit: 2 })) listed.push(e.text);
    expect(listed).toEqual(['ana note number 1', 'ana note number 2', 'ana note number 3', 'ana note number 4', 'ana note number 5', 'ana keyed note']);
    const pages = [];
    for await (const p of lethe.entries.pages(subject, { limit: 2 })) pages.push(p);
    expect(pages.map((p) => p.entries.length)).toEqual([2, 2, 2]);
    expect(pages.map((p) => p.nextCursor === null)).toEqual([false, false, true]);
    expect(pages.every((p) => typeof p.readFence === 'string')).toBe(true);
  });

  it('answers errors as typed LetheErrors with the service code; a role without a token is refused before any request', async () => {
    const missing = await rejection(lethe.entries.get('entry_AAAAAAAAAAAAAAAAAAAAAA'));
    expect(missing).toBeInstanceOf(ServiceError);
    expect(missing).toMatchObject({ code: 'not_found', status: 404 });
    const malformed = await rejection(lethe.entries.get('not-an-id'));
    expect(malformed).toMatchObject({ code: 'validation_failed', status: 400 });

    const writerOnly = new Lethe({ baseUrl: v.baseUrl, tokens: { writer: TOKENS.writer } });
    const refused = await rejection(writerOnly.erase('user:client-ana'));
    expect(isLetheError(refused, 'validation_failed')).toBe(true);
    expect(refused).not.toBeInstanceOf(ServiceError);
    expect(String((refused as Error).message)).toContain('eraser');

    // the writer token may not erase: the service's 403, as a typed error that never shows the token
    const wrongRole = new Lethe({ baseUrl: v.baseUrl, token: TOKENS.writer });
    const forbidden = await rejection(wrongRole.erase('user:client-ana'));
    expect(forbidden).toMatchObject({ code: 'forbidden', status: 403 });
    expect(String((forbidden as Error).message)).not.toContain(TOKENS.writer);
    expect(() => new Lethe({ baseUrl: v.baseUrl })).toThrow(LetheError);
  });
});

describe('artifacts, erasure and certificates', () => {
  it('derives a summary with read fences; the erasure of one of its subjects, followed live, regenerates it from the other and ends with a certificate that verifies', async () => {
    const bo = 'user:client-bo';
    const cy = 'user:client-cy';
    const b1 = await lethe.entries.append(bo, { text: 'Bo keeps vintage harmonicas in a walnut cabinet.' });
    const b2 = await lethe.entries.append(bo, { text: 'Bo is learning Icelandic verbs before the Reykjavik trip.' });
    const c1 = await lethe.entries.append(cy, { text: 'Cy grows chili peppers on the balcony greenhouse.' });
    const fences = [
      (await lethe.entries.get(b1.entryId)).readFence,
      (await lethe.entries.get(b2.entryId)).readFence,
      (await lethe.entries.get(c1.entryId)).readFence,
    ];
    const summary = await lethe.artifacts.create({
      kind: 'summary',
      text: 'Bo keeps vintage harmonicas in a walnut cabinet. Bo is learning Icelandic verbs before the Reykjavik trip. Cy grows chili peppers on the balcony greenhouse.',
      sources: [b1.entryId, b2.entryId, c1.entryId],
      readFences: fences,
    });
    expect(summary).toMatchObject({ version: 1, subjects: 2 });
    const read = await lethe.artifacts.get(summary.artifactId);
    expect(read).toMatchObject({ artifactId: summary.artifactId, kind: 'summary', version: 1 });
    expect([...read.sources].sort()).toEqual([b1.entryId, b2.entryId, c1.entryId].sort());
    const provenance = await lethe.artifacts.provenance(summary.artifactId);
    expect(provenance.subjects).toBe(2);
    expect(provenance.sources.map((s) => s.id).sort()).toEqual([b1.entryId, b2.entryId, c1.entryId].sort());
    const listed = [];
    for await (const a of lethe.artifacts.list({ limit: 1 })) listed.push(a.artifactId);
    expect(listed).toContain(summary.artifactId);

    // a digest over the summary, then the summary regenerated by hand without one of its sources: the digest follows
    const digest = await lethe.artifacts.create({
      kind: 'digest',
      text: 'Digest: harmonicas, Icelandic, chili peppers.',
      sources: [summary.artifactId],
      readFences: [read.readFence],
    });
    const regenerated = await lethe.artifacts.regenerate(summary.artifactId, { excluding: [b2.entryId] });
    expect(regenerated.regenerated.map((r) => r.artifactId).sort()).toEqual([summary.artifactId, digest.artifactId].sort());
    expect((await lethe.artifacts.get(summary.artifactId)).text).not.toContain('Icelandic');

    const requested = await lethe.erase({ subject: bo, reason: 'the user asked' });
    expect(requested.created).toBe(true);
    const steps: ErasureTransition[] = [];
    const view = await lethe.erasures.wait(requested.erasureId, { onStep: (t) => steps.push(t), timeoutMs: 120_000 });
    expect(view.status, JSON.stringify(view.steps)).toBe('completed');
    expect(view.class).toBe('B');
    expect(steps.length).toBeGreaterThan(0);
    expect(steps.map((t) => t.fromStep)).toEqual(expect.arrayContaining(['classify', 'destroy', 'cascade', 'certify']));
    // the stream of an erasure that has ended replays its timeline and ends
    const replay = [];
    for await (const t of lethe.erasures.events(requested.erasureId)) replay.push(t.id);
    expect(replay).toEqual(steps.map((t) => t.id));

    const after = await lethe.artifacts.get(summary.artifactId);
    expect(after.text).toContain('chili peppers');
    expect(after.text).not.toMatch(/harmonica|Icelandic/);

    const verdict = await lethe.certificates.verifyErasure(requested.erasureId);
    expect(verdict).toMatchObject({ valid: true, keyState: 'current' });
    const keys = await lethe.certificates.keys();
    expect(keys[0]).toMatchObject({ state: 'current', algorithm: 'Ed25519', keyId: verdict.keyId });
    const forged = { ...verdict.certificate, payload: { ...verdict.certificate.payload, status: 'completed', class: 'A' } };
    expect(await lethe.certificates.verify(forged)).toMatchObject({ valid: false });
    // the key a certificate carries proves nothing: a certificate signed by another key is refused
    expect(await lethe.certificates.verify(verdict.certificate, { keys: ['AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA'] })).toMatchObject({ valid: false });
    // a retired key signed nothing after its retirement: one dated later is refused (the root-derived key, derived again from the root key)
    const retired = keys.find((k) => k.origin === 'root-derived')!;
    const rootDerived = deriveSubkey(Buffer.from(v.t.env.LETHE_ROOT_KEY!, 'base64'), 'certificate-signing');
    const dated = (ms: number) =>
      signCertificate(
        { ...verdict.certificate.payload, signingKeyId: retired.keyId, issuedAt: new Date(Date.parse(retired.retiredAt!) + ms).toISOString() },
        rootDerived,
      );
    expect(await lethe.certificates.verify(dated(60_000))).toMatchObject({
      valid: false,
      keyId: retired.keyId,
      reason: /after its signing key .* was retired at/,
    });
    expect(await lethe.certificates.verify(dated(-60_000))).toMatchObject({ valid: true, keyId: retired.keyId, keyState: 'retired' });

    const gone = await rejection(lethe.entries.get(b1.entryId));
    expect(gone).toMatchObject({ status: 410 });
    expect((await lethe.erasures.get(requested.erasureId)).status).toBe('completed');
    expect(await lethe.erasures.report(requested.erasureId)).toMatch(/^<!doctype html>/i);

    // no re-learning: the erased subject is refused until an admin reinstates it
    expect(await rejection(lethe.entries.append(bo, { text: 'Bo is back' }))).toMatchObject({ code: 'subject_erased', status: 410 });
    expect(await lethe.subjects.reinstate(bo, 'the person signed up again')).toEqual({ subject: bo, reinstated: true });
    expect(await rejection(lethe.subjects.reinstate(bo, 'twice'))).toMatchObject({ code: 'conflict', status: 409 });
    await lethe.entries.append(bo, { text: 'Bo is back' });
    expect((await lethe.entries.page(bo)).entries.map((e) => e.text)).toEqual(['Bo is back']);
  });

  it('forgets single memories of a living subject (DELETE /v1/entries/{id}, or entryIds): gone at once, certified, the rest kept', async () => {
    const fin = 'user:client-fin';
    const e1 = await lethe.entries.append(fin, { text: 'Fin parks the blue kayak behind the boathouse.' });
    const e2 = await lethe.entries.append(fin, { text: 'Fin collects enamel badges from lighthouses.' });
    const e3 = await lethe.entries.append(fin, { text: 'Fin bakes sourdough with rye every Sunday.' });

    const forgotten = await lethe.forget(e1.entryId);
    expect(forgotten.created).toBe(true);
    const again = await lethe.forget(e1.entryId);
    expect(again).toMatchObject({ erasureId: forgotten.erasureId, created: false });
    expect(await rejection(lethe.entries.get(e1.entryId))).toMatchObject({ code: 'entry_forgotten', status: 410 });
    const one = await lethe.erasures.wait(forgotten.erasureId, { timeoutMs: 120_000 });
    expect(one, JSON.stringify(one.steps.filter((st) => st.status === 'failed'))).toMatchObject({
      status: 'completed',
      scope: 'records',
      entryIds: [e1.entryId],
    });
    expect((await lethe.certificates.verifyErasure(forgotten.erasureId)).valid).toBe(true);

    const some = await lethe.erase({ subject: fin, entryIds: [e2.entryId], reason: 'asked to forget it' });
    const two = await lethe.erasures.wait(some.erasureId, { timeoutMs: 120_000 });
    expect(two, JSON.stringify(two.steps.filter((st) => st.status === 'failed'))).toMatchObject({
      status: 'completed',
      scope: 'records',
      entryIds: [e2.entryId],
    });

    const left = [];
    for await (const e of lethe.entries.list(fin)) left.push(e.entryId);
    expect(left).toEqual([e3.entryId]);
    expect((await lethe.entries.get(e3.entryId)).text).toBe('Fin bakes sourdough with rye every Sunday.');
    const listed = [];
    for await (const e of lethe.erasures.list({ subject: fin, limit: 1 })) listed.push(e.erasureId);
    expect(listed).toEqual([forgotten.erasureId, some.erasureId]);
  });
});

describe('bulk erasure', () => {
  it('requestMany erases many subjects, each its own erasure and certificate; a subject never seen is refused in its item alone', async () => {
    const subjects = ['user:client-bulk-kai', 'user:client-bulk-lin', 'user:client-bulk-mo'];
    const texts = ['Kai restores letterpress type cases.', 'Lin breeds axolotls in a garage tank.', 'Mo climbs sea stacks at low tide.'];
    for (const [i, s] of subjects.entries()) await lethe.entries.append(s, { text: texts[i]! });
    const answer = await lethe.erasures.requestMany({
      subjects: [subjects[0]!, 'user:client-bulk-never', subjects[1]!, subjects[2]!],
      legalBasis: 'gdpr-art17',
    });
    expect(answer).toMatchObject({ created: 3, open: 0, refused: 1 });
    expect(answer.erasures[1]).toEqual({ index: 1, error: { code: 'not_found', detail: expect.any(String) } });
    const ids = answer.erasures.flatMap((i) => ('erasureId' in i ? [i.erasureId] : []));
    expect(ids).toHaveLength(3);
    for (const id of ids) {
      expect((await lethe.erasures.wait(id, { timeoutMs: 120_000 })).status).toBe('completed');
      expect(await lethe.certificates.verifyErasure(id)).toMatchObject({ valid: true });
    }
    const refused = await rejection(lethe.erasures.requestMany({ subjects: [subjects[0]!, subjects[0]!] }));
    expect(isLetheError(refused) && refused.code).toBe('validation_failed');
  });
});

describe('bulk key creation', () => {
  it('ensureKeys creates keys for many subjects in requests of 10,000, answers existing keys and refusals in order, never a DEK', async () => {
    const existing = await lethe.subjects.ensureKey('user:bulk-client-0');
    const subjects = Array.from({ length: 10_050 }, (_, i) => `user:bulk-client-${i}`);
    const batch = await lethe.subjects.ensureKeys(subjects);
    expect(batch).toMatchObject({ created: 10_049, existing: 1, refused: 0 });
    expect(batch.keys).toHaveLength(10_050);
    expect(batch.keys.map((k) => k.subject)).toEqual(subjects);
    expect(batch.keys[0]).toEqual({ subject: 'user:bulk-client-0', status: 'existing', keyId: existing.keyId, createdAt: existing.createdAt });
    expect(batch.keys.every((k) => !('dek' in k))).toBe(true);
    const again = await lethe.subjects.ensureKeys(subjects.slice(10_000));
    expect(again).toMatchObject({ created: 0, existing: 50 });
    expect(await rejection(lethe.subjects.ensureKeys(['user:bulk-client-1', 'user:bulk-client-1']))).toMatchObject({ code: 'validation_failed', status: 400 });
    expect(await rejection(lethe.subjects.ensureKeys([]))).toMatchObject({ code: 'validation_failed' });
  });
});

describe('subject keys and backups', () => {
  it('leases a subject key (32 bytes) and releases the lease; takes a backup that the list then shows', async () => {
    const lease = await lethe.subjects.lease('user:client-dee');
    expect(lease.dek).toHaveLength(32);
    expect(lease.leaseId).toMatch(/^lease_/);
    const key = await lethe.subjects.ensureKey('user:client-dee');
    expect(key).toMatchObject({ keyId: lease.keyId, state: 'active' });
    expect(await lethe.subjects.validity([lease.keyId])).toEqual({ [lease.keyId]: 'active' });
    lease.dek.fill(0);
    // released when done: 204, and again 204; a lease lethe never handed out for the subject is 404
    await lethe.subjects.releaseLease('user:client-dee', lease.leaseId);
    await lethe.subjects.releaseLease('user:client-dee', lease.leaseId);
    expect(await rejection(lethe.subjects.releaseLease('user:client-eve', lease.leaseId))).toMatchObject({ code: 'not_found', status: 404 });

    const backup = await lethe.backups.run();
    const listed = [];
    for await (const b of lethe.backups.list({ limit: 1 })) listed.push(b.backupId);
    expect(listed).toContain(backup.backupId);
  });
});

describe('dismissals', () => {
  it('proposes with the eraser token, approves with the approver token (the erasure completes on a ruling), revokes (incomplete again); a near copy is near_copy', async () => {
    const place = `Halden${Date.now()}`;
    await lethe.entries.append('user:client-clinic', { text: `Appointment with Dr. Okonkwo at the ${place} clinic on 14 March about my knee.` });
    const notice = await lethe.entries.append('ctx:client-board', {
      text: `Public notice: Dr. Okonkwo at the ${place} clinic is closed on 14 March for renovation.`,
    });
    const copy = await lethe.entries.append('ctx:client-quote', { text: `Appointment with Dr. Okonkwo at the ${place} clinic on 14 March about my knee.` });
    const { erasureId } = await lethe.erasures.request({ subject: 'user:client-clinic' });
    expect((await lethe.erasures.wait(erasureId, { timeoutMs: 120_000 })).status).toBe('incomplete');
    const refused = await rejection(lethe.erasures.dismiss(erasureId, [{ id: copy.entryId, reason: 'a quote' }]));
    expect(refused).toBeInstanceOf(LetheError);
    expect((refused as LetheError).code).toBe('near_copy');
    await lethe.erasures.redact(erasureId, [copy.entryId]);
    expect((await lethe.erasures.wait(erasureId, { timeoutMs: 120_000 })).status).toBe('incomplete');
    const proposed = await lethe.erasures.dismiss(erasureId, [{ id: notice.entryId, reason: 'A public closure notice: it names no patient.' }]);
    expect(proposed).toEqual({ erasureId, status: 'incomplete', dismissalId: expect.stringMatching(/^dsm_/) });
    expect(await lethe.erasures.approveDismissal(erasureId, proposed.dismissalId)).toEqual({ erasureId, status: 'running', dismissalId: proposed.dismissalId });
    const ruled = await lethe.erasures.wait(erasureId, { timeoutMs: 120_000 });
    expect(ruled.status).toBe('completed');
    expect(ruled.readableByRuling).toEqual([notice.entryId]);
    expect((await lethe.erasures.revokeDismissal(erasureId, proposed.dismissalId, { reason: 'reconsidered' })).status).toBe('running');
    const again = await lethe.erasures.wait(erasureId, { timeoutMs: 120_000 });
    expect(again.status).toBe('incomplete');
    expect(again.probe.matches.map((m) => m.id)).toEqual([notice.entryId]);
  });
});
