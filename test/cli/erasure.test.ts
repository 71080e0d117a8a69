/**
 * `lethe erase` and `lethe erasure show | list | watch | report` as child processes against
 * the real service, itself a child process (`lethe serve` on PostgreSQL): a class A
 * erasure followed live to `completed` (exit 0), `--no-wait` printing the id, class C
 * ending `incomplete` (exit 3) without an unlearning bound and `completed` with one;
 * bad input, a missing token or a bad URL exit 2 with a plain message and no request;
 * `erasure dismissals propose | approve | revoke`: a proposal with the eraser's token,
 * approved only with the approver's (an eraser token exits 2, forbidden); `erasure redact`
 * taking an incomplete erasure's named record away until it completes, bad ids exit 2.
 * Neither the subject id nor the token is ever printed.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { type Recorder, startRecorder } from '../support/recorder.js';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FIRST_RUN } from '../../src/erasure/machine.js';
import { MAX_PUBLIC_ATTRIBUTES } from '../../src/erasure/request.js';
import { type RunningService, runCli } from '../support/process.js';
import { type Served, serveOnPostgres } from '../support/served.js';
import { TOKENS } from '../support/vault.js';

const TIMEOUT = 60_000;
const tag = () => randomBytes(5).toString('hex');
/** Well-formed ids lethe never issued. */
const ENTRY = `entry_${'A'.repeat(22)}`;
const ERASURE = `ers_${'A'.repeat(22)}`;

let served: Served;
let service: RunningService;
/** The CLI's environment: the service's URL and the eraser's token, nothing else of the service's. */
let env: Record<string, string>;
/** A stand-in service that counts the requests it gets (to prove none was made). */
let recorder: Recorder;

beforeAll(async () => {
  served = await serveOnPostgres();
  service = served.service;
  env = { LETHE_URL: service.url, LETHE_TOKENS: `eraser=${TOKENS.eraser}` };
  recorder = await startRecorder();
}, 120_000);

afterAll(async () => {
  await served?.close();
  await recorder?.close();
});

/** A writer's call to the service (seeding). */
async function writer<T>(method: string, p: string, body: unknown, status: number): Promise<T> {
  const res = await fetch(`${service.url}${p}`, {
    method,
    headers: { authorization: `Bearer ${TOKENS.writer}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  expect(res.status, text).toBe(status);
  return JSON.parse(text) as T;
}

const append = async (subject: string, text: string) => (await writer<{ entryId: string }>('POST', `/v1/subjects/${subject}/entries`, { text }, 201)).entryId;

async function erase(args: string[], extra: Record<string, string> = {}) {
  return runCli(['erase', ...args], { ...env, ...extra });
}

/**
 * An erasure left incomplete (exit 3) by another subject's record about the subject's
 * clinic appointment (a doctor and a day of each test's own, so no other test's record matches), which its probe names: the subject, the erasure, that record, the watch.
 */
async function clinicErasure(prefix: string, visit: { doctor: string; day: string }, other: (place: string) => string) {
  const s = `user:${prefix}-${tag()}`;
  const place = `Halden${tag()}`;
  await append(s, `Appointment with Dr. ${visit.doctor} at the ${place} clinic on ${visit.day} about my knee.`);
  const record = await append(`ctx:${prefix}-other-${tag()}`, other(place));
  const erasureId = (await erase([s, '--no-wait'])).stdout.trim();
  const first = await runCli(['erasure', 'watch', erasureId], env);
  expect(first.code, first.stdout).toBe(3);
  return { s, erasureId, record, first };
}

function expectPrivate(run: { stdout: string; stderr: string }, subject: string): void {
  for (const text of [run.stdout, run.stderr]) {
    expect(text).not.toContain(subject);
    expect(text).not.toContain(TOKENS.eraser);
  }
}

describe('lethe erase', () => {
  it('follows a class A erasure live, one line per step, to a summary; exit 0; show and report read it back', { timeout: TIMEOUT }, async () => {
    const s = `user:cli-a-${tag()}`;
    await append(s, 'Ana parks her car on level 3.');
    await append(s, 'Ana is allergic to cats.');
    const run = await erase([s, '--legal-basis', 'gdpr-art17', '--reason', 'Art. 17 request by email']);
    expect(run.code, run.stderr).toBe(0);
    expectPrivate(run, s);
    const lines = run.stdout.trim().split('\n');
    const accepted = /^erasure (ers_[A-Za-z0-9_-]{22}) accepted \(pending\)$/.exec(lines[0]!);
    expect(accepted, run.stdout).not.toBeNull();
    const erasureId = accepted![1]!;
    // one "done" line per step, in the machine's order
    const done = lines.map((l) => /^\[(\d+)\/(\d+)\] (\w+) done: /.exec(l)).filter((m) => m !== null);
    expect(done.map((m) => m[3])).toEqual([...FIRST_RUN]);
    expect(done.map((m) => Number(m[1]))).toEqual(FIRST_RUN.map((_, i) => i + 1));
    expect(lines.some((l) => l.startsWith('requested: '))).toBe(true);
    expect(run.stdout).toContain(`erasure ${erasureId}: completed (class A)`);
    expect(run.stdout).toMatch(/^probe: recovered 0 \(threshold 0\.15\), 0 match\(es\)$/m);
    expect(run.stdout).toMatch(/^residuals: \d+$/m);

    const file = path.join(served.dataDir, 'report.html');
    const [show, report] = await Promise.all([runCli(['erasure', 'show', erasureId], env), runCli(['erasure', 'report', erasureId, '-o', file], env)]);
    expect(show.code, show.stderr).toBe(0);
    const view = JSON.parse(show.stdout) as { erasureId: string; status: string; class: string; legalBasis: string; certificate: { signature: string } };
    expect(view).toMatchObject({ erasureId, status: 'completed', class: 'A', legalBasis: 'gdpr-art17' });
    expect(view.certificate.signature).toEqual(expect.any(String));
    expectPrivate(show, s);

    expect(report.code, report.stderr).toBe(0);
    expect(JSON.parse(report.stdout)).toMatchObject({ erasureId, report: file, bytes: expect.any(Number) });
    const html = readFileSync(file, 'utf8');
    expect(html).toMatch(/^<!doctype html>/i);
    expect(html).toContain(erasureId);
    expect(html).not.toContain(s);
  });

  it('--no-wait prints only the erasure id and exits 0; `erasure watch` then follows it to the end', { timeout: TIMEOUT }, async () => {
    const s = `user:cli-nowait-${tag()}`;
    await append(s, 'Nora walks to work.');
    const run = await erase([s, '--no-wait']);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/^ers_[A-Za-z0-9_-]{22}\n$/);
    const erasureId = run.stdout.trim();
    const watch = await runCli(['erasure', 'watch', erasureId], env);
    expect(watch.code, watch.stderr).toBe(0);
    expect(watch.stdout).toContain(`erasure ${erasureId}: completed (class A)`);
    expectPrivate(run, s);
  });

  it('class C without an unlearning bound exits 3 naming the parametric residual; with one, exits 0 (--json lines)', { timeout: TIMEOUT }, async () => {
    const s = `user:cli-c-${tag()}`;
    const e1 = await append(s, 'Carl takes warfarin daily.');
    await writer('POST', '/v1/training-exposures', { corpus: `ft-${tag()}`, model: 'agent-ft', ids: [e1] }, 201);
    const s2 = `user:cli-c2-${tag()}`;
    const e2 = await append(s2, 'Cleo saw the Pixies in Oslo last June and kept the ticket stub.');
    await writer('POST', '/v1/training-exposures', { corpus: `ft-${tag()}`, model: 'agent-ft', ids: [e2] }, 201);
    const [run, bounded] = await Promise.all([
      erase([s]),
      erase([s2, '--unlearning-method', 'SISA retrain of shard 3', '--unlearning-bound', '0.01', '--json']),
    ]);
    expect(run.code, `${run.stdout}\n${run.stderr}`).toBe(3);
    expect(run.stdout).toMatch(/: incomplete \(class C\)$/m);
    expect(run.stdout).toMatch(/^ {2}model-weights parametric: bound unbounded$/m);
    expect(run.stderr).toMatch(/incomplete \(parametric residual\)/);
    expectPrivate(run, s);

    expect(bounded.code, bounded.stderr).toBe(0);
    const lines = bounded.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    const steps = lines.slice(0, -1) as Array<{ step: { fromStep: string | null; status: string } }>;
    expect(steps.length).toBeGreaterThan(FIRST_RUN.length);
    expect(steps.every((l) => typeof l.step === 'object')).toBe(true);
    expect(steps.map((l) => l.step.fromStep).filter((x) => x !== null)).toEqual([...FIRST_RUN]);
    const view = lines.at(-1) as { status: string; class: string; residuals: Array<{ kind: string; bound: unknown }> };
    expect(view).toMatchObject({ status: 'completed', class: 'C' });
    expect(view.residuals.find((r) => r.kind === 'parametric')?.bound).toBe(0.01);
    expectPrivate(bounded, s2);
  });

  it('`erasure list` prints a page of erasures as the service answers it: --subject, --limit, --cursor; a bad limit exits 2', {
    timeout: TIMEOUT,
  }, async () => {
    const s = `user:cli-list-${tag()}`;
    await append(s, 'Lia keeps bees.');
    const accepted = await erase([s, '--no-wait']);
    expect(accepted.code, accepted.stderr).toBe(0);
    const erasureId = accepted.stdout.trim();
    // a second erasure of its own, so that --limit 1 leaves a second page whatever ran before
    const s2 = `user:cli-list-${tag()}`;
    await append(s2, 'Lia sells the honey.');
    const other = await erase([s2, '--no-wait']);
    expect(other.code, other.stderr).toBe(0);
    type Listed = { erasures: Array<{ erasureId: string }>; nextCursor: string | null };
    const [bySubject, first, tooMany] = await Promise.all([
      runCli(['erasure', 'list', '--subject', s], env),
      runCli(['erasure', 'list', '--limit', '1'], env),
      runCli(['erasure', 'list', '--limit', '1001'], env),
    ]);
    expect(bySubject.code, bySubject.stderr).toBe(0);
    expect(JSON.parse(bySubject.stdout)).toMatchObject({ erasures: [{ erasureId }], nextCursor: null });
    expectPrivate(bySubject, s);
    expect(first.code, first.stderr).toBe(0);
    const page1 = JSON.parse(first.stdout) as Listed;
    expect(page1.erasures).toHaveLength(1);
    expect(page1.nextCursor).toEqual(expect.any(String));
    const next = await runCli(['erasure', 'list', '--limit', '1', '--cursor', page1.nextCursor!], env);
    expect(next.code, next.stderr).toBe(0);
    const page2 = JSON.parse(next.stdout) as Listed;
    expect(page2.erasures).toHaveLength(1);
    expect(page2.erasures[0]!.erasureId).not.toBe(page1.erasures[0]!.erasureId);
    expect(tooMany.code).toBe(2);
    expect(tooMany.stderr).toContain('400 validation_failed: query.limit: must be an integer from 1 to 1000');
  });

  it('an error answer from the service exits 2 with its problem detail: a subject never seen, an unknown erasure', { timeout: TIMEOUT }, async () => {
    const [unseen, unknown, wrongRole] = await Promise.all([
      erase([`user:cli-unseen-${tag()}`]),
      runCli(['erasure', 'show', `ers_${'A'.repeat(22)}`], env),
      erase([`user:cli-unseen-${tag()}`], { LETHE_TOKENS: `eraser=${TOKENS.writer}` }),
    ]);
    expect(unseen.code).toBe(2);
    expect(unseen.stderr).toMatch(/404 not_found: lethe has never seen this subject/);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('404 not_found');
    expect(wrongRole.code).toBe(2);
    expect(wrongRole.stderr).toContain('403 forbidden');
    expect(wrongRole.stderr).not.toContain(TOKENS.writer);
  });

  it('bad input exits 2 with a plain message and makes no request', { timeout: TIMEOUT }, async () => {
    const cases: Array<{ args: string[]; message: RegExp }> = [
      { args: ['erase', 'user/has space'], message: /subject must be 1 to 200 characters/ },
      { args: ['erase', 'user:ok', '--unlearning-method', 'SISA', '--unlearning-bound', 'abc'], message: /--unlearning-bound must be a number >= 0/ },
      { args: ['erase', 'user:ok', '--unlearning-method', 'SISA', '--unlearning-bound', '-1'], message: /--unlearning-bound must be a number >= 0/ },
      { args: ['erase', 'user:ok', '--legal-basis', 'gdpr-art99'], message: /--legal-basis must be one of gdpr-art17, ccpa-1798.105, contract/ },
      // the CLI's limit is the service's
      {
        args: ['erase', 'user:ok', ...Array.from({ length: MAX_PUBLIC_ATTRIBUTES + 1 }, (_, i) => ['--public-attribute', `a${i}`]).flat()],
        message: new RegExp(`--public-attribute: at most ${MAX_PUBLIC_ATTRIBUTES}$`, 'm'),
      },
      { args: ['erasure', 'show', 'not-an-erasure'], message: /an erasure id is ers_/ },
      // erasure redact: the erasure, every record and an override's reason, checked before any request
      { args: ['erasure', 'redact', 'not-an-erasure', ENTRY], message: /an erasure id is ers_/ },
      { args: ['erasure', 'redact', ERASURE, ENTRY, 'entry_short'], message: /a record id is entry_ followed by 22 characters/ },
      { args: ['erasure', 'redact', ERASURE, `art_${'A'.repeat(22)}`], message: /a record id is entry_/ },
      { args: ['erasure', 'redact', ERASURE, ENTRY, '--override', ' '], message: /--override: / },
    ];
    const runs = await Promise.all(cases.map((c) => runCli(c.args, { ...env, LETHE_URL: recorder.url })));
    runs.forEach((run, i) => {
      const c = cases[i]!;
      expect(run.code, c.args.join(' ')).toBe(2);
      expect(run.stderr, c.args.join(' ')).toMatch(c.message);
      expect(run.stdout, c.args.join(' ')).toBe('');
    });
    expect(recorder.count).toBe(0);
  });

  it('a missing token or an unusable LETHE_URL exits 2 with a clear message and makes no request', { timeout: TIMEOUT }, async () => {
    const [noToken, badUrl, emptyUrl] = await Promise.all([
      runCli(['erase', 'user:ok'], { LETHE_URL: recorder.url }),
      runCli(['erase', 'user:ok'], { ...env, LETHE_URL: 'ftp://nowhere' }),
      runCli(['erase', 'user:ok'], { ...env, LETHE_URL: '' }),
    ]);
    expect(noToken.code).toBe(2);
    expect(noToken.stderr).toContain('LETHE_TOKENS has no eraser token');
    const [plainRemote, withCredentials] = await Promise.all([
      runCli(['erase', 'user:ok'], { ...env, LETHE_URL: 'http://10.255.255.1:8787' }),
      runCli(['erase', 'user:ok'], { ...env, LETHE_URL: 'https://someone:secret@127.0.0.1:8787' }),
    ]);
    expect(plainRemote.code).toBe(2);
    expect(plainRemote.stderr).toContain('a token is sent over https:// only, or plain http:// to a loopback host');
    expect(withCredentials.code).toBe(2);
    expect(withCredentials.stderr).toContain('LETHE_URL must not carry credentials');
    expect(withCredentials.stderr).not.toContain('secret');
    for (const run of [badUrl, emptyUrl]) {
      expect(run.code).toBe(2);
      expect(run.stderr).toContain('LETHE_URL must be an http(s):// URL');
    }
    expect(recorder.count).toBe(0);
  });
});

describe('lethe erasure dismissals', () => {
  it('propose (eraser), approve (approver: the erasure completes on the ruling), revoke; an eraser token cannot approve; bad ids exit 2 with no request', {
    timeout: 120_000,
  }, async () => {
    const board = (place: string) => `Public notice: Dr. Okonkwo at the ${place} clinic is closed on 14 March for renovation.`;
    const { s, erasureId, record: notice } = await clinicErasure('cli-clinic', { doctor: 'Okonkwo', day: '14 March' }, board);
    // `erasure dismiss` is `erasure dismissals propose`
    const proposed = await runCli(['erasure', 'dismiss', erasureId, notice, '--reason', 'A public closure notice: it names no patient.'], env);
    expect(proposed.code, proposed.stderr).toBe(0);
    const { dismissalId, status } = JSON.parse(proposed.stdout) as { dismissalId: string; status: string };
    expect(status).toBe('incomplete');
    const byEraser = await runCli(['erasure', 'dismissals', 'approve', erasureId, dismissalId], { ...env, LETHE_TOKENS: `approver=${TOKENS.eraser}` });
    expect(byEraser.code).toBe(2);
    expect(byEraser.stderr).toMatch(/403 forbidden/);
    const noToken = await runCli(['erasure', 'dismissals', 'approve', erasureId, dismissalId], env);
    expect(noToken.code).toBe(2);
    expect(noToken.stderr).toContain('LETHE_TOKENS has no approver token');
    const approved = await runCli(['erasure', 'dismissals', 'approve', erasureId, dismissalId], { ...env, LETHE_TOKENS: `approver=${TOKENS.approver}` });
    expect(approved.code, approved.stderr).toBe(0);
    expect(JSON.parse(approved.stdout)).toEqual({ erasureId, status: 'running', dismissalId });
    expect((await runCli(['erasure', 'watch', erasureId], env)).code).toBe(0);
    const revoked = await runCli(['erasure', 'dismissals', 'revoke', erasureId, dismissalId, '--reason', 'reconsidered'], {
      ...env,
      LETHE_TOKENS: `approver=${TOKENS.approver}`,
    });
    expect(revoked.code, revoked.stderr).toBe(0);
    expect((await runCli(['erasure', 'watch', erasureId], env)).code).toBe(3);
    const bad = await Promise.all([
      runCli(['erasure', 'dismissals', 'approve', erasureId, 'dsm_nope'], { ...env, LETHE_URL: recorder.url, LETHE_TOKENS: `approver=${TOKENS.approver}` }),
      runCli(['erasure', 'dismissals', 'propose', erasureId, notice, '--reason', ' '], { ...env, LETHE_URL: recorder.url }),
      runCli(['erasure', 'dismiss', erasureId, notice, '--reason', ' '], { ...env, LETHE_URL: recorder.url }),
    ]);
    expect(bad.map((r) => r.code)).toEqual([2, 2, 2]);
    expect(bad[0]!.stderr).toMatch(/a dismissal id is dsm_/);
    expect(bad[1]!.stderr).toMatch(/--reason: 1 to 500 characters/);
    expect(bad[2]!.stderr).toMatch(/--reason: 1 to 500 characters/);
    expect(recorder.count).toBe(0);
    for (const run of [proposed, approved, revoked, byEraser]) expectPrivate(run, s);
  });
});

describe('lethe erasure redact', () => {
  it('redacts the record the probe named and, with --watch, follows the erasure to completed (exit 0); a second redaction exits 2 (409 conflict)', {
    timeout: 120_000,
  }, async () => {
    const diary = (place: string) => `Saw the patient at the ${place} clinic with Dr. Lindqvist on 2 June, her knee again.`;
    const { s, erasureId, record: note, first } = await clinicErasure('cli-redact', { doctor: 'Lindqvist', day: '2 June' }, diary);
    expect(first.stdout).toContain(`match: ${note}`);
    const redacted = await runCli(['erasure', 'redact', erasureId, note, '--watch'], env);
    expect(redacted.code, redacted.stderr).toBe(0);
    expect(redacted.stdout).toMatch(new RegExp(`^erasure ${erasureId}: 1 record\\(s\\) to redact, running$`, 'm'));
    expect(redacted.stdout).toMatch(new RegExp(`^erasure ${erasureId}: completed`, 'm'));
    const again = await runCli(['erasure', 'redact', erasureId, note, '--json'], env);
    expect(again.code).toBe(2);
    expect(again.stderr).toMatch(/409 conflict/);
    for (const run of [first, redacted, again]) expectPrivate(run, s);
  });
});
