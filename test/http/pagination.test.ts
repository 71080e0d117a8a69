/**
 * Cursor pagination of every list — GET /v1/subjects/{s}/entries, /v1/artifacts,
 * /v1/backups, /v1/erasures — on PostgreSQL and a real MinIO: pages in order,
 * `nextCursor` null on the last page, cursors bound to their list, bad input 400.
 * The entries walk: 10,000 entries of one subject (written through the writer client)
 * walked a page at a time while another writer keeps appending to the same subject —
 * no entry twice, none of the 10,000 missed. The erasure worker is off: erasures stay
 * where the test leaves them (one is driven to its end with `settle`).
 */
import type { AddressInfo } from 'node:net';
import { serve, type ServerType } from '@hono/node-server';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LetheWriter } from '../../src/client/index.js';
import { queryRows } from '../../src/db/client.js';
import { expectProblem, ok } from '../support/http.js';
import { minioEnv, openTestApp, type TestApp, type TestRole, TOKENS } from '../support/vault.js';

interface Page<K extends string, T> {
  readonly nextCursor: string | null;
  readonly items: T[];
  readonly key: K;
}
interface ListedEntry {
  entryId: string;
  seq: number;
  text: string;
}
interface ListedArtifact {
  artifactId: string;
  kind: string;
  version: number;
  generator: string | null;
  createdAt: string;
  updatedAt: string;
}
interface ListedBackup {
  backupId: string;
  createdAt: string;
}
interface ListedErasure {
  erasureId: string;
  status: string;
  createdAt: string;
}

let t: TestApp;
let server: ServerType;
let baseUrl = '';

beforeAll(async () => {
  t = await openTestApp({ extraEnv: minioEnv('lethe-pages'), app: { erasureWorker: false } });
  await new Promise<void>((resolve) => {
    server = serve({ fetch: t.http.fetch, hostname: '127.0.0.1', port: 0 }, () => resolve());
  });
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  if (server) await new Promise((r) => server.close(r));
  await t?.close();
});

/** One page of a list: its items (under the list's array key) and nextCursor. */
async function page<T>(
  path: string,
  key: string,
  role: TestRole,
  query: { limit?: number | string; cursor?: string | null; subject?: string } = {},
): Promise<Page<string, T>> {
  const q = new URLSearchParams();
  if (query.limit !== undefined) q.set('limit', String(query.limit));
  if (query.cursor) q.set('cursor', query.cursor);
  if (query.subject !== undefined) q.set('subject', query.subject);
  const url = `${path}${q.size > 0 ? `?${q}` : ''}`;
  const body = await ok<Record<string, unknown>>(t.call('GET', url, { role }), 200, `GET ${url}`);
  expect(body.nextCursor === null || typeof body.nextCursor === 'string', `GET ${url}: nextCursor`).toBe(true);
  expect(Array.isArray(body[key]), `GET ${url}: ${key}`).toBe(true);
  return { key, items: body[key] as T[], nextCursor: body.nextCursor as string | null };
}

/** Every page of a list with `limit`, the sizes of the pages, and the cursors handed out. */
async function walk<T>(path: string, key: string, role: TestRole, limit: number, extra: { subject?: string } = {}) {
  const items: T[] = [];
  const sizes: number[] = [];
  const cursors: string[] = [];
  let cursor: string | null = null;
  for (let n = 0; n < 100; n++) {
    const p: Page<string, T> = await page<T>(path, key, role, { limit, cursor, ...extra });
    items.push(...p.items);
    sizes.push(p.items.length);
    if (p.nextCursor === null) return { items, sizes, cursors };
    cursors.push(p.nextCursor);
    cursor = p.nextCursor;
  }
  throw new Error(`${path}: more than 100 pages`);
}

async function append(subject: string, text: string): Promise<string> {
  return (await ok<{ entryId: string }>(t.call('POST', `/v1/subjects/${subject}/entries`, { body: { text } }), 201)).entryId;
}

const byPosition =
  <T extends { createdAt: string }>(id: (x: T) => string) =>
  (a: T, b: T) =>
    a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 : id(a) < id(b) ? -1 : id(a) > id(b) ? 1 : 0;

/** Cursors handed out during the tests, per list (for the foreign-cursor checks). */
const handedOut: Record<'entries' | 'artifacts' | 'backups' | 'erasures', string[]> = { entries: [], artifacts: [], backups: [], erasures: [] };

describe('artifacts, erasures and backups are listed a page at a time', () => {
  const artifactIds: string[] = [];
  let erasedSubjectArtifact = '';
  const erasures = new Map<string, string>();

  it('GET /v1/artifacts walks the live artifacts in (createdAt, artifactId) order, 2 per page, nextCursor null on the last', async () => {
    const source = await append('user:pg-src', 'a note the artifacts summarize');
    const doomed = await append('user:pg-e1', 'a note of a subject erased below');
    for (let i = 0; i < 5; i++) {
      const body = { kind: 'fact', text: `fact ${i} from the note`, sources: [source], generator: `gen-${i}` };
      artifactIds.push((await ok<{ artifactId: string }>(t.call('POST', '/v1/artifacts', { body }), 201)).artifactId);
      if (i === 2) {
        const only = { kind: 'summary', text: 'a summary of the erased subject alone', sources: [doomed] };
        erasedSubjectArtifact = (await ok<{ artifactId: string }>(t.call('POST', '/v1/artifacts', { body: only }), 201)).artifactId;
        artifactIds.push(erasedSubjectArtifact);
      }
    }
    const { items, sizes, cursors } = await walk<ListedArtifact>('/v1/artifacts', 'artifacts', 'writer', 2);
    handedOut.artifacts.push(...cursors);
    // 6 artifacts, 2 a page: the third page is full and still the last
    expect(sizes).toEqual([2, 2, 2]);
    expect(new Set(items.map((a) => a.artifactId))).toEqual(new Set(artifactIds));
    expect(items).toEqual([...items].sort(byPosition((a) => a.artifactId)));
    expect(items.find((a) => a.generator === 'gen-3')).toEqual({
      artifactId: artifactIds[4],
      kind: 'fact',
      version: 1,
      generator: 'gen-3',
      createdAt: expect.stringMatching(/Z$/),
      updatedAt: expect.stringMatching(/Z$/),
    });
    // the eraser may list them too (no text is listed); a backup token may not
    expect((await page<ListedArtifact>('/v1/artifacts', 'artifacts', 'eraser', { limit: 1000 })).items).toHaveLength(6);
    await expectProblem(t.call('GET', '/v1/artifacts', { role: 'backup' }), 403, 'forbidden');
  });

  it('GET /v1/erasures lists each erasure as GET /v1/erasures/{id} answers it, 2 per page, and filters by subject', async () => {
    for (const s of ['user:pg-e2', 'user:pg-e3']) await append(s, `a note of ${s}`);
    for (const s of ['user:pg-e1', 'user:pg-e2', 'user:pg-e3']) {
      erasures.set(s, (await ok<{ erasureId: string }>(t.call('POST', '/v1/erasures', { role: 'eraser', body: { subject: s } }), 202)).erasureId);
    }
    // settle runs every open erasure to its end (the e1 one erases the summary below)
    const finished = await t.app.erasures.settle(erasures.get('user:pg-e1')!);
    expect(['completed', 'incomplete']).toContain(finished.status);

    const { items, sizes, cursors } = await walk<ListedErasure>('/v1/erasures', 'erasures', 'eraser', 2);
    handedOut.erasures.push(...cursors);
    expect(sizes).toEqual([2, 1]);
    expect(new Set(items.map((e) => e.erasureId))).toEqual(new Set(erasures.values()));
    expect(items).toEqual([...items].sort(byPosition((e) => e.erasureId)));
    for (const listed of items) {
      expect(listed).toEqual(await ok(t.call('GET', `/v1/erasures/${listed.erasureId}`, { role: 'eraser' }), 200));
    }
    // no answer names a subject
    expect(JSON.stringify(items)).not.toContain('user:pg-');

    const e2 = await page<ListedErasure>('/v1/erasures', 'erasures', 'eraser', { subject: 'user:pg-e2' });
    expect(e2.items.map((e) => e.erasureId)).toEqual([erasures.get('user:pg-e2')]);
    expect(e2.nextCursor).toBeNull();
    const none = await page<ListedErasure>('/v1/erasures', 'erasures', 'eraser', { subject: 'user:pg-never-erased' });
    expect(none).toMatchObject({ items: [], nextCursor: null });
    await expectProblem(t.call('GET', '/v1/erasures?subject=not%20a%20subject', { role: 'eraser' }), 400, 'validation_failed');
    await expectProblem(t.call('GET', '/v1/erasures', { role: 'writer' }), 403, 'forbidden');
  });

  it('an artifact whose only source was erased is no longer listed', async () => {
    const { items } = await walk<ListedArtifact>('/v1/artifacts', 'artifacts', 'writer', 2);
    expect(items.map((a) => a.artifactId)).not.toContain(erasedSubjectArtifact);
    expect(new Set(items.map((a) => a.artifactId))).toEqual(new Set(artifactIds.filter((id) => id !== erasedSubjectArtifact)));
  });

  it('GET /v1/backups walks the backups oldest first, 2 per page', async () => {
    const taken: string[] = [];
    for (let i = 0; i < 3; i++) taken.push((await ok<{ backupId: string }>(t.call('POST', '/v1/backups', { role: 'backup' }), 201)).backupId);
    const { items, sizes, cursors } = await walk<ListedBackup>('/v1/backups', 'backups', 'backup', 2);
    handedOut.backups.push(...cursors);
    expect(sizes).toEqual([2, 1]);
    expect(items.map((b) => b.backupId).sort()).toEqual([...taken].sort());
    expect(items).toEqual([...items].sort(byPosition((b) => b.backupId)));
    // the default page holds them all, and is the last
    expect(await page<ListedBackup>('/v1/backups', 'backups', 'backup')).toMatchObject({ items: expect.arrayContaining(items), nextCursor: null });
  });
});

describe('GET /v1/subjects/{subject}/entries pages', () => {
  it('answers 100 entries by default, in seq order, with a cursor to the rest; forgotten entries are never listed', async () => {
    const subject = 'user:pg-default';
    const w = new LetheWriter({ baseUrl, token: TOKENS.writer, store: t.app.objects, reserveBlock: 1000, segmentMaxAgeMs: 20 });
    const appended = await Promise.all(Array.from({ length: 130 }, (_, i) => w.append(subject, { text: `entry ${i}` })));
    await w.close();
    const inSeqOrder = [...appended].sort((a, b) => a.seq - b.seq).map((e) => e.entryId);
    const first = await page<ListedEntry>(`/v1/subjects/${subject}/entries`, 'entries', 'writer');
    expect(first.items.map((e) => e.entryId)).toEqual(inSeqOrder.slice(0, 100));
    expect(first.nextCursor).not.toBeNull();
    handedOut.entries.push(first.nextCursor!);
    const rest = await page<ListedEntry>(`/v1/subjects/${subject}/entries`, 'entries', 'writer', { cursor: first.nextCursor });
    expect(rest.items.map((e) => e.entryId)).toEqual(inSeqOrder.slice(100));
    expect(rest.nextCursor).toBeNull();
    // the service itself still reads them all (the erasure's fingerprint, the CLI and the tests rely on it)
    expect(await t.app.log.list(subject)).toHaveLength(130);

    // an entry a records-scope erasure forgets is gone from every page
    const forgotten = inSeqOrder[105]!;
    await queryRows(t.app.db.db, sql`update log_entries set forgotten_by = ${`ers_${'F'.repeat(22)}`} where entry_id = ${forgotten}`);
    const { items } = await walk<ListedEntry>(`/v1/subjects/${subject}/entries`, 'entries', 'writer', 40);
    expect(items).toHaveLength(129);
    expect(items.map((e) => e.entryId)).not.toContain(forgotten);
    expect(await t.app.log.list(subject)).toHaveLength(129);
  });

  it('a walk goes on across a re-key of the subject: every entry once (seqs survive the re-key)', async () => {
    const subject = 'user:pg-rekey';
    const ids: string[] = [];
    for (let i = 0; i < 30; i++) ids.push(await append(subject, `before the re-key ${i}`));
    const first = await page<ListedEntry>(`/v1/subjects/${subject}/entries`, 'entries', 'writer', { limit: 10 });
    await t.app.log.rekeySubject(subject, { exclude: [], actor: 'test', reason: 'pagination across a re-key' });
    const seen = [...first.items];
    let cursor = first.nextCursor;
    while (cursor) {
      const p = await page<ListedEntry>(`/v1/subjects/${subject}/entries`, 'entries', 'writer', { limit: 10, cursor });
      seen.push(...p.items);
      cursor = p.nextCursor;
    }
    expect(seen.map((e) => e.entryId)).toEqual(ids);
  });

  it('walking 10,000 entries while another writer appends to the subject yields each once and misses none of them', async () => {
    const subject = 'user:pg-walk';
    const started = performance.now();
    // segments of 256 KiB: a registration of a 1 MiB segment of such small entries is a body over the 1 MiB limit
    const bulk = new LetheWriter({
      baseUrl,
      token: TOKENS.writer,
      store: t.app.objects,
      reserveBlock: 10_000,
      segmentMaxBytes: 256 * 1024,
      segmentMaxAgeMs: 200,
    });
    const before = await Promise.all(Array.from({ length: 10_000 }, (_, i) => bulk.append(subject, { text: `pre-existing ${i}` })));
    await bulk.close();
    const wroteMs = performance.now() - started;
    const preExisting = new Set(before.map((e) => e.entryId));
    expect(preExisting.size).toBe(10_000);

    // a concurrent writer: batches of 25 appends to the same subject, 20 ms apart, until the walk ends
    const concurrent = new Set<string>();
    let appendedDuringWalk = 0;
    let walking = true;
    const appender = (async () => {
      const w = new LetheWriter({ baseUrl, token: TOKENS.writer, store: t.app.objects, reserveBlock: 64, segmentMaxAgeMs: 10 });
      for (let batch = 0; walking; batch++) {
        const done = await Promise.all(Array.from({ length: 25 }, (_, i) => w.append(subject, { text: `appended during the walk ${batch}.${i}` })));
        for (const d of done) concurrent.add(d.entryId);
        if (walking) appendedDuringWalk += done.length;
        await new Promise((r) => setTimeout(r, 20));
      }
      await w.close();
    })();

    const walkStarted = performance.now();
    const seen: ListedEntry[] = [];
    const sizes: number[] = [];
    let cursor: string | null = null;
    // the first pages 250 at a time, then 1000: a cursor does not depend on the limit it came with
    for (let n = 0; n < 200; n++) {
      const limit = n < 4 ? 250 : 1000;
      const p: Page<string, ListedEntry> = await page<ListedEntry>(`/v1/subjects/${subject}/entries`, 'entries', 'writer', { limit, cursor });
      expect(p.items.length).toBeLessThanOrEqual(limit);
      seen.push(...p.items);
      sizes.push(p.items.length);
      if (p.nextCursor === null) break;
      cursor = p.nextCursor;
    }
    const walkMs = performance.now() - walkStarted;
    walking = false;
    await appender;

    const ids = seen.map((e) => e.entryId);
    expect(new Set(ids).size, 'no entry listed twice').toBe(ids.length);
    const listed = new Set(ids);
    const gaps = [...preExisting].filter((id) => !listed.has(id));
    expect(gaps, 'no pre-existing entry missed').toEqual([]);
    for (let i = 1; i < seen.length; i++) expect(seen[i]!.seq).toBeGreaterThan(seen[i - 1]!.seq);
    // everything else listed was appended by the concurrent writer
    expect(ids.filter((id) => !preExisting.has(id) && !concurrent.has(id))).toEqual([]);
    expect(appendedDuringWalk, 'the other writer appended while the walk ran').toBeGreaterThan(0);
    expect(sizes.slice(0, 4)).toEqual([250, 250, 250, 250]);
    console.log(
      `pagination: wrote 10,000 entries in ${(wroteMs / 1000).toFixed(1)} s; walked ${seen.length} entries in ${sizes.length} pages in ${(walkMs / 1000).toFixed(1)} s ` +
        `while ${appendedDuringWalk} were appended (${seen.length - 10_000} of them listed)`,
    );
    // 10,000 appends and a walk racing a writer: about 20 s on an idle machine, three times that with the suite's other workers busy
  }, 180_000);
});

describe('bad list input is 400 validation_failed, never a 500', () => {
  const lists: Array<{ list: keyof typeof handedOut; path: string; role: TestRole }> = [
    { list: 'entries', path: '/v1/subjects/user:pg-src/entries', role: 'writer' },
    { list: 'artifacts', path: '/v1/artifacts', role: 'writer' },
    { list: 'backups', path: '/v1/backups', role: 'backup' },
    { list: 'erasures', path: '/v1/erasures', role: 'eraser' },
  ];
  const b64 = (value: unknown) => Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)).toString('base64url');

  it('a limit outside 1–1000 or not an integer', async () => {
    for (const { path, role } of lists) {
      for (const limit of ['0', '1001', '-1', '1.5', 'abc', '']) {
        const { detail } = await expectProblem(t.call('GET', `${path}?limit=${limit}`, { role }), 400, 'validation_failed', `${path}?limit=${limit}`);
        expect(detail).toBe('query.limit: must be an integer from 1 to 1000');
      }
      await ok(t.call('GET', `${path}?limit=1000`, { role }), 200);
      await ok(t.call('GET', `${path}?limit=1`, { role }), 200);
    }
  });

  it('a malformed cursor', async () => {
    const bad = [
      'not base64!',
      'x'.repeat(600),
      b64('not json'),
      b64([1, 2]),
      b64({ v: 2, l: 'entries', s: 1 }),
      b64({ v: 1, l: 'entries', s: -1 }),
      b64({ v: 1, l: 'entries', s: 2 ** 31 }),
      b64({ v: 1, l: 'entries', s: 1.5 }),
      b64({ v: 1, l: 'entries', s: 1, extra: true }),
      b64({ v: 1, l: 'artifacts', t: '2024-02-30T00:00:00.000000Z', i: `art_${'A'.repeat(22)}` }),
      b64({ v: 1, l: 'artifacts', t: '2024-01-01 00:00:00', i: `art_${'A'.repeat(22)}` }),
      b64({ v: 1, l: 'artifacts', t: '0000-01-01T00:00:00.000000Z', i: `art_${'A'.repeat(22)}` }),
      b64({ v: 1, l: 'artifacts', t: '2024-01-01T00:00:00.000000Z', i: `ers_${'A'.repeat(22)}` }),
      b64({ v: 1, l: 'artifacts', t: '2024-01-01T00:00:00.000000Z', i: "art_'; drop table artifacts" }),
    ];
    for (const { path, role } of lists) {
      for (const cursor of bad) {
        const what = `${path} cursor ${cursor.slice(0, 40)}`;
        const { detail } = await expectProblem(t.call('GET', `${path}?cursor=${encodeURIComponent(cursor)}`, { role }), 400, 'validation_failed', what);
        expect(detail, what).toMatch(/^query\.cursor: /);
      }
    }
  });

  it('a cursor of another list', async () => {
    for (const { list, path, role } of lists) {
      expect(handedOut[list].length, `a ${list} cursor was handed out`).toBeGreaterThan(0);
      for (const other of lists.filter((l) => l.list !== list)) {
        const cursor = handedOut[other.list][0]!;
        const { detail } = await expectProblem(
          t.call('GET', `${path}?cursor=${cursor}`, { role }),
          400,
          'validation_failed',
          `${other.list} cursor on ${path}`,
        );
        expect(detail).toContain(`not of the ${list} list`);
      }
      // its own cursor is fine
      await ok(t.call('GET', `${path}?cursor=${handedOut[list][0]}`, { role }), 200);
    }
  });

  it('a well-formed cursor lethe never handed out only names a position: the rows after it', async () => {
    const late = b64({ v: 1, l: 'artifacts', t: '9999-12-31T23:59:59.999999Z', i: `art_${'z'.repeat(22)}` });
    expect(await page('/v1/artifacts', 'artifacts', 'writer', { cursor: late })).toMatchObject({ items: [], nextCursor: null });
    const early = b64({ v: 1, l: 'backups', t: '0001-01-01T00:00:00.000000Z', i: `bak_${'A'.repeat(22)}` });
    expect((await page('/v1/backups', 'backups', 'backup', { cursor: early })).items).toHaveLength(3);
  });

  it('the OpenAPI document describes limit, cursor and nextCursor on each list', async () => {
    const doc = await ok<{ paths: Record<string, { get: { parameters?: Array<{ name: string; in: string }>; responses: Record<string, unknown> } }> }>(
      t.call('GET', '/openapi.json', { role: 'none' }),
      200,
    );
    for (const path of ['/v1/subjects/{subject}/entries', '/v1/artifacts', '/v1/backups', '/v1/erasures']) {
      const get = doc.paths[path]!.get;
      expect(
        get.parameters?.filter((p) => p.in === 'query').map((p) => p.name),
        path,
      ).toEqual(expect.arrayContaining(['limit', 'cursor']));
      expect(JSON.stringify(get.responses['200']), path).toContain('nextCursor');
    }
    expect(doc.paths['/v1/erasures']!.get.parameters?.map((p) => p.name)).toContain('subject');
  });
});
