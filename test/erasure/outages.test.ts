/**
 * Erasures ride out outages, and a failed one can be taken up again.
 *
 * - MinIO stopped for longer than the old five-attempt window: the erasure keeps
 *   retrying (its view shows the attempts, the last error and the next attempt's
 *   time; the retries counter counts them) and completes once MinIO is back.
 * - MinIO frozen (SIGSTOP): store calls time out instead of hanging the step; the
 *   erasure completes after SIGCONT.
 * - A step past its deadline (the store's own timeout set far longer): the claim is
 *   given up and the attempt counted; the abandoned steps' late writes are refused,
 *   so each step commits exactly once.
 * - A permanent failure (the embedder refuses): the erasure fails, says what it left
 *   (key fenced, not destroyed, data readable); resume → completes; a resume of a
 *   running erasure, an unknown one, or one a newer erasure took over → 409 / 404;
 *   `lethe erasure resume` exits non-zero on those.
 *
 * Each block runs on this file's own MinIO, stopped and frozen at will; backoff
 * settings are small so the retries of minutes run in seconds.
 */
import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { serve, type ServerType } from '@hono/node-server';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { minioBinary, type MinioServer, startMinio } from '../../infra/minio-server.js';
import { queryRows } from '../../src/db/client.js';
import type { App } from '../../src/app/app.js';
import { FIRST_RUN } from '../../src/erasure/machine.js';
import type { ErasureView } from '../../src/erasure/view.js';
import { LetheError } from '../../src/errors.js';
import { createHttpApp } from '../../src/http/app.js';
import { TokenStore } from '../../src/http/auth.js';
import { type Embedder, HashingEmbedder } from '../../src/vectors/embedder.js';
import { expectProblem, ok } from '../support/http.js';
import { runCli } from '../support/process.js';
import { openTestVault, type TestVault, TOKENS } from '../support/vault.js';
import { callVault } from './fixtures.js';

/** The subject's entries still indexed under a live key of its own (what an erasure must bring to 0). */
async function readableEntries(tv: TestVault, subject: string): Promise<number> {
  const hash = tv.app.keys.subjectHash(subject);
  const [row] = await queryRows<{ n: string | number }>(
    tv.app.db.db,
    sql`select count(*) as n from log_entries e join subject_keys k on k.key_id = e.key_id where e.subject_hash = ${hash} and k.subject_hash = ${hash}`,
  );
  return Number(row?.n ?? 0);
}

const tag = () => randomBytes(5).toString('hex');
/** Text no other subject shares: the probe has nothing to find elsewhere. */
const words = (n: number) => Array.from({ length: n }, () => `w${randomBytes(4).toString('hex')}`).join(' ');
/** The old policy gave up after this many failed attempts (1 s → 16 s backoff, ~30 s). */
const OLD_MAX_ATTEMPTS = 5;

let binary: string;
let minio: MinioServer;

beforeAll(async () => {
  binary = minioBinary();
  minio = await startMinio(binary);
}, 120_000);

afterAll(async () => {
  await minio?.stop();
});

function minioEnv(extra: Record<string, string>): Record<string, string> {
  const t = tag();
  return {
    S3_ENDPOINT: minio.endpoint,
    S3_ACCESS_KEY: minio.accessKey,
    S3_SECRET_KEY: minio.secretKey,
    S3_BUCKET: `lethe-out-${t}`,
    S3_BACKUP_BUCKET: `lethe-out-bak-${t}`,
    LETHE_ERASURE_POLL_MS: '50',
    LETHE_ERASURE_CLAIM_SECONDS: '3',
    LETHE_ERASURE_RETRY_BASE_MS: '50',
    LETHE_ERASURE_RETRY_CAP_MS: '300',
    ...extra,
  };
}

/** A subject of `n` entries, appended through `via` (default: the vault's own app). */
async function subjectWith(tv: TestVault, n: number, via: App = tv.app): Promise<string> {
  const s = `user:out-${tag()}`;
  for (let i = 0; i < n; i++) await via.log.append(s, { text: words(8) }, 'writer');
  return s;
}

/** Polls the erasure's view until `until` holds (or fails naming where it stood). */
async function viewUntil(tv: TestVault, erasureId: string, until: (v: ErasureView) => boolean, timeoutMs = 60_000): Promise<ErasureView> {
  const call = callVault(tv.app);
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const view = await ok<ErasureView>(call('GET', `/v1/erasures/${erasureId}`, { role: 'eraser' }), 200);
    if (until(view)) return view;
    if (Date.now() > deadline)
      throw new Error(
        `erasure ${erasureId} never got there: ${JSON.stringify({ status: view.status, retry: view.retry, steps: view.steps.map((s) => [s.name, s.status]) })}`,
      );
    await new Promise((r) => setTimeout(r, 50));
  }
}

const finished = (v: ErasureView) => v.status !== 'pending' && v.status !== 'running';

async function retriesCounted(tv: TestVault, kind: string): Promise<number> {
  const metric = await tv.app.metrics.registry.getSingleMetric('lethe_erasure_step_retries_total')?.get();
  return (metric?.values ?? []).filter((v) => v.labels.kind === kind).reduce((n, v) => n + v.value, 0);
}

const committedSteps = async (tv: TestVault, erasureId: string) =>
  (
    await queryRows<{ from_step: string }>(
      tv.app.db.db,
      sql`select from_step from erasure_transitions where erasure_id = ${erasureId} and from_step is not null and to_step is distinct from from_step and status <> 'failed' order by id`,
    )
  ).map((r) => r.from_step);

describe('MinIO down, then frozen, during an erasure (store timeout 1 s)', () => {
  let tv: TestVault;

  // the entries are appended through another replica: the erasing one has none of their frames cached, so it reads them from the store
  let writer: App;

  beforeAll(async () => {
    tv = await openTestVault({ extraEnv: minioEnv({ LETHE_STORE_TIMEOUT_MS: '1000' }) });
    writer = await tv.reopen({ listen: false });
  }, 120_000);

  afterAll(async () => {
    await tv?.close();
  });

  it('keeps retrying past the old five attempts while MinIO is stopped, shows why, and completes once it is back', { timeout: 120_000 }, async () => {
    const s = await subjectWith(tv, 3, writer);
    const call = callVault(tv.app);
    await minio.stop({ keepData: true });
    let restarted = false;
    try {
      const { erasureId } = await ok<{ erasureId: string }>(call('POST', '/v1/erasures', { role: 'eraser', body: { subject: s } }), 202);
      const retrying = await viewUntil(tv, erasureId, (v) => (v.retry?.attempts ?? 0) > OLD_MAX_ATTEMPTS + 2 || finished(v));
      expect(retrying.status).toBe('running');
      expect(retrying.retry!.lastError).toMatch(/S3_ENDPOINT http:\/\/127\.0\.0\.1:\d+: the object store (is unreachable|did not answer in time)/);
      expect(retrying.retry!.lastError).not.toContain(minio.secretKey);
      expect(Date.parse(retrying.retry!.nextAttemptAt!)).not.toBeNaN();
      const step = retrying.steps.find((st) => st.status === 'running');
      expect(step?.detail).toMatch(/^attempt \d+ failed \(.+\); retrying at /);
      expect(await retriesCounted(tv, 'unavailable')).toBeGreaterThan(OLD_MAX_ATTEMPTS);
      minio = await startMinio(binary, minio);
      restarted = true;
      const done = await viewUntil(tv, erasureId, finished);
      expect(done.status).toBe('completed');
      // the attempts reset when the step committed
      expect(done.retry).toBeUndefined();
      expect(await committedSteps(tv, erasureId)).toEqual([...FIRST_RUN]);
      expect(await readableEntries(tv, s)).toBe(0);
    } finally {
      if (!restarted) minio = await startMinio(binary, minio);
    }
  });

  it('times out store calls while MinIO is frozen (SIGSTOP) instead of hanging, and completes after SIGCONT', { timeout: 120_000 }, async () => {
    const s = await subjectWith(tv, 3, writer);
    minio.pause();
    let erasureId: string;
    try {
      ({ erasureId } = await tv.app.erasures.request({ subject: s }, 'eraser'));
      const retrying = await viewUntil(tv, erasureId, (v) => (v.retry?.attempts ?? 0) >= 2 || finished(v));
      expect(retrying.status).toBe('running');
      expect(retrying.retry!.lastError).toMatch(/did not answer in time \(1000 ms; LETHE_STORE_TIMEOUT_MS\)/);
    } finally {
      minio.unpause();
    }
    const done = await viewUntil(tv, erasureId, finished);
    expect(done.status).toBe('completed');
  });
});

describe('a step past its deadline (store timeout 60 s, step deadline 1 s)', () => {
  let tv: TestVault;

  beforeAll(async () => {
    tv = await openTestVault({ extraEnv: minioEnv({ LETHE_STORE_TIMEOUT_MS: '60000', LETHE_ERASURE_STEP_DEADLINE_SECONDS: '1' }) });
  }, 120_000);

  afterAll(async () => {
    await tv?.close();
  });

  it('gives the claim up and counts an attempt; the abandoned steps commit nothing, and every step commits once', { timeout: 120_000 }, async () => {
    const s = await subjectWith(tv, 3);
    minio.pause();
    let erasureId: string;
    try {
      ({ erasureId } = await tv.app.erasures.request({ subject: s }, 'eraser'));
      // two abandoned attempts: the second was claimed again by this same replica while the first still hangs
      const retrying = await viewUntil(tv, erasureId, (v) => (v.retry?.attempts ?? 0) >= 2 || finished(v));
      expect(retrying.status).toBe('running');
      expect(retrying.retry!.lastError).toMatch(/^step \w+ ran past its deadline of 1 s \(LETHE_ERASURE_STEP_DEADLINE_SECONDS\); its claim was given up$/);
      expect(await retriesCounted(tv, 'deadline')).toBeGreaterThanOrEqual(2);
      // given up: nobody holds the claim while it waits for its next attempt, or a new attempt holds a new one
      const [row] = await queryRows<{ claimed_by: string | null }>(tv.app.db.db, sql`select claimed_by from erasures where erasure_id = ${erasureId}`);
      expect(row!.claimed_by === null || /#\d+$/.test(row!.claimed_by)).toBe(true);
    } finally {
      minio.unpause();
    }
    const done = await viewUntil(tv, erasureId, finished);
    expect(done.status).toBe('completed');
    expect(await committedSteps(tv, erasureId)).toEqual([...FIRST_RUN]);
  });
});

/** The built-in embedder, refusing while `refusing` is set (as an embeddings endpoint answering 400 would). */
class RefusingEmbedder implements Embedder {
  readonly #inner = new HashingEmbedder(512);
  readonly model = this.#inner.model;
  readonly dimensions = this.#inner.dimensions;
  refusing = false;
  embed(texts: readonly string[]): Promise<Float32Array[]> {
    if (this.refusing) return Promise.reject(new LetheError('validation_failed', 'the embeddings endpoint refused the request (400)'));
    return this.#inner.embed(texts);
  }
}

describe('a failed erasure: what it left, and resume', () => {
  let tv: TestVault;
  const embedder = new RefusingEmbedder();
  let server: ServerType;
  let url = '';

  beforeAll(async () => {
    tv = await openTestVault({ extraEnv: minioEnv({}), app: { embedder } });
    const app = createHttpApp({ services: tv.app, tokens: TokenStore.fromPairs(tv.config.tokens) });
    await new Promise<void>((resolve) => {
      server = serve({ fetch: app.fetch, hostname: '127.0.0.1', port: 0 }, () => resolve());
    });
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }, 120_000);

  afterAll(async () => {
    await new Promise((r) => server?.close(r));
    await tv?.close();
  });

  it('fails on a permanent error, says it left the key fenced and the data readable, and completes once resumed', { timeout: 120_000 }, async () => {
    const call = callVault(tv.app);
    const s = await subjectWith(tv, 3);
    embedder.refusing = true;
    const { erasureId } = await ok<{ erasureId: string }>(call('POST', '/v1/erasures', { role: 'eraser', body: { subject: s } }), 202);
    const failed = await viewUntil(tv, erasureId, finished);
    expect(failed.status).toBe('failed');
    expect(failed.left).toEqual({ keyFenced: true, keyDestroyed: false, dataReadable: true, failedStep: 'fingerprint' });
    expect(failed.retry).toMatchObject({ attempts: 1, lastError: 'the embeddings endpoint refused the request (400)' });
    expect(failed.retry!.nextAttemptAt).toBeUndefined();
    // the subject is fenced: no lease while the failed erasure holds it
    await expectProblem(call('POST', `/v1/subjects/${s}/key/lease`, { role: 'writer' }), 409, 'erasure_in_progress');

    // the CLI says what it left and how to go on, and exits non-zero
    const watched = await runCli(['erasure', 'watch', erasureId], { LETHE_URL: url, LETHE_TOKENS: `eraser=${TOKENS.eraser}` }, { timeoutMs: 60_000 });
    expect(watched.code).toBe(4);
    expect(watched.stderr).toMatch(/left: key fenced, not destroyed, data still readable \(once the cause is fixed: lethe erasure resume ers_/);

    embedder.refusing = false;
    const resumed = await runCli(['erasure', 'resume', erasureId], { LETHE_URL: url, LETHE_TOKENS: `eraser=${TOKENS.eraser}` }, { timeoutMs: 60_000 });
    expect(resumed.code, resumed.stderr).toBe(0);
    const view = JSON.parse(resumed.stdout) as ErasureView;
    expect(view.erasureId).toBe(erasureId);
    expect(['running', 'completed']).toContain(view.status);
    expect(view.left).toBeUndefined();
    expect(view.retry).toBeUndefined();

    const done = await viewUntil(tv, erasureId, finished);
    expect(done.status).toBe('completed');
    expect(done.left).toBeUndefined();
    expect(await readableEntries(tv, s)).toBe(0);
    const timeline = await queryRows<{ from_step: string | null; to_step: string | null; status: string; detail: string }>(
      tv.app.db.db,
      sql`select from_step, to_step, status, detail from erasure_transitions where erasure_id = ${erasureId} order by id`,
    );
    const failedAt = timeline.findIndex((t) => t.status === 'failed');
    expect(timeline[failedAt]).toMatchObject({ from_step: 'fingerprint', to_step: null });
    expect(timeline[failedAt + 1]).toMatchObject({ from_step: null, to_step: 'fingerprint', status: 'running' });
    expect(timeline[failedAt + 1]!.detail).toBe('resumed at fingerprint by eraser (it had failed: the embeddings endpoint refused the request (400))');
    // the steps before the failure ran once; the failed step ran again and the rest followed
    expect(await committedSteps(tv, erasureId)).toEqual([...FIRST_RUN]);

    // a finished erasure is not resumed
    const again = await runCli(['erasure', 'resume', erasureId], { LETHE_URL: url, LETHE_TOKENS: `eraser=${TOKENS.eraser}` }, { timeoutMs: 60_000 });
    expect(again.code).toBe(2);
    expect(again.stderr).toMatch(/409 conflict: the erasure is completed; only a failed erasure can be resumed/);
  });

  it('refuses to resume a running erasure (409), an unknown one (404), and one a newer erasure of the subject took over (409)', {
    timeout: 120_000,
  }, async () => {
    const call = callVault(tv.app);
    await expectProblem(call('POST', `/v1/erasures/ers_${'A'.repeat(22)}/resume`, { role: 'eraser' }), 404, 'not_found');

    // a running erasure: frozen MinIO keeps it running
    const running = await subjectWith(tv, 2);
    minio.pause();
    try {
      const { erasureId } = await tv.app.erasures.request({ subject: running }, 'eraser');
      const p = await expectProblem(call('POST', `/v1/erasures/${erasureId}/resume`, { role: 'eraser' }), 409, 'conflict');
      expect(p.detail).toMatch(/the erasure is (pending|running); only a failed erasure can be resumed/);
      // only the eraser role
      await expectProblem(call('POST', `/v1/erasures/${erasureId}/resume`, { role: 'writer' }), 403, 'forbidden');
    } finally {
      minio.unpause();
    }

    // failed, then superseded by a new erasure of the same subject
    const s = await subjectWith(tv, 2);
    embedder.refusing = true;
    let first: string;
    try {
      first = (await tv.app.erasures.request({ subject: s }, 'eraser')).erasureId;
      expect((await viewUntil(tv, first, finished)).status).toBe('failed');
    } finally {
      embedder.refusing = false;
    }
    const second = await tv.app.erasures.request({ subject: s }, 'eraser');
    expect(second.created).toBe(true);
    const p = await expectProblem(call('POST', `/v1/erasures/${first}/resume`, { role: 'eraser' }), 409, 'conflict');
    expect(p.detail).toContain(`a newer erasure of the same subject (${second.erasureId}`);
    expect((await viewUntil(tv, second.erasureId, finished)).status).toBe('completed');
    expect((await tv.app.erasures.get(first)).status).toBe('failed');
  });
});
