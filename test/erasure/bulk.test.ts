/**
 * Bulk erasures against the real service (`lethe serve` on PostgreSQL, a child
 * process, running LETHE_ERASURE_CONCURRENCY erasures at once): POST
 * /v1/erasures/batch requests one erasure per subject — each completing with its own
 * certificate — answers a subject lethe never saw in its own item without stopping
 * the others, refuses a malformed request whole (400, nothing created); and `lethe
 * erase --subjects-file` does the same from a file, naming subjects by their line.
 * No answer or output names a subject id.
 */
import { randomBytes } from 'node:crypto';
import { rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyCertificate } from '../../src/crypto/certificate.js';
import { MAX_BULK_SUBJECTS } from '../../src/erasure/request.js';
import { createTestDatabase, type TestDatabase } from '../support/pg.js';
import { CLI, type RunningService, runCli, startService } from '../support/process.js';
import { tempDir, testEnv, TOKENS } from '../support/vault.js';

const TIMEOUT = 120_000;
const tag = () => randomBytes(5).toString('hex');

let db: TestDatabase;
let dataDir: string;
let service: RunningService;

beforeAll(async () => {
  db = await createTestDatabase();
  dataDir = tempDir();
  service = await startService(
    process.execPath,
    [...CLI, 'serve'],
    testEnv({ databaseUrl: db.url, dataDir, extra: { LETHE_ERASURE_POLL_MS: '100', LETHE_ERASURE_CONCURRENCY: '4' } }),
  );
}, 120_000);

afterAll(async () => {
  await service?.stop();
  await db?.drop();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

async function call(method: string, p: string, role: keyof typeof TOKENS | 'none', body?: unknown): Promise<{ status: number; text: string; json: any }> {
  const res = await fetch(`${service.url}${p}`, {
    method,
    headers: { ...(role === 'none' ? {} : { authorization: `Bearer ${TOKENS[role]}` }), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, text, json: text ? JSON.parse(text) : undefined };
}

const WORDS = [
  'amber',
  'birch',
  'cobalt',
  'dune',
  'ember',
  'fjord',
  'garnet',
  'heron',
  'indigo',
  'juniper',
  'kestrel',
  'lichen',
  'marlin',
  'nectar',
  'onyx',
  'pewter',
  'quartz',
  'russet',
  'saffron',
  'thistle',
  'umber',
  'vellum',
  'willow',
  'yarrow',
  'zephyr',
];
/** A sentence of its own: random words and tokens, sharing no run of words with any other subject's (the probe would rightly match those). */
const sentence = () => Array.from({ length: 9 }, () => `${WORDS[randomBytes(1)[0]! % WORDS.length]}${randomBytes(2).toString('hex')}`).join(' ');

/** Subjects with a few entries each, written through the service: class A (nothing derived from them). */
async function seed(n: number, label: string): Promise<string[]> {
  const subjects = Array.from({ length: n }, (_, i) => `user:bulk-${label}-${i}-${tag()}`);
  for (const s of subjects) {
    for (let k = 0; k < 3; k++) expect((await call('POST', `/v1/subjects/${s}/entries`, 'writer', { text: sentence() })).status).toBe(201);
  }
  return subjects;
}

async function settled(erasureId: string): Promise<{ status: string; certificateState?: string; class?: string }> {
  const deadline = Date.now() + 90_000;
  for (;;) {
    const r = await call('GET', `/v1/erasures/${erasureId}`, 'eraser');
    expect(r.status).toBe(200);
    if (r.json.status !== 'pending' && r.json.status !== 'running') return r.json;
    if (Date.now() > deadline) throw new Error(`erasure ${erasureId} still ${r.json.status}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

const erasureCount = async () => {
  let n = 0;
  let cursor: string | undefined;
  do {
    const page = await call('GET', `/v1/erasures?limit=100${cursor ? `&cursor=${cursor}` : ''}`, 'eraser');
    n += page.json.erasures.length;
    cursor = page.json.nextCursor ?? undefined;
  } while (cursor);
  return n;
};

describe('POST /v1/erasures/batch', () => {
  it('erases every subject, each its own erasure and certificate; a subject never seen is refused in its item alone', { timeout: TIMEOUT }, async () => {
    const subjects = await seed(6, 'http');
    const unknown = `user:bulk-never-${tag()}`;
    const r = await call('POST', '/v1/erasures/batch', 'eraser', {
      subjects: [subjects[0], unknown, ...subjects.slice(1)],
      legalBasis: 'gdpr-art17',
      reason: 'bulk test',
    });
    expect(r.status, r.text).toBe(202);
    expect(r.json).toMatchObject({ created: 6, open: 0, refused: 1 });
    expect(r.json.erasures).toHaveLength(7);
    expect(r.json.erasures.map((i: { index: number }) => i.index)).toEqual([0, 1, 2, 3, 4, 5, 6]);
    expect(r.json.erasures[1]).toEqual({ index: 1, error: { code: 'not_found', detail: expect.stringContaining('never seen') } });
    for (const s of [...subjects, unknown]) expect(r.text).not.toContain(s);
    const ids = r.json.erasures.filter((i: { erasureId?: string }) => i.erasureId).map((i: { erasureId: string }) => i.erasureId);
    expect(new Set(ids).size).toBe(6);

    const publicKey = (await call('GET', '/v1/certificates/public-key', 'none')).json;
    const hashes = new Set<string>();
    for (const id of ids) {
      const view = await settled(id);
      expect(view, id).toMatchObject({ status: 'completed', class: 'A' });
      const cert = await call('GET', `/v1/erasures/${id}/certificate`, 'eraser');
      expect(cert.status, cert.text).toBe(200);
      expect(verifyCertificate(cert.json, publicKey.publicKey).valid, id).toBe(true);
      hashes.add(String(cert.json.payload.subjectHash));
    }
    expect(hashes.size).toBe(6);
    // erased for good: no key is made for any of them again
    for (const s of subjects) expect((await call('PUT', `/v1/subjects/${s}/key`, 'writer')).json?.code, s).toBe('subject_erased');
  });

  it('refuses a malformed request whole with a problem naming the field, and creates nothing', { timeout: TIMEOUT }, async () => {
    const [s] = await seed(1, 'bad');
    const before = await erasureCount();
    const cases: Array<[string, unknown, RegExp]> = [
      ['no subjects', { subjects: [] }, /subjects.*at least one/],
      ['a subject named twice', { subjects: [s, s] }, /subjects\.1.*named twice/],
      ['too many', { subjects: Array.from({ length: MAX_BULK_SUBJECTS + 1 }, (_, i) => `user:x${i}`) }, new RegExp(`at most ${MAX_BULK_SUBJECTS}`)],
      ['a malformed subject id', { subjects: [s, 'not a subject id'] }, /subjects\.1/],
      ['a per-person field', { subjects: [s], publicAttributes: ['x'] }, /publicAttributes/],
      [
        'a context naming a subject',
        { subjects: [s], request: { reasonCategory: 'other', legalBasis: 'GDPR Art. 17', controller: 'Acme', reference: `ticket ${s}` } },
        /request\.reference.*personal data/,
      ],
      ['not JSON', undefined, /JSON/],
    ];
    for (const [what, body, detail] of cases) {
      const r =
        body === undefined
          ? await fetch(`${service.url}/v1/erasures/batch`, {
              method: 'POST',
              headers: { authorization: `Bearer ${TOKENS.eraser}`, 'content-type': 'application/json' },
              body: '{"subjects": [',
            }).then(async (res) => ({ status: res.status, text: await res.text() }))
          : await call('POST', '/v1/erasures/batch', 'eraser', body);
      expect(r.status, what).toBe(400);
      expect(JSON.parse(r.text), what).toMatchObject({ code: 'validation_failed' });
      expect(r.text, what).toMatch(detail);
      expect(r.text, what).not.toContain(s);
    }
    expect((await call('POST', '/v1/erasures/batch', 'writer', { subjects: [s] })).status).toBe(403);
    expect((await call('POST', '/v1/erasures/batch', 'none', { subjects: [s] })).status).toBe(401);
    expect(await erasureCount()).toBe(before);
  });
});

describe('lethe erase --subjects-file', () => {
  const env = () => ({ LETHE_URL: service.url, LETHE_TOKENS: `eraser=${TOKENS.eraser}` });

  it('erases every subject of the file, one line per subject by its line number, and exits 0 once all completed', { timeout: TIMEOUT }, async () => {
    const subjects = await seed(3, 'cli');
    const file = path.join(dataDir, `subjects-${tag()}.txt`);
    writeFileSync(file, `# people who asked to be forgotten\n${subjects[0]}\n\n${subjects[1]}\n${subjects[2]}\n`);
    const run = await runCli(['erase', '--subjects-file', file, '--legal-basis', 'gdpr-art17'], env());
    expect(run.code, run.stderr).toBe(0);
    for (const line of [2, 4, 5]) {
      expect(run.stdout).toMatch(new RegExp(`^line ${line}: ers_[A-Za-z0-9_-]{22} accepted$`, 'm'));
      expect(run.stdout).toMatch(new RegExp(`^line ${line}: ers_[A-Za-z0-9_-]{22} completed$`, 'm'));
    }
    expect(run.stdout).toContain('3 completed, 0 incomplete, 0 failed, 0 refused (of 3)');
    for (const s of subjects) expect(run.stdout + run.stderr).not.toContain(s);
  });

  it('refuses a file with a bad line (exit 2, naming the line) before any request, and a missing file', { timeout: TIMEOUT }, async () => {
    const [s] = await seed(1, 'cli-bad');
    const before = await erasureCount();
    const file = path.join(dataDir, `bad-${tag()}.txt`);
    writeFileSync(file, `${s}\nnot a subject id\n`);
    const bad = await runCli(['erase', '--subjects-file', file], env());
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--subjects-file line 2/);
    // the first line is named by its line too
    const first = path.join(dataDir, `bad-first-${tag()}.txt`);
    writeFileSync(first, `# a comment\nnot a subject id\n${s}\n`);
    const badFirst = await runCli(['erase', '--subjects-file', first], env());
    expect(badFirst.code).toBe(2);
    expect(badFirst.stderr).toMatch(/--subjects-file line 2/);
    const missing = await runCli(['erase', '--subjects-file', path.join(dataDir, 'no-such-file.txt')], env());
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/cannot read/);
    const both = await runCli(['erase', s!, '--subjects-file', file], env());
    expect(both.code).toBe(2);
    expect(both.stderr).toMatch(/not both/);
    for (const run of [bad, missing, both]) expect(run.stdout + run.stderr).not.toContain(s);
    expect(await erasureCount()).toBe(before);
  });
});
