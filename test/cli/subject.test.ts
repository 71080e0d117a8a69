/**
 * `lethe subject reinstate` against a running service on PostgreSQL: the admin token
 * from the admin token of LETHE_TOKENS only; a bad subject or reason exits 2 before any request; the
 * service's refusals (403, 409) exit 2 with its problem; no answer exits 1; a
 * reinstated subject takes a new key.
 */
import { randomBytes } from 'node:crypto';
import { type Recorder, startRecorder } from '../support/recorder.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningService, runCli } from '../support/process.js';
import { type Served, serveOnPostgres } from '../support/served.js';
import { TOKENS } from '../support/vault.js';

const TIMEOUT = 120_000;
let served: Served;
let service: RunningService;
/** A stand-in service that counts the requests it gets (to prove none was made). */
let recorder: Recorder;

beforeAll(async () => {
  served = await serveOnPostgres();
  service = served.service;
  recorder = await startRecorder();
}, TIMEOUT);

afterAll(async () => {
  await served?.close();
  await recorder?.close();
});

async function call<T>(method: string, p: string, role: keyof typeof TOKENS, body?: unknown): Promise<{ status: number; body: T }> {
  const res = await fetch(`${service.url}${p}`, {
    method,
    headers: { authorization: `Bearer ${TOKENS[role]}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: res.status, body: JSON.parse(await res.text()) as T };
}

/** A subject with one entry, erased to completion by the service's worker. */
async function erasedSubject(): Promise<string> {
  const s = `user:cli-tomb-${randomBytes(4).toString('hex')}`;
  expect((await call('POST', `/v1/subjects/${s}/entries`, 'writer', { text: 'Zoe grows chillies.' })).status).toBe(201);
  const { status, body } = await call<{ erasureId: string }>('POST', '/v1/erasures', 'eraser', { subject: s });
  expect(status).toBe(202);
  const deadline = Date.now() + 60_000;
  for (;;) {
    const view = await call<{ status: string }>('GET', `/v1/erasures/${body.erasureId}`, 'eraser');
    if (view.body.status !== 'pending' && view.body.status !== 'running') {
      expect(view.body.status).toBe('completed');
      return s;
    }
    if (Date.now() > deadline) throw new Error('the erasure did not finish within 60 s');
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('lethe subject reinstate', () => {
  it('lifts the tombstone with the admin token of LETHE_TOKENS: exit 0 and JSON; the subject then takes a new key; again: exit 2 with the 409', {
    timeout: TIMEOUT,
  }, async () => {
    const s = await erasedSubject();
    expect((await call('PUT', `/v1/subjects/${s}/key`, 'writer')).status).toBe(410);
    const env = { LETHE_URL: service.url, LETHE_TOKENS: `admin=${TOKENS.admin}` };
    const run = await runCli(['subject', 'reinstate', s, '--reason', 'signed up again'], env);
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toEqual({ subject: s, reinstated: true });
    expect(`${run.stdout}${run.stderr}`).not.toContain(TOKENS.admin);
    expect((await call('PUT', `/v1/subjects/${s}/key`, 'writer')).status).toBe(201);

    const again = await runCli(['subject', 'reinstate', s, '--reason', 'signed up again'], env);
    expect(again.code).toBe(2);
    expect(again.stderr).toMatch(/the service answered 409 conflict: the subject is not erased/);
  });

  it("refuses: no admin token in LETHE_TOKENS, a bad subject, an empty or missing reason (exit 2, no request); a writer token (the service's 403, exit 2); no service (exit 1)", {
    timeout: TIMEOUT,
  }, async () => {
    const s = await erasedSubject();
    const before = recorder.count;
    const none = await runCli(['subject', 'reinstate', s, '--reason', 'x'], { LETHE_URL: recorder.url });
    expect(none.code).toBe(2);
    expect(none.stderr).toContain('LETHE_TOKENS has no admin token');
    const env = { LETHE_URL: recorder.url, LETHE_TOKENS: `admin=${TOKENS.admin}` };
    const [badSubject, emptyReason, noReason] = await Promise.all([
      runCli(['subject', 'reinstate', 'user/has space', '--reason', 'x'], env),
      runCli(['subject', 'reinstate', s, '--reason', '   '], env),
      runCli(['subject', 'reinstate', s], env),
    ]);
    expect(badSubject.code).toBe(2);
    expect(badSubject.stderr).toContain('the subject must be');
    expect(emptyReason.code).toBe(2);
    expect(emptyReason.stderr).toContain('--reason: 1 to 500 characters');
    expect(noReason.code).toBe(2);
    expect(noReason.stderr).toMatch(/--reason/);
    expect(recorder.count).toBe(before);

    const writer = await runCli(['subject', 'reinstate', s, '--reason', 'x'], { LETHE_URL: service.url, LETHE_TOKENS: `admin=${TOKENS.writer}` });
    expect(writer.code).toBe(2);
    expect(writer.stderr).toMatch(/the service answered 403 forbidden/);
    expect(writer.stderr).not.toContain(TOKENS.writer);
    expect((await call('PUT', `/v1/subjects/${s}/key`, 'writer')).status).toBe(410);

    const unreachable = await runCli(['subject', 'reinstate', s, '--reason', 'x'], { LETHE_URL: 'http://127.0.0.1:9', LETHE_TOKENS: `admin=${TOKENS.admin}` });
    expect(unreachable.code).toBe(1);
    expect(unreachable.stderr).toMatch(/did not answer/);
  });
});
