/**
 * Mem0's open-source SDK (`mem0ai/oss` 3.3.1, installed in examples/mem0) on lethe, against a
 * real `lethe serve` on PostgreSQL and MinIO: Mem0's add/search/get/getAll/update/delete/
 * deleteAll through `createLetheMemory` (src/client/mem0.ts). Memories land in the user's
 * subject and searches stay in it; delete is a forget and deleteAll the user's erasure, each
 * followed to `completed` with a certificate; after it the other user's memories survive and
 * the erased user's canary is in no plain bytes at rest (pg_dump, MinIO's drives, the
 * service's folder, Mem0's home folder) nor in any answer. And examples/mem0/session.ts,
 * run as a user runs it.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { isLetheError, Lethe } from '../../src/client/index.js';
import { filesContaining } from '../support/files.js';
import { createTestDatabase, type TestDatabase } from '../support/pg.js';
import { CLI, type RunningService, spawnProcess, startService } from '../support/process.js';
import { minioEnv, TOKENS, tempDir, testEnv } from '../support/vault.js';

const tag = () => randomBytes(5).toString('hex');
const MEMORY_ID = /^user:[\w-]+\/[0-9a-f-]{36}$/;

let db: TestDatabase;
let dataDir: string;
let service: RunningService;
let lethe: Lethe;
/** Mem0's home folder (it keeps a config.json there): searched for canaries too. */
const home = tempDir('lethe-mem0-home-');
const previousHome = process.env.HOME;
let openMemory: typeof import('../../examples/mem0/memory.js').openMemory;

async function rejection(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (e) {
    return e;
  }
  throw new Error('expected a rejection');
}

beforeAll(async () => {
  db = await createTestDatabase();
  dataDir = tempDir();
  service = await startService(
    process.execPath,
    [...CLI, 'serve'],
    testEnv({ databaseUrl: db.url, dataDir, extra: { LETHE_ERASURE_POLL_MS: '100', ...minioEnv('mem0') } }),
  );
  lethe = new Lethe({ baseUrl: service.url, tokens: { writer: TOKENS.writer, eraser: TOKENS.eraser, admin: TOKENS.admin } });
  // Mem0 reads MEM0_TELEMETRY when first imported, and HOME when it writes its config
  process.env.MEM0_TELEMETRY = 'false';
  process.env.HOME = home;
  ({ openMemory } = await import('../../examples/mem0/memory.js'));
}, 180_000);

afterAll(async () => {
  process.env.HOME = previousHome;
  await service?.stop();
  await db?.drop();
  rmSync(dataDir, { recursive: true, force: true });
  rmSync(home, { recursive: true, force: true });
});

describe("Mem0's Memory on lethe", () => {
  it('add, search, get, getAll, update, delete and deleteAll; the other user survives and the erased one is nowhere at rest', async () => {
    const memory = openMemory(lethe);
    const a = `user:m0-a-${tag()}`;
    const b = `user:m0-b-${tag()}`;
    const canaryA = `CANARYA${tag()}`;
    const canaryB = `CANARYB${tag()}`;

    const key = await memory.add(`Ana keeps the spare key under the blue flowerpot ${canaryA}`, { userId: a, infer: false });
    const trip = await memory.add('Ana flies to Lisbon in March for a conference', { userId: a, infer: false, metadata: { topic: 'travel' } });
    await memory.add(`Bruno keeps his bicycle in the courtyard shed ${canaryB}`, { userId: b, infer: false });
    const keyId = key.results[0]!.id;
    const tripId = trip.results[0]!.id;
    expect(keyId).toMatch(MEMORY_ID);
    expect(keyId.startsWith(`${a}/`)).toBe(true);

    // a search is scoped to the user, and ranks by Mem0's vectors
    const found = await memory.search('where is the spare key hidden', { filters: { user_id: a } });
    expect(found.results[0]?.memory).toContain('flowerpot');
    expect(found.results.every((r) => r.memory.includes('Ana'))).toBe(true);
    const travel = await memory.search('trips', { filters: { user_id: a, topic: 'travel' } });
    expect(travel.results.map((r) => r.id)).toEqual([tripId]);

    const got = await memory.get(tripId);
    expect(got).toMatchObject({ id: tripId, memory: 'Ana flies to Lisbon in March for a conference', user_id: a, metadata: { topic: 'travel' } });
    expect((await memory.getAll({ filters: { user_id: a } })).results).toHaveLength(2);
    expect((await memory.getAll({ filters: { user_id: b } })).results).toHaveLength(1);

    // update supersedes: the old text is forgotten
    await memory.update(tripId, 'Ana flies to Porto in April for a conference');
    expect((await memory.get(tripId))?.memory).toBe('Ana flies to Porto in April for a conference');
    expect((await memory.getAll({ filters: { user_id: a } })).results.map((r) => r.memory)).not.toContain('Ana flies to Lisbon in March for a conference');

    // delete is a forget, with an erasure of its own
    const deleted = await memory.delete(tripId);
    expect(deleted.erasureId).toMatch(/^ers_/);
    expect((await lethe.erasures.wait(deleted.erasureId!)).status).toBe('completed');
    expect(await memory.get(tripId)).toBeNull();

    // deleteAll is the user's erasure, with a certificate
    const erased = await memory.deleteAll({ userId: a });
    expect(erased.erasureId).toMatch(/^ers_/);
    const view = await lethe.erasures.wait(erased.erasureId!);
    expect(view.status).toBe('completed');
    expect((await lethe.certificates.verifyErasure(erased.erasureId!)).valid).toBe(true);
    expect((await memory.getAll({ filters: { user_id: a } })).results).toEqual([]);
    expect((await memory.search('spare key', { filters: { user_id: a } })).results).toEqual([]);
    expect(await memory.get(keyId)).toBeNull();
    expect(isLetheError(await rejection(memory.add('Ana is back', { userId: a, infer: false })), 'subject_erased')).toBe(true);

    // the other user keeps theirs
    const kept = await memory.getAll({ filters: { user_id: b } });
    expect(kept.results.map((r) => r.memory)).toEqual([`Bruno keeps his bicycle in the courtyard shed ${canaryB}`]);

    // nothing answers the canary, and no plain byte of it is at rest
    const hits = await new Lethe({ baseUrl: service.url, token: TOKENS.admin }).search(canaryA, { allSubjects: true, k: 20 });
    expect(hits.hits.map((h) => h.text).join('\n')).not.toContain(canaryA);
    const dump = path.join(tempDir(), 'dump.sql');
    execFileSync('pg_dump', ['--format=plain', `--file=${dump}`, db.url]);
    expect(readFileSync(dump, 'utf8')).not.toContain(canaryA);
    for (const dir of [inject('minio').dataDir, dataDir, home]) {
      const scan = filesContaining(dir, canaryA);
      expect(scan.hits, dir).toEqual([]);
    }
    // the scan would have seen it: B's canary is sealed too, yet the service reads it back
    expect(filesContaining(inject('minio').dataDir, canaryB).hits).toEqual([]);
    expect(filesContaining(inject('minio').dataDir, 'xl.meta').filesRead).toBeGreaterThan(0);
  }, 120_000);

  it('deleteAll narrowed by runId forgets those memories one by one, and keeps the rest', async () => {
    const memory = openMemory(lethe);
    const c = `user:m0-c-${tag()}`;
    await memory.add('Chen ordered the vegetarian menu', { userId: c, runId: 'chat-1', infer: false });
    await memory.add('Chen lives near the harbour', { userId: c, runId: 'chat-2', infer: false });
    const narrowed = await memory.deleteAll({ userId: c, runId: 'chat-1' });
    expect(narrowed.erasureId).toBeUndefined();
    expect((await memory.getAll({ filters: { user_id: c } })).results.map((r) => r.memory)).toEqual(['Chen lives near the harbour']);
  }, 60_000);

  it('refuses what lethe cannot do as asked, with a plain message', async () => {
    const memory = openMemory(lethe);
    const notASubject = await rejection(memory.add('hello', { userId: 'ana#smith', infer: false }));
    expect(isLetheError(notASubject, 'validation_failed')).toBe(true);
    expect((notASubject as Error).message).toMatch(/not a lethe subject id.*subjectOf/);
    const agentOnly = await rejection(memory.add('hello', { agentId: 'planner', infer: false }));
    expect((agentOnly as Error).message).toMatch(/give userId/);
    const rawId = await rejection(memory.get('1da2e3da-0672-4a7b-9062-3038ea2a17e4'));
    expect((rawId as Error).message).toMatch(/not a lethe memory id/);
    expect((await rejection(memory.reset())) as Error).toMatchObject({ code: 'validation_failed' });
    const { createLetheMemory } = await import('../../src/client/mem0.js');
    const { mem0 } = await import('../../examples/mem0/memory.js');
    expect(() => createLetheMemory(mem0, { lethe, config: { historyStore: { provider: 'sqlite', config: {} } } })).toThrow(/historyStore/);
  }, 60_000);
});

describe('examples/mem0/session.ts', () => {
  it('adds, searches, updates, deletes, erases a user with a verified certificate, and the other user keeps theirs', async () => {
    const childHome = tempDir('lethe-mem0-example-home-');
    const run = spawnProcess(process.execPath, ['--import', 'tsx', 'examples/mem0/session.ts'], {
      LETHE_URL: service.url,
      LETHE_TOKENS: `writer=${TOKENS.writer},eraser=${TOKENS.eraser}`,
      MEM0_TELEMETRY: 'false',
      HOME: childHome,
    });
    const code = await run.exited;
    const out = run.stdout();
    expect(code, `stdout:\n${out}\nstderr:\n${run.stderr()}`).toBe(0);
    expect(out).toMatch(/^ 1\. added 2 memories for user:mem0-a-\w+ and 1 for user:mem0-b-\w+; ids name their subject: user:mem0-a-\w+\/[0-9a-f-]{36}$/m);
    expect(out).toMatch(/search "which seat does she like on a plane": \d+ result\(s\), first: "Prefers window seats/);
    expect(out).toMatch(/updated and read back: "Prefers window seats and vegan meals on long flights now\."/);
    expect(out).toMatch(/deleted one memory: erasure ers_\S+ completed/);
    expect(out).toMatch(/deleteAll for user:mem0-a-\w+: erasure ers_\S+ completed \(class A\)/);
    expect(out).toMatch(/certificate verified: Ed25519, signed by csk_\S+, one of the service's keys/);
    expect(out).toMatch(/user:mem0-a-\w+ has 0 memories left; user:mem0-b-\w+ keeps 1: "Prefers aisle seats; allergic to peanuts\."/);
    for (const token of Object.values(TOKENS)) expect(out + run.stderr()).not.toContain(token);
    rmSync(childHome, { recursive: true, force: true });
  }, 180_000);
});
