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
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { isLetheError, Lethe } from '../../src/client/index.js';
import { filesContaining } from '../support/files.js';
import { rejection } from '../support/rejection.js';
import { type RunningService, spawnProcess } from '../support/process.js';
import { type Served, serveOnPostgres } from '../support/served.js';
import { minioEnv, TOKENS, tempDir } from '../support/vault.js';

const tag = () => randomBytes(5).toString('hex');
const MEMORY_ID = /^user:[\w-]+\/[0-9a-f-]{36}$/;

let served: Served;
let dataDir: string;
let service: RunningService;
let lethe: Lethe;
/** Mem0's home folder (it keeps a config.json there): searched for canaries too. */
const home = tempDir('lethe-mem0-home-');
const previousHome = process.env.HOME;
let openMemory: typeof import('../../examples/mem0/memory.js').openMemory;
/** A stand-in for an OpenAI-compatible LLM: each chat completion answers the next of `answers` as its JSON content. */
const llm = { url: '', answers: [] as unknown[], server: undefined as Server | undefined };

beforeAll(async () => {
  served = await serveOnPostgres(minioEnv('mem0'));
  ({ service, dataDir } = served);
  lethe = new Lethe({ baseUrl: service.url, tokens: { writer: TOKENS.writer, eraser: TOKENS.eraser, admin: TOKENS.admin } });
  // Mem0 reads MEM0_TELEMETRY when first imported, and HOME when it writes its config
  process.env.MEM0_TELEMETRY = 'false';
  process.env.HOME = home;
  ({ openMemory } = await import('../../examples/mem0/memory.js'));
  llm.server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const content = JSON.stringify(llm.answers.shift() ?? { memory: [] });
      res.setHeader('content-type', 'application/json');
      res.end(
        JSON.stringify({
          id: 'stub',
          object: 'chat.completion',
          created: 0,
          model: 'stub',
          choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }],
        }),
      );
    });
  });
  await new Promise<void>((resolve) => llm.server!.listen(0, '127.0.0.1', resolve));
  llm.url = `http://127.0.0.1:${(llm.server.address() as AddressInfo).port}`;
}, 180_000);

afterAll(async () => {
  llm.server?.close();
  process.env.HOME = previousHome;
  await served?.close();
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
    const live = [];
    for await (const e of lethe.entries.list(a)) live.push(e.text);
    expect(live).toContain('Ana flies to Porto in April for a conference');
    expect(live).not.toContain('Ana flies to Lisbon in March for a conference');

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
    execFileSync('pg_dump', ['--format=plain', `--file=${dump}`, served.databaseUrl]);
    const sqlText = readFileSync(dump, 'utf8');
    expect(sqlText).toContain('log_entries'); // the dump holds the log's table
    expect(sqlText).not.toContain(canaryA);
    for (const dir of [inject('minio').dataDir, dataDir, home]) {
      const scan = filesContaining(dir, canaryA);
      expect(scan.filesRead, dir).toBeGreaterThan(0); // MinIO's parts, the keyring, Mem0's config.json
      expect(scan.hits, dir).toEqual([]);
    }
    // sealed, not absent: B's canary is in no plain bytes either, yet lethe reads it back (above)
    expect(filesContaining(inject('minio').dataDir, canaryB).hits).toEqual([]);
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

  it('with infer: true (a stub chat-completions server as the LLM): a first-time user, the memories it extracts, their entity links forgotten with them', async () => {
    const d = `user:m0-d-${tag()}`;
    const memory = openMemory(lethe, { llm: { provider: 'openai', config: { apiKey: 'stub', baseURL: `${llm.url}/v1`, model: 'stub' } } });
    llm.answers.push({ memory: [{ text: 'Dana moved to Ghent last spring' }, { text: 'Dana rides a cargo bike' }] });
    const added = await memory.add([{ role: 'user', content: 'I moved to Ghent last spring, and I ride a cargo bike everywhere.' }], { userId: d });
    expect(added.results.map((r) => r.memory).sort()).toEqual(['Dana moved to Ghent last spring', 'Dana rides a cargo bike']);
    expect(added.results.every((r) => r.id.startsWith(`${d}/`))).toBe(true);
    // Mem0 linked the entities it found (Ghent, Dana) to the memories, in the user's subject
    const entities = async () => {
      const out = [];
      for await (const e of lethe.entries.list(d))
        if ((e.metadata?.mem0 as { collection?: string } | undefined)?.collection === 'memories_entities') out.push(e.text);
      return out;
    };
    expect(await entities()).toContain('Ghent');
    const ghent = added.results.find((r) => r.memory.includes('Ghent'))!;
    const found = await memory.search('where does Dana live', { filters: { user_id: d } });
    expect(found.results[0]?.id).toBe(ghent.id);
    await lethe.erasures.wait((await memory.delete(ghent.id)).erasureId!);
    // the entity only that memory named is forgotten with it; the one both name stays
    expect(await entities()).not.toContain('Ghent');
    expect((await memory.getAll({ filters: { user_id: d } })).results.map((r) => r.memory)).toEqual(['Dana rides a cargo bike']);
  }, 60_000);

  it('filters as Mem0 does (OR, operators, "*"), in search and getAll alike', async () => {
    const memory = openMemory(lethe);
    const e = `user:m0-e-${tag()}`;
    await memory.add('Eli drinks green tea', { userId: e, infer: false, metadata: { topic: 'food', rank: 1 } });
    await memory.add('Eli walks the dog at seven', { userId: e, infer: false, metadata: { topic: 'pets', rank: 2 } });
    await memory.add('Eli takes the night train', { userId: e, infer: false, metadata: { topic: 'travel', rank: 3 } });
    const texts = (r: { results: Array<{ memory: string }> }) => r.results.map((x) => x.memory).sort();
    const either = { user_id: e, OR: [{ topic: 'food' }, { topic: 'pets' }] };
    expect(texts(await memory.getAll({ filters: either }))).toEqual(['Eli drinks green tea', 'Eli walks the dog at seven']);
    expect(texts(await memory.search('Eli', { filters: either }))).toEqual(['Eli drinks green tea', 'Eli walks the dog at seven']);
    expect(texts(await memory.getAll({ filters: { user_id: e, rank: { gte: 2 }, topic: { nin: ['pets'] } } }))).toEqual(['Eli takes the night train']);
    expect(texts(await memory.getAll({ filters: { user_id: e, topic: '*' } }))).toHaveLength(3);
    expect(texts(await memory.getAll({ filters: { user_id: e, NOT: [{ topic: 'travel' }] } }))).toEqual(['Eli drinks green tea', 'Eli walks the dog at seven']);
  }, 60_000);

  it("sends none of Mem0's usage events (they name memory ids, and the ids their subject), with telemetry on", async () => {
    const subject = `user:m0-f-${tag()}`;
    const run = spawnProcess(process.execPath, ['--import', 'tsx', 'test/examples/mem0-telemetry.fixture.ts'], {
      LETHE_URL: service.url,
      LETHE_TOKENS: `writer=${TOKENS.writer}`,
      SUBJECT: subject,
      MEM0_TELEMETRY: 'true',
      MEM0_TELEMETRY_SAMPLE_RATE: '1',
      HOME: tempDir('lethe-mem0-telemetry-home-'),
    });
    expect(await run.exited, run.stderr()).toBe(0);
    const { sent } = JSON.parse(run.stdout()) as { sent: string[] };
    // telemetry was on: Mem0's start-up report went out (caught), and nothing else names the subject
    expect(sent.some((s) => s.includes('posthog'))).toBe(true);
    for (const body of sent) {
      expect(body).not.toContain(subject);
      expect(body).not.toContain('ferns');
    }
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
    // a memory that does not fit one entry says why, with its sizes
    const big = await rejection(
      memory.add('a memory with too much metadata', { userId: `user:m0-g-${tag()}`, infer: false, metadata: { notes: 'x'.repeat(17_000) } }),
    );
    expect((big as Error).message).toMatch(/does not fit one lethe entry: .* take \d+ bytes of metadata \(the vector \d+\), at most 16384/);
    // a user lethe never saw: nothing to find, nothing to erase
    const never = `user:m0-h-${tag()}`;
    expect((await memory.getAll({ filters: { user_id: never } })).results).toEqual([]);
    expect(await memory.deleteAll({ userId: never })).toEqual({ message: 'Memories deleted successfully!' });
    // the id add answers is the one get takes, however the userId was spaced
    const spaced = await memory.add('Ivo likes chess', { userId: `  user:m0-i-${tag()}  `, infer: false });
    expect((await memory.get(spaced.results[0]!.id))?.memory).toBe('Ivo likes chess');
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
