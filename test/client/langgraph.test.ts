/**
 * `LetheStore` (src/client/langgraph.ts), a LangGraph.js BaseStore over the client,
 * against a vault served over real HTTP on PostgreSQL: LangGraph's store contract
 * (put / get / search / delete / listNamespaces, filters, offset and limit, a re-put
 * superseding the old memory by forgetting it), items sealed at rest (the value never
 * in clear in the object store), and an agent graph (`StateGraph` compiled with the
 * store, a deterministic stand-in for the model) that writes and recalls a user's
 * memories — until the user is erased: then it recalls nothing of them, keeps the other
 * user's, and cannot learn the erased user again.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { InvalidNamespaceError, validateNamespace } from '@langchain/langgraph-checkpoint';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ask, buildMemoryAgent, memories, memoryKey } from '../../examples/memory-agent.js';
import { FsObjectStore, isLetheError, Lethe, ServiceError } from '../../src/client/index.js';
import { decodeSubjectLabel, encodeSubjectLabel, ITEM_FIELD, LetheStore } from '../../src/client/langgraph.js';
import { TOKENS } from '../support/vault.js';
import { type ServedVault, serveTestVault } from './served.js';

let v: ServedVault;
let lethe: Lethe;

beforeAll(async () => {
  v = await serveTestVault();
  lethe = new Lethe({ baseUrl: v.baseUrl, tokens: { writer: TOKENS.writer, eraser: TOKENS.eraser, admin: TOKENS.admin } });
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

/** Every file under a folder. */
function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = path.join(dir, name);
    return statSync(p).isDirectory() ? files(p) : [p];
  });
}

/** The store's entries of a subject, as lethe holds them. */
async function entriesOf(subject: string) {
  const all = [];
  for await (const e of lethe.entries.list(subject)) all.push(e);
  return all;
}

describe('the LangGraph store contract', () => {
  it("a new key's put is one call and a get one lookup; a re-put is two (the item's entries come back with the refusal): a subject is read whole once", async () => {
    const calls: string[] = [];
    const counted = new Lethe({
      baseUrl: v.baseUrl,
      tokens: { writer: TOKENS.writer },
      fetch: (url, init) => {
        calls.push(`${init.method ?? 'GET'} ${new URL(url).pathname}`);
        return fetch(url, init);
      },
    });
    const store = new LetheStore({ lethe: counted, subjectLabel: 0 });
    const subject = `mira-${Math.random().toString(36).slice(2, 8)}`;
    for (let i = 0; i < 12; i++) await store.put([subject, 'facts'], `k${i}`, { text: `Mira fact number ${i}` });
    for (let i = 0; i < 12; i++) expect(await store.get([subject, 'facts'], `k${i}`)).not.toBeNull();
    expect(await store.get([subject, 'facts'], 'missing')).toBeNull();
    const wholeReads = calls.filter((c) => c === `GET /v1/subjects/${subject}/entries`);
    expect(wholeReads).toHaveLength(1);
    // the first put looked the key up before the subject was read whole; every later put is an append alone
    expect(calls.filter((c) => c.endsWith('/items/lookup'))).toHaveLength(1 + 13);
    expect(calls.filter((c) => c === `POST /v1/subjects/${subject}/entries`)).toHaveLength(12);
    calls.length = 0;
    await store.put([subject, 'facts'], 'k3', { text: 'Mira fact number three, revised' });
    expect(calls).toEqual([`POST /v1/subjects/${subject}/entries`, `POST /v1/subjects/${subject}/supersede`]);
    expect((await store.get([subject, 'facts'], 'k3'))!.value).toEqual({ text: 'Mira fact number three, revised' });
    // the old version is forgotten, not left live beside the new one
    expect((await entriesOf(subject)).map((e) => e.text).filter((t) => /number (3|three)\b/.test(t))).toEqual(['Mira fact number three, revised']);
  });

  it('put then get: the item with its namespace, key, value and dates; an unknown key or subject is null', async () => {
    const store = new LetheStore({ lethe, subjectLabel: 0 });
    await store.put(['ana', 'prefs'], 'seat', { text: 'Ana prefers the window seat', rank: 2 });
    const item = await store.get(['ana', 'prefs'], 'seat');
    expect(item).toMatchObject({ namespace: ['ana', 'prefs'], key: 'seat', value: { text: 'Ana prefers the window seat', rank: 2 } });
    expect(item!.createdAt).toBeInstanceOf(Date);
    expect(item!.updatedAt.getTime()).toBe(item!.createdAt.getTime());
    expect(await store.get(['ana', 'prefs'], 'nothing')).toBeNull();
    expect(await store.get(['ana', 'other'], 'seat')).toBeNull();
    expect(await store.get(['nobody-ever', 'prefs'], 'seat')).toBeNull();
    // the subject is the namespace's first label; namespace, key and value travel as the entry's metadata
    const [entry] = await entriesOf('ana');
    expect(entry).toMatchObject({
      kind: 'langgraph-item',
      text: 'Ana prefers the window seat',
      metadata: { [ITEM_FIELD]: { namespace: ['ana', 'prefs'], key: 'seat', value: { rank: 2 } } },
    });
    // where it lives, to name it as an artifact's source
    expect(await store.locate(['ana', 'prefs'], 'seat')).toEqual({ subject: 'ana', entryId: entry!.entryId, entryIds: [entry!.entryId] });
    expect(await store.locate(['ana', 'prefs'], 'nothing')).toBeNull();
  });

  it('a re-put supersedes: the new value is answered, its createdAt kept, and the old memory forgotten (410 entry_forgotten)', async () => {
    const store = new LetheStore({ lethe, subjectLabel: 0 });
    await store.put(['ben', 'prefs'], 'drink', { text: 'Ben drinks green tea' });
    const [first] = await entriesOf('ben');
    const before = await store.get(['ben', 'prefs'], 'drink');
    await new Promise((r) => setTimeout(r, 20));
    await store.put(['ben', 'prefs'], 'drink', { text: 'Ben switched to rooibos' });
    const after = await store.get(['ben', 'prefs'], 'drink');
    expect(after!.value).toEqual({ text: 'Ben switched to rooibos' });
    expect(after!.createdAt.getTime()).toBe(before!.createdAt.getTime());
    expect(after!.updatedAt.getTime()).toBeGreaterThan(before!.updatedAt.getTime());
    const forgotten = await rejection(lethe.entries.get(first!.entryId));
    expect(forgotten).toMatchObject({ status: 410, code: 'entry_forgotten' });
    expect((await entriesOf('ben')).map((e) => e.text)).toEqual(['Ben switched to rooibos']);
    // again at once, while the first forgetting may still run: each put forgets what it supersedes
    await store.put(['ben', 'prefs'], 'drink', { text: 'Ben is back on green tea' });
    expect((await store.get(['ben', 'prefs'], 'drink'))!.value).toEqual({ text: 'Ben is back on green tea' });
    expect((await entriesOf('ben')).map((e) => e.text)).toEqual(['Ben is back on green tea']);
    // the forgetting is a records-scope erasure of that one entry
    const erasures = [];
    for await (const e of lethe.erasures.list()) if (e.scope === 'records' && e.entryIds?.includes(first!.entryId)) erasures.push(e);
    expect(erasures).toHaveLength(1);
  });

  it('delete and put(…, null) forget the item: get answers null and the entry is gone', async () => {
    const store = new LetheStore({ lethe, subjectLabel: 0 });
    await store.put(['cleo', 'notes'], 'a', { text: 'Cleo note alpha' });
    await store.put(['cleo', 'notes'], 'b', { text: 'Cleo note beta' });
    await store.delete(['cleo', 'notes'], 'a');
    await store.batch([{ namespace: ['cleo', 'notes'], key: 'b', value: null }]);
    expect(await store.get(['cleo', 'notes'], 'a')).toBeNull();
    expect(await store.get(['cleo', 'notes'], 'b')).toBeNull();
    expect(await entriesOf('cleo')).toEqual([]);
    // deleting what is not there is a no-op
    await store.delete(['cleo', 'notes'], 'never');
  });

  it('search without a query: the items under the namespace prefix, newest first, filtered on the value, with offset and limit', async () => {
    const store = new LetheStore({ lethe, subjectLabel: 0 });
    const ns = ['dan', 'books'];
    for (const [i, genre] of ['novel', 'essay', 'novel', 'poetry', 'novel'].entries()) {
      await store.put(ns, `b${i}`, { text: `Dan read book ${i}`, genre, pages: 100 * (i + 1) });
    }
    await store.put(['dan', 'films'], 'f1', { text: 'Dan saw a film', genre: 'novel' });
    const all = await store.search(ns);
    expect(all.map((i) => i.key)).toEqual(['b4', 'b3', 'b2', 'b1', 'b0']);
    expect(all.every((i) => i.score === undefined)).toBe(true);
    expect((await store.search(ns, { filter: { genre: 'novel' } })).map((i) => i.key)).toEqual(['b4', 'b2', 'b0']);
    expect((await store.search(ns, { filter: { pages: { $gte: 300 }, genre: { $ne: 'poetry' } } })).map((i) => i.key)).toEqual(['b4', 'b2']);
    expect((await store.search(ns, { filter: { genre: { $in: ['essay', 'poetry'] } } })).map((i) => i.key)).toEqual(['b3', 'b1']);
    expect((await store.search(ns, { limit: 2, offset: 1 })).map((i) => i.key)).toEqual(['b3', 'b2']);
    // the prefix is the subject alone: every namespace of it
    expect((await store.search(['dan'], { filter: { genre: 'novel' } })).map((i) => i.key)).toEqual(['f1', 'b4', 'b2', 'b0']);
    expect(await store.search(['dan', 'music'])).toEqual([]);
  });

  it("search with a query is a scoped search of the subject: best first, never another subject's items", async () => {
    const store = new LetheStore({ lethe, subjectLabel: 0 });
    await store.put(['eli', 'memories'], 'm1', { text: 'Eli is allergic to hazelnuts and almonds' });
    await store.put(['eli', 'memories'], 'm2', { text: 'Eli plays the cello in a string quartet' });
    await store.put(['eli', 'other'], 'm3', { text: 'Eli keeps hazelnuts out of the kitchen' });
    await store.put(['fay', 'memories'], 'm1', { text: 'Fay is allergic to hazelnuts too' });
    const hits = await store.search(['eli', 'memories'], { query: 'allergic to hazelnuts', limit: 5 });
    expect(hits.map((h) => h.key)).toEqual(['m1', 'm2']);
    expect(hits[0]!.score).toBeGreaterThan(hits[1]!.score!);
    expect(hits[0]).toMatchObject({ namespace: ['eli', 'memories'], value: { text: 'Eli is allergic to hazelnuts and almonds' } });
    const wide = await store.search(['eli'], { query: 'hazelnuts', limit: 5 });
    expect(wide.map((h) => `${h.namespace[1]}/${h.key}`).sort()).toEqual(['memories/m1', 'memories/m2', 'other/m3']);
    expect(wide.every((h) => h.namespace[0] === 'eli')).toBe(true);
    expect((await store.search(['eli'], { query: 'hazelnuts', limit: 1, offset: 1 })).length).toBe(1);
    expect(await store.search(['eli'], { query: 'hazelnuts', filter: { text: 'no such text' } })).toEqual([]);
  });

  it('listNamespaces: the namespaces of the subject a prefix names, else of every subject (a fresh store too); maxDepth, suffix, limit and offset', async () => {
    const store = new LetheStore({ lethe, subjectLabel: 0 });
    await store.put(['gus', 'memories'], 'a', { text: 'Gus a' });
    await store.put(['gus', 'prefs', 'food'], 'b', { text: 'Gus b' });
    await store.put(['gus', 'prefs', 'travel'], 'c', { text: 'Gus c' });
    await store.put(['hal', 'memories'], 'a', { text: 'Hal a' });
    expect(await store.listNamespaces({ prefix: ['gus'] })).toEqual([
      ['gus', 'memories'],
      ['gus', 'prefs', 'food'],
      ['gus', 'prefs', 'travel'],
    ]);
    expect(await store.listNamespaces({ prefix: ['gus'], maxDepth: 2 })).toEqual([
      ['gus', 'memories'],
      ['gus', 'prefs'],
    ]);
    expect(await store.listNamespaces({ prefix: ['gus', 'prefs'], suffix: ['travel'] })).toEqual([['gus', 'prefs', 'travel']]);
    expect(await store.listNamespaces({ prefix: ['gus'], limit: 1, offset: 1 })).toEqual([['gus', 'prefs', 'food']]);
    // no prefix: every subject's namespaces the service indexed (this file's other tests put some too)
    const memories = [
      ['gus', 'memories'],
      ['hal', 'memories'],
    ];
    expect(await store.listNamespaces({ suffix: ['memories'] })).toEqual(expect.arrayContaining(memories));
    expect(await store.listNamespaces({ prefix: ['*', 'memories'] })).toEqual(expect.arrayContaining(memories));
    for (const ns of await store.listNamespaces({ suffix: ['memories'] })) expect(ns.at(-1)).toBe('memories');
    // a new store that touched nothing lists them as well: the namespaces are indexed on the service, the labels sealed in entries
    const fresh = new LetheStore({ lethe, subjectLabel: 0 });
    expect(fresh.knownSubjects).toEqual([]);
    expect(await fresh.listNamespaces({})).toEqual(expect.arrayContaining([...memories, ['gus', 'prefs', 'food'], ['gus', 'prefs', 'travel']]));
  });

  it('a custom subjectOf maps namespaces to subjects; what does not fit is refused before any request', async () => {
    const store = new LetheStore({ lethe, subjectOf: (ns) => (ns[0] === 'users' && ns[1] ? `user:${ns[1]}` : undefined) });
    await store.put(['users', 'ivy', 'memories'], 'k', { text: 'Ivy note' });
    expect((await entriesOf('user:ivy')).map((e) => e.text)).toEqual(['Ivy note']);
    expect(await store.get(['users', 'ivy', 'memories'], 'k')).toMatchObject({ value: { text: 'Ivy note' } });
    expect(await rejection(store.put(['teams', 'x'], 'k', { text: 'no subject' }))).toBeInstanceOf(InvalidNamespaceError);

    const plain = new LetheStore({ lethe, subjectLabel: 0 });
    expect(await rejection(plain.put(['bad.label'], 'k', { text: 'x' }))).toBeInstanceOf(InvalidNamespaceError);
    const tooBig = await rejection(plain.put(['ivy2', 'memories'], 'k', { text: 'x'.repeat(20_000) }));
    expect(isLetheError(tooBig, 'validation_failed')).toBe(true);
    expect(String((tooBig as Error).message)).toContain('16 KiB');
    expect(await entriesOf('ivy2').catch((e: unknown) => e)).toBeInstanceOf(ServiceError);
  });

  it('appends through a writer that seals in this process when given one', async () => {
    const writer = lethe.writer({ store: new FsObjectStore(path.join(v.t.dataDir, 'objects'), v.t.config.bucket), segmentMaxAgeMs: 10 });
    try {
      const store = new LetheStore({ lethe, subjectLabel: 0, writer });
      await store.put(['kai', 'memories'], 'tea', { text: 'Kai brews oolong at 85 degrees' });
      expect(await store.get(['kai', 'memories'], 'tea')).toMatchObject({ value: { text: 'Kai brews oolong at 85 degrees' } });
      expect(writer.leasesHeld).toBe(1);
    } finally {
      await writer.close();
    }
  });

  it('items are sealed at rest: neither the value, the key nor the namespace is in clear in the object store', async () => {
    const store = new LetheStore({ lethe, subjectLabel: 0 });
    await store.put(['jo', 'secret-namespace-label'], 'secret-item-key', { text: 'Jo hides the spare key under the zebra-striped doormat' });
    const objects = files(path.join(v.t.dataDir, 'objects'));
    expect(objects.length).toBeGreaterThan(0);
    for (const f of objects) {
      const bytes = readFileSync(f).toString('latin1');
      for (const clear of ['zebra-striped', 'secret-namespace-label', 'secret-item-key']) expect(bytes.includes(clear), `${clear} in ${f}`).toBe(false);
    }
  });
});

describe('which subject a namespace maps to', () => {
  it('subject ids with : . @ and / map to namespace labels LangGraph takes, and back', () => {
    const cases = {
      'user:42': 'user%3A42',
      'ana@example.com': 'ana@example%2Ecom',
      'org/team.lead:7': 'org%2Fteam%2Elead%3A7',
      'a%2E': 'a%252E',
      plain_id: 'plain_id',
    };
    for (const [subject, label] of Object.entries(cases)) {
      expect(encodeSubjectLabel(subject)).toBe(label);
      expect(decodeSubjectLabel(label)).toBe(subject);
      expect(() => validateNamespace(['memories', label])).not.toThrow();
    }
    // what encodeSubjectLabel never writes is refused, not guessed at
    for (const label of ['user:42', 'a.b', 'a%3a', '%zz', '%2', '']) expect(() => decodeSubjectLabel(label), label).toThrow(InvalidNamespaceError);
  });

  it('the store refuses to start without a mapping (no default lumps users together), and says which it uses', () => {
    const none = (() => {
      try {
        return new LetheStore({ lethe });
      } catch (e) {
        return e;
      }
    })();
    expect(isLetheError(none, 'validation_failed')).toBe(true);
    expect(String((none as Error).message)).toMatch(/subjectLabel.*subjectOf/);
    expect(() => new LetheStore({ lethe, subjectLabel: 0, subjectOf: () => 'x' })).toThrow(/not both/);
    expect(() => new LetheStore({ lethe, subjectLabel: -1 })).toThrow(/0-based/);
    expect(new LetheStore({ lethe, subjectLabel: 1 }).subjectMapping).toBe('namespace[1] (decodeSubjectLabel)');
    expect(new LetheStore({ lethe, subjectOf: () => 'x' }).subjectMapping).toBe('subjectOf(namespace)');
  });

  it('subjectLabel names the label: ["memories", user] keeps each user a subject of their own, with e-mails and user:42 as ids', async () => {
    const store = new LetheStore({ lethe, subjectLabel: 1 });
    const mia = 'mia@example.com';
    const ned = 'user:ned.42';
    await store.put(['memories', encodeSubjectLabel(mia)], 'm', { text: 'Mia collects vintage typewriters' });
    await store.put(['memories', encodeSubjectLabel(ned), 'work'], 'm', { text: 'Ned repairs church organs' });
    expect((await entriesOf(mia)).map((e) => e.text)).toEqual(['Mia collects vintage typewriters']);
    expect((await entriesOf(ned)).map((e) => e.text)).toEqual(['Ned repairs church organs']);
    expect(await entriesOf('memories').catch((e: unknown) => e)).toBeInstanceOf(ServiceError);
    expect(await store.get(['memories', encodeSubjectLabel(ned), 'work'], 'm')).toMatchObject({ value: { text: 'Ned repairs church organs' } });
    expect((await store.search(['memories', encodeSubjectLabel(mia)])).map((i) => i.value.text)).toEqual(['Mia collects vintage typewriters']);
    // a namespace without that label names no subject, and says which label it lacks
    const lacking = await rejection(store.put(['memories'], 'k', { text: 'whose?' }));
    expect(lacking).toBeInstanceOf(InvalidNamespaceError);
    expect(String((lacking as Error).message)).toContain('namespace[1]');
    // a label not written by encodeSubjectLabel is refused before any request
    expect(await rejection(store.get(['memories', 'ned%3'], 'm'))).toBeInstanceOf(InvalidNamespaceError);
  });
});

describe('search scores', () => {
  it('an item answers its best field’s score; an item put with index: false has no score and comes after the scored ones', async () => {
    const store = new LetheStore({ lethe, subjectLabel: 0, fields: ['title', 'body'] });
    const ns = ['ora', 'notes'];
    await store.put(ns, 'both', { title: 'Weekly groceries and errands', body: 'Ora is allergic to pistachios' });
    await store.put(ns, 'body-only', { body: 'Ora is allergic to pistachios' }, ['body']);
    await store.put(ns, 'unindexed', { title: 'Ora is allergic to pistachios', body: 'not searchable' }, false);
    // one entry per indexed field, each with that field's text; the unindexed item one entry without text
    const texts = (await entriesOf('ora')).map((e) => e.text);
    expect(texts).toEqual(['Weekly groceries and errands', 'Ora is allergic to pistachios', 'Ora is allergic to pistachios', '']);
    const hits = await store.search(ns, { query: 'allergic to pistachios', limit: 10 });
    expect(hits.map((h) => h.key)).toEqual([expect.any(String), expect.any(String), 'unindexed']);
    const byKey = Object.fromEntries(hits.map((h) => [h.key, h]));
    // the best field (the body) scores the item, as the same text alone does: not a blend of both fields
    expect(byKey.both!.score).toBeGreaterThan(0);
    expect(byKey.both!.score).toBeCloseTo(byKey['body-only']!.score!, 6);
    expect(byKey.unindexed).not.toHaveProperty('score');
    expect(byKey.unindexed!.value).toEqual({ title: 'Ora is allergic to pistachios', body: 'not searchable' });
    // offset and limit count the unscored items after the scored ones
    expect((await store.search(ns, { query: 'allergic to pistachios', offset: 2, limit: 5 })).map((h) => h.key)).toEqual(['unindexed']);
    // a re-put of a two-field item forgets both of its entries
    await store.put(ns, 'both', { title: 'Errands', body: 'Ora bakes sourdough' });
    expect((await entriesOf('ora')).map((e) => e.text)).toEqual(['Ora is allergic to pistachios', '', 'Errands', 'Ora bakes sourdough']);
    const located = await store.locate(ns, 'both');
    expect(located!.entryIds).toHaveLength(2);
  });
});

describe('an agent graph with the store', () => {
  it('writes and recalls each user’s memories; once a user is erased it recalls nothing of them, keeps the other’s, and cannot learn the erased user again', async () => {
    // search matches a memory's text, not the time it was said (a timestamp shared by two people's memories would tie them together)
    const store = new LetheStore({ lethe, subjectLabel: 0, fields: ['text'] });
    const agent = buildMemoryAgent(store);
    expect(await ask(agent, 'kim', 'Remember that I live on Rue des Lilas in Lyon')).toBe('Noted: I live on Rue des Lilas in Lyon');
    expect(await ask(agent, 'kim', 'Remember that my daughter Zoé studies oboe')).toBe('Noted: my daughter Zoé studies oboe');
    expect(await ask(agent, 'lou', 'Remember that I am training for the Berlin marathon')).toBe('Noted: I am training for the Berlin marathon');

    const kimRecall = await ask(agent, 'kim', 'Where do I live?');
    expect(kimRecall).toMatch(/^From what you told me: /);
    expect(kimRecall).toContain('I live on Rue des Lilas in Lyon');
    expect(kimRecall).not.toContain('Berlin');
    expect(await ask(agent, 'lou', 'What am I training for?')).toBe('From what you told me: I am training for the Berlin marathon');
    expect(await store.get(memories('kim'), memoryKey('my daughter Zoé studies oboe'))).toMatchObject({ value: { text: 'my daughter Zoé studies oboe' } });

    const { erasureId } = await lethe.erase({ subject: 'kim', reason: 'the user asked to be forgotten' });
    const erasure = await lethe.erasures.wait(erasureId, { timeoutMs: 120_000 });
    const matched = await Promise.all(erasure.probe.matches.map(async (m) => (await lethe.entries.get(m.id).catch(() => ({ text: '?' }))).text));
    expect(erasure.status, JSON.stringify({ probe: erasure.probe, matched })).toBe('completed');
    expect((await lethe.certificates.verifyErasure(erasureId)).valid).toBe(true);

    expect(await ask(agent, 'kim', 'Where do I live?')).toBe("I don't remember anything about you.");
    expect(await store.search(memories('kim'))).toEqual([]);
    expect(await store.get(memories('kim'), memoryKey('I live on Rue des Lilas in Lyon'))).toBeNull();
    expect(await store.listNamespaces({ prefix: ['kim'] })).toEqual([]);
    expect(await ask(agent, 'lou', 'What am I training for?')).toBe('From what you told me: I am training for the Berlin marathon');
    // no re-learning: the erased user's new memories are refused until an admin reinstates them
    const relearn = await rejection(ask(agent, 'kim', 'Remember that I live on Rue des Lilas in Lyon'));
    expect(relearn).toMatchObject({ code: 'subject_erased', status: 410 });
  });
});
