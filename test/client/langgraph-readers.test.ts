/**
 * The LangGraph store read while it is updated, against a vault served over real HTTP on
 * PostgreSQL: for 20 s, 4 updaters re-put items of 20 users (each a supersession whose
 * erasure re-keys a shard of the user's keys), while 4 getters read items that exist
 * and 4 listers search each user's items. Invariants: no get of an existing key answers
 * null, no list comes back empty or fails (410 included), no update fails, and no key
 * ends with two live versions.
 */
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Lethe } from '../../src/client/index.js';
import { encodeSubjectLabel, LetheStore } from '../../src/client/langgraph.js';
import { queryRows } from '../../src/db/client.js';
import { TOKENS } from '../support/vault.js';
import { type ServedVault, serveTestVault } from './served.js';

const USERS = 20;
const KEYS = 3;
const RUN_MS = 20_000;

let v: ServedVault;
let store: LetheStore;

beforeAll(async () => {
  v = await serveTestVault();
  store = new LetheStore({ lethe: new Lethe({ baseUrl: v.baseUrl, tokens: { writer: TOKENS.writer } }), subjectLabel: 1 });
}, 180_000);
afterAll(async () => {
  await v?.close();
});

const tag = () => Math.random().toString(36).slice(2, 8);
const pick = <T>(xs: readonly T[]) => xs[Math.floor(Math.random() * xs.length)]!;

describe('the LangGraph store read while it is updated', () => {
  it('20 s of 4 updaters, 4 getters and 4 listers on 20 users: no null get, no empty or failed list, no failed update, one live version per key', {
    timeout: 600_000,
  }, async () => {
    const run = tag();
    const users = Array.from({ length: USERS }, (_, i) => `user:lg-read-${run}-${i}`);
    const ns = (u: string) => ['memories', encodeSubjectLabel(u)];
    const keys = Array.from({ length: KEYS }, (_, k) => `fact-${k}`);
    for (const u of users) for (const k of keys) await store.put(ns(u), k, { text: `${u} ${k} first ${tag()} ${tag()}` });

    const problems: string[] = [];
    const counts = { updates: 0, gets: 0, lists: 0 };
    const until = Date.now() + RUN_MS;
    const loop = async (fn: () => Promise<void>) => {
      while (Date.now() < until) {
        try {
          await fn();
        } catch (e) {
          problems.push(String(e));
        }
      }
    };
    const updater = () =>
      loop(async () => {
        const u = pick(users);
        await store.put(ns(u), pick(keys), { text: `${u} update ${tag()} ${tag()} ${tag()}` });
        counts.updates++;
      });
    const getter = () =>
      loop(async () => {
        const u = pick(users);
        const k = pick(keys);
        const item = await store.get(ns(u), k);
        if (item === null) problems.push(`get ${u} ${k}: null`);
        counts.gets++;
      });
    const lister = () =>
      loop(async () => {
        const u = pick(users);
        const items = await store.search(ns(u), { limit: 10 });
        if (items.length !== KEYS) problems.push(`search ${u}: ${items.length} items`);
        counts.lists++;
      });
    await Promise.all([...Array.from({ length: 4 }, updater), ...Array.from({ length: 4 }, getter), ...Array.from({ length: 4 }, lister)]);

    expect(problems).toEqual([]);
    expect(counts.updates).toBeGreaterThan(20);
    expect(counts.gets).toBeGreaterThan(20);
    expect(counts.lists).toBeGreaterThan(20);
    // one live version of each key of each user
    for (const u of users) {
      const [row] = await queryRows<{ n: string }>(
        v.t.app.db.db,
        sql`select count(*) as n from log_entries where subject_hash = ${v.t.app.keys.subjectHash(u)} and forgotten_by is null and refused is null`,
      );
      expect(Number(row!.n), u).toBe(KEYS);
    }
  });

  it('a second store that touched nothing lists every namespace the first put; its get finds an item in one lookup', { timeout: 120_000 }, async () => {
    const run = tag();
    const users = [`user:lg-fresh-${run}-a`, `user:lg-fresh-${run}-b`];
    for (const u of users) {
      await store.put(['memories', encodeSubjectLabel(u)], 'k', { text: `${u} ${tag()}` });
      await store.put(['memories', encodeSubjectLabel(u), 'work'], 'k', { text: `${u} work ${tag()}` });
    }
    const fresh = new LetheStore({ lethe: new Lethe({ baseUrl: v.baseUrl, tokens: { writer: TOKENS.writer } }), subjectLabel: 1 });
    expect(fresh.knownSubjects).toEqual([]);
    const listed = (await fresh.listNamespaces({ prefix: ['memories'], limit: 10_000 })).map((ns) => JSON.stringify(ns));
    for (const u of users) {
      expect(listed).toContain(JSON.stringify(['memories', encodeSubjectLabel(u)]));
      expect(listed).toContain(JSON.stringify(['memories', encodeSubjectLabel(u), 'work']));
    }
    expect((await fresh.get(['memories', encodeSubjectLabel(users[0]!), 'work'], 'k'))?.value.text).toMatch(/work/);
  });
});
