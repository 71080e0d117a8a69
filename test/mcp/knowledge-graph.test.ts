/**
 * `lethe mcp --knowledge-graph`: the reference knowledge-graph memory server's nine tools
 * (`@modelcontextprotocol/server-memory`, spawned itself for comparison), kept in lethe. Driven
 * by the SDK's own `Client` over stdio against a real `lethe serve` on PostgreSQL: the same
 * tool names and input schemas as the reference; the same answers to the same script of calls;
 * delete_entities is the entity subject's erasure, followed to `completed` with progress, with a
 * certificate, taking the entity's observations and relations with it; bad arguments and a
 * writer-only delete_entities are tool errors and the session goes on; `POST
 * /mcp/knowledge-graph` lists the nine tools over Streamable HTTP.
 */
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult, Progress } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Lethe } from '../../src/client/lethe.js';
import { entityName, entitySubject, entitySubjectOrUndefined } from '../../src/mcp/entity-subjects.js';
import { KNOWLEDGE_GRAPH_TOOL_NAMES } from '../../src/mcp/knowledge-graph.js';
import { CLI } from '../support/process.js';
import { type Served, serveOnPostgres } from '../support/served.js';
import { tempDir, TOKENS } from '../support/vault.js';

const TIMEOUT = 60_000;
const tag = () => randomBytes(4).toString('hex');
const ERASURE_ID = /^ers_[A-Za-z0-9_-]{22}$/;
const REFERENCE = 'node_modules/@modelcontextprotocol/server-memory/dist/index.js';

type Entity = { name: string; entityType: string; observations: string[] };
type Relation = { from: string; to: string; relationType: string };
type Graph = { entities: Entity[]; relations: Relation[] };

let served: Served;
let memoryDir: string;
const clients: Client[] = [];
/** `lethe mcp --knowledge-graph` with the writer's and the eraser's tokens. */
let kg: Client;

function env(extra: Record<string, string>): Record<string, string> {
  return { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', ...extra };
}

async function open(command: string, args: string[], extra: Record<string, string>): Promise<Client> {
  const transport = new StdioClientTransport({ command, args, env: env(extra), cwd: process.cwd(), stderr: 'pipe' });
  const client = new Client({ name: 'lethe-test', version: '0.0.0' });
  await client.connect(transport);
  clients.push(client);
  return client;
}

/** `lethe mcp --knowledge-graph` with these tokens. */
const connectLethe = (tokens: string) => open(process.execPath, [...CLI, 'mcp', '--knowledge-graph'], { LETHE_URL: served.service.url, LETHE_TOKENS: tokens });
/** The reference server itself, on a memory file of its own. */
const connectReference = () => open(process.execPath, [REFERENCE], { MEMORY_FILE_PATH: join(memoryDir, `memory-${tag()}.jsonl`) });

beforeAll(async () => {
  served = await serveOnPostgres();
  memoryDir = tempDir('lethe-kg-reference-');
  kg = await connectLethe(`writer=${TOKENS.writer},eraser=${TOKENS.eraser}`);
}, 120_000);

afterAll(async () => {
  for (const c of clients) await c.close().catch(() => undefined);
  await served?.close();
  if (memoryDir) rmSync(memoryDir, { recursive: true, force: true });
});

interface Answer {
  readonly isError: boolean;
  readonly text: string;
  readonly structured: Record<string, unknown> | undefined;
}

async function raw(client: Client, name: string, args: Record<string, unknown>): Promise<Answer> {
  const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
  const text = result.content.map((c) => (c.type === 'text' ? c.text : '')).join('');
  for (const token of Object.values(TOKENS)) expect(text).not.toContain(token);
  return { isError: result.isError ?? false, text, structured: result.structuredContent };
}

/** A tool's structured answer (a tool error fails the test, with its text). */
async function call<T>(client: Client, name: string, args: Record<string, unknown>): Promise<T> {
  const a = await raw(client, name, args);
  expect(a.isError, a.text).toBe(false);
  return a.structured as T;
}

/** A tool error's text (an answer that is not one fails the test). */
async function toolError(client: Client, name: string, args: Record<string, unknown>): Promise<string> {
  const a = await raw(client, name, args);
  expect(a.isError, a.text).toBe(true);
  return a.text;
}

/** A graph in a stable order, kept to these names (the vault holds other tests' entities too). */
function sorted(graph: Graph, names: ReadonlySet<string>): Graph {
  const key = (r: Relation) => JSON.stringify([r.from, r.to, r.relationType]);
  return {
    entities: graph.entities.filter((e) => names.has(e.name)).sort((a, b) => a.name.localeCompare(b.name)),
    relations: graph.relations.filter((r) => names.has(r.from) || names.has(r.to)).sort((a, b) => key(a).localeCompare(key(b))),
  };
}

/** A JSON Schema's shape: types, properties, items and required, nothing else (descriptions are each server's own). */
function shape(schema: unknown): unknown {
  if (typeof schema !== 'object' || schema === null) return schema;
  const s = schema as Record<string, unknown>;
  return {
    type: s.type,
    ...(s.properties
      ? {
          properties: Object.fromEntries(
            Object.entries(s.properties as Record<string, unknown>)
              .map(([k, v]) => [k, shape(v)])
              .sort(([a], [b]) => String(a).localeCompare(String(b))),
          ),
        }
      : {}),
    ...(s.items ? { items: shape(s.items) } : {}),
    ...(Array.isArray(s.required) ? { required: [...s.required].sort() } : {}),
  };
}

describe('entity names as subjects', () => {
  it('kg: and the UTF-8 bytes outside A-Z a-z 0-9 . _ : @ - as +HH, reversible; empty or too long has none', () => {
    expect(entitySubject('John Smith', 'name')).toBe('kg:John+20Smith');
    expect(entitySubject('Zoë', 'name')).toBe('kg:Zo+C3+AB');
    expect(entitySubject('C++', 'name')).toBe('kg:C+2B+2B');
    expect(entitySubject('a.b_c:d@e-f', 'name')).toBe('kg:a.b_c:d@e-f');
    for (const name of ['John Smith', 'Zoë', 'C++', '東京 🗼', 'a/b?c=d', '+2B']) expect(entityName(entitySubject(name, 'name'))).toBe(name);
    expect(entityName('kg:C+2b')).toBeUndefined();
    expect(entityName('user:1')).toBeUndefined();
    expect(entitySubjectOrUndefined('x'.repeat(197))).toBe(`kg:${'x'.repeat(197)}`);
    expect(entitySubjectOrUndefined('x'.repeat(198))).toBeUndefined();
    expect(entitySubjectOrUndefined('é'.repeat(32))).toBe(`kg:${'+C3+A9'.repeat(32)}`);
    expect(entitySubjectOrUndefined('é'.repeat(33))).toBeUndefined();
    expect(() => entitySubject('', 'names[0]')).toThrow(/^names\[0\]: an entity name must not be empty/);
    expect(() => entitySubject('x'.repeat(300), 'entities[1].name')).toThrow(/^entities\[1\]\.name: the entity name is too long/);
    // one spelling per name: the decomposed Zoë and a lone surrogate have no subject
    expect(() => entitySubject('Zoe\u0308', 'names[0]')).toThrow(/^names\[0\]: the entity name must be well-formed Unicode in NFC/);
    expect(entitySubjectOrUndefined('a\uD800')).toBeUndefined();
    expect(entitySubjectOrUndefined('a\uDC00b')).toBeUndefined();
  });
});

describe('lethe mcp --knowledge-graph', () => {
  it("lists the reference's nine tools with the reference's input schemas", { timeout: TIMEOUT }, async () => {
    const reference = await connectReference();
    const [ours, theirs] = await Promise.all([kg.listTools(), reference.listTools()]);
    expect(ours.tools.map((t) => t.name)).toEqual([...KNOWLEDGE_GRAPH_TOOL_NAMES]);
    expect(theirs.tools.map((t) => t.name).sort()).toEqual([...KNOWLEDGE_GRAPH_TOOL_NAMES].sort());
    for (const t of theirs.tools) {
      const mine = ours.tools.find((o) => o.name === t.name)!;
      expect(shape(mine.inputSchema), t.name).toEqual(shape(t.inputSchema));
      expect(mine.description, t.name).toMatch(/\w/);
      expect(mine.annotations, t.name).toEqual(t.annotations);
      // the output schema may add fields, never drop one
      expect(Object.keys(mine.outputSchema?.properties ?? {}), t.name).toEqual(expect.arrayContaining(Object.keys(t.outputSchema?.properties ?? {})));
    }
  });

  it('answers the same script of calls as the reference does', { timeout: 3 * TIMEOUT }, async () => {
    const reference = await connectReference();
    const t = tag();
    const zoe = `Zoë Ortiz ${t}`;
    const acme = `Acme Corp ${t}`;
    const guild = `C++ Guild ${t}`;
    const names = new Set([zoe, acme, guild, `Nobody ${t}`]);
    const script: Array<[string, Record<string, unknown>]> = [
      [
        'create_entities',
        {
          entities: [
            { name: zoe, entityType: 'person', observations: ['lives in Lisbon', 'plays the cello'] },
            { name: acme, entityType: 'organization', observations: ['makes anvils'] },
            { name: guild, entityType: 'group', observations: [] },
          ],
        },
      ],
      ['create_entities', { entities: [{ name: zoe, entityType: 'robot', observations: ['a duplicate'] }] }],
      [
        'create_relations',
        {
          relations: [
            { from: zoe, to: acme, relationType: 'works_at' },
            { from: zoe, to: guild, relationType: 'member_of' },
            { from: acme, to: acme, relationType: 'owns' },
          ],
        },
      ],
      [
        'create_relations',
        {
          relations: [
            { from: zoe, to: acme, relationType: 'works_at' },
            { from: guild, to: zoe, relationType: 'invited' },
          ],
        },
      ],
      [
        'add_observations',
        {
          observations: [
            { entityName: zoe, contents: ['plays the cello', 'speaks Portuguese'] },
            { entityName: acme, contents: ['founded in 1920'] },
          ],
        },
      ],
      ['search_nodes', { query: 'CELLO' }],
      ['search_nodes', { query: t }],
      ['search_nodes', { query: `ANVILS` }],
      ['open_nodes', { names: [acme, `Nobody ${t}`] }],
      ['read_graph', {}],
      [
        'delete_observations',
        {
          deletions: [
            { entityName: zoe, observations: ['lives in Lisbon'] },
            { entityName: `Nobody ${t}`, observations: ['x'] },
          ],
        },
      ],
      ['open_nodes', { names: [zoe] }],
      [
        'delete_relations',
        {
          relations: [
            { from: zoe, to: guild, relationType: 'member_of' },
            { from: zoe, to: acme, relationType: 'no_such_relation' },
          ],
        },
      ],
      ['read_graph', {}],
    ];
    for (const [name, args] of script) {
      const [ours, theirs] = [await raw(kg, name, args), await raw(reference, name, args)];
      const step = `${name} ${JSON.stringify(args)}`;
      expect(ours.isError, `${step}: ${ours.text}`).toBe(false);
      expect(theirs.isError, `${step}: ${theirs.text}`).toBe(false);
      if (['read_graph', 'search_nodes', 'open_nodes'].includes(name)) {
        expect(sorted(ours.structured as Graph, names), step).toEqual(sorted(theirs.structured as Graph, names));
        expect(sorted(JSON.parse(ours.text) as Graph, names), step).toEqual(sorted(JSON.parse(theirs.text) as Graph, names));
      } else {
        expect(ours.structured, step).toEqual(theirs.structured);
        expect(ours.text, step).toEqual(theirs.text);
      }
    }
    const final = sorted(await call<Graph>(kg, 'read_graph', {}), names);
    expect(final.entities.find((e) => e.name === zoe)?.observations).toEqual(['plays the cello', 'speaks Portuguese']);
    expect(final.relations).toHaveLength(3);
  });

  it('delete_entities erases the entity: completed with progress, a certificate, its observations and relations gone, the others kept', {
    timeout: 3 * TIMEOUT,
  }, async () => {
    const t = tag();
    const keep = `Maya ${t}`;
    const gone = `Kite Shop ${t}`;
    await call(kg, 'create_entities', {
      entities: [
        { name: keep, entityType: 'person', observations: ['drinks oolong tea every morning'] },
        { name: gone, entityType: 'shop', observations: ['sells red box kites on Elm Road'] },
      ],
    });
    await call(kg, 'create_relations', {
      relations: [
        { from: keep, to: gone, relationType: 'shops_at' },
        { from: gone, to: gone, relationType: 'supplies' },
        { from: keep, to: keep, relationType: 'mentors' },
      ],
    });
    const progress: Progress[] = [];
    const result = (await kg.callTool({ name: 'delete_entities', arguments: { entityNames: [gone, `Nobody ${t}`] } }, undefined, {
      onprogress: (p) => progress.push(p),
      resetTimeoutOnProgress: true,
      timeout: 2 * TIMEOUT,
    })) as CallToolResult;
    const text = result.content.map((c) => (c.type === 'text' ? c.text : '')).join('');
    expect(result.isError ?? false, text).toBe(false);
    expect(text).toBe('Entities deleted successfully');
    const answer = result.structuredContent as { success: boolean; message: string; erasures: Array<{ name: string; erasureId: string; status: string }> };
    expect(answer).toEqual({
      success: true,
      message: 'Entities deleted successfully',
      erasures: [{ name: gone, erasureId: expect.stringMatching(ERASURE_ID), status: 'completed' }],
    });
    expect(progress.length).toBeGreaterThan(0);
    expect(progress.map((p) => p.progress)).toEqual(progress.map((_, i) => i + 1));
    expect(progress.map((p) => p.message).join('\n')).toMatch(/destroy done/);

    const eraser = new Lethe({ baseUrl: served.service.url, token: TOKENS.eraser });
    const certificate = await eraser.certificates.get(answer.erasures[0]!.erasureId);
    expect(certificate).toMatchObject({ algorithm: 'Ed25519', signature: expect.any(String) });

    const graph = await call<Graph>(kg, 'read_graph', {});
    expect(graph.entities.map((e) => e.name)).toContain(keep);
    expect(graph.entities.map((e) => e.name)).not.toContain(gone);
    expect(graph.relations.filter((r) => r.from === gone || r.to === gone)).toEqual([]);
    expect(graph.relations).toContainEqual({ from: keep, to: keep, relationType: 'mentors' });
    expect(graph.entities.find((e) => e.name === keep)?.observations).toEqual(['drinks oolong tea every morning']);
    expect(await call<Graph>(kg, 'open_nodes', { names: [gone] })).toEqual({ entities: [], relations: [] });
    expect((await call<Graph>(kg, 'search_nodes', { query: 'box kites' })).entities).toEqual([]);

    const writer = new Lethe({ baseUrl: served.service.url, token: TOKENS.writer });
    const kept = await writer.search('oolong tea', { subject: entitySubject(keep, 'name') });
    expect(kept.hits.map((h) => h.text)).toContain('drinks oolong tea every morning');
    const erased = (await writer.search('red box kites on Elm Road', { subject: entitySubject(gone, 'name') })).hits.map((h) => h.text);
    expect(erased).toEqual([]);
    // an erased subject takes no new entry: the name cannot be created again (until an admin reinstates the subject)
    expect(await toolError(kg, 'create_entities', { entities: [{ name: gone, entityType: 'shop', observations: [] }] })).toMatch(/^subject_erased: /);
  });

  it('bad arguments and a missing entity are tool errors naming the problem; a writer-only delete_entities is one too; the sessions go on', {
    timeout: 2 * TIMEOUT,
  }, async () => {
    const t = tag();
    expect(await toolError(kg, 'create_entities', { entities: [{ name: 'x'.repeat(300), entityType: 'thing', observations: [] }] })).toMatch(
      /^validation_failed: entities\[0\]\.name: the entity name is too long/,
    );
    expect(await toolError(kg, 'open_nodes', { names: [''] })).toMatch(/^validation_failed: names\[0\]: an entity name must not be empty/);
    expect(await toolError(kg, 'add_observations', { observations: [{ entityName: `Nobody ${t}`, contents: ['x'] }] })).toBe(
      `not_found: Entity with name Nobody ${t} not found`,
    );
    expect(await toolError(kg, 'create_relations', { relations: [{ from: `Nobody ${t}`, to: `Nobody ${t}`, relationType: 'is' }] })).toMatch(
      /^not_found: Entity with name Nobody \w+ not found/,
    );
    expect(await toolError(kg, 'create_entities', { entities: [{ name: 'x' }] })).toMatch(/entityType/);
    // the session goes on
    expect((await kg.listTools()).tools).toHaveLength(KNOWLEDGE_GRAPH_TOOL_NAMES.length);
    expect(await call(kg, 'open_nodes', { names: [`Nobody ${t}`] })).toEqual({ entities: [], relations: [] });

    const writer = await connectLethe(`writer=${TOKENS.writer}`);
    const name = `Ida ${t}`;
    await call(writer, 'create_entities', { entities: [{ name, entityType: 'person', observations: ['likes jazz', 'likes rain'] }] });
    expect(await toolError(writer, 'delete_entities', { entityNames: [name] })).toMatch(/^validation_failed: no token for the eraser role/);
    // nothing was erased; the writer forgets its own observations (as forget_memory does)
    await call(writer, 'delete_observations', { deletions: [{ entityName: name, observations: ['likes rain'] }] });
    expect(await call<Graph>(writer, 'open_nodes', { names: [name] })).toEqual({
      entities: [{ name, entityType: 'person', observations: ['likes jazz'] }],
      relations: [],
    });
  });

  it('an entity entry written into another subject, or an artifact that only says it relates two names, is no part of the graph', {
    timeout: TIMEOUT,
  }, async () => {
    const writer = new Lethe({ baseUrl: served.service.url, tokens: { writer: TOKENS.writer } });
    const real = `Real ${tag()}`;
    const spoofed = `Spoofed ${tag()}`;
    await call(kg, 'create_entities', { entities: [{ name: real, entityType: 'person', observations: [] }] });
    const other = `user:kg-other-${tag()}`;
    const { entryId: stray } = await writer.entries.append(other, {
      text: `${spoofed} (person)`,
      kind: 'kg-entity',
      metadata: { kg: { name: spoofed, entityType: 'person' } },
      item: { namespace: ['kg', 'entity'], key: spoofed },
    });
    const { entryId: realEntry } = (await writer.entries.lookup(entitySubject(real, 'name'), ['kg', 'entity'], real))[0]!;
    await writer.artifacts.create({
      kind: 'fact',
      text: JSON.stringify({ kgRelation: { from: spoofed, to: real, relationType: 'knows' } }),
      sources: [stray, realEntry],
    });
    const graph = await call<Graph>(kg, 'read_graph', {});
    expect(graph.entities.map((e) => e.name)).toContain(real);
    expect(graph.entities.map((e) => e.name)).not.toContain(spoofed);
    expect(graph.relations.filter((r) => r.from === spoofed || r.to === spoofed)).toEqual([]);
    expect((await call<Graph>(kg, 'search_nodes', { query: spoofed })).entities).toEqual([]);
  });

  it('two calls creating one entity at once make one; a name whose subject holds other memories is refused', { timeout: TIMEOUT }, async () => {
    const name = `Twin ${tag()}`;
    const [a, b] = await Promise.all([
      raw(kg, 'create_entities', { entities: [{ name, entityType: 'robot', observations: ['o1'] }] }),
      raw(kg, 'create_entities', { entities: [{ name, entityType: 'robot', observations: ['o1'] }] }),
    ]);
    expect([a.isError, b.isError], `${a.text}\n${b.text}`).toEqual([false, false]);
    expect((await call<Graph>(kg, 'open_nodes', { names: [name] })).entities).toEqual([{ name, entityType: 'robot', observations: ['o1'] }]);
    // a subject the memory tools (or anyone) already write to is not taken over by the graph
    const taken = `Taken ${tag()}`;
    await new Lethe({ baseUrl: served.service.url, tokens: { writer: TOKENS.writer } }).entries.append(entitySubject(taken, 'name'), {
      text: 'an unrelated memory',
    });
    expect(await toolError(kg, 'create_entities', { entities: [{ name: taken, entityType: 'shop', observations: [] }] })).toMatch(
      /^conflict: entities\[0\]\.name: the subject kg:Taken\+20\w+ holds memories that are not this graph's entity/,
    );
  });

  it('delete_entities says when an erasure did not complete: a copy of the entity in another entity’s observation', { timeout: 2 * TIMEOUT }, async () => {
    const alice = `Alice ${tag()}`;
    const bob = `Bob ${tag()}`;
    const secret = `Her locker code is ${tag()}-${tag()}, on the third floor of the Zeno building.`;
    await call(kg, 'create_entities', {
      entities: [
        { name: alice, entityType: 'person', observations: [secret] },
        { name: bob, entityType: 'person', observations: [`He copied this down: ${secret}`] },
      ],
    });
    const answer = await call<{ success: boolean; message: string; erasures: Array<{ name: string; status: string }> }>(kg, 'delete_entities', {
      entityNames: [alice],
    });
    expect(answer.erasures).toEqual([expect.objectContaining({ name: alice, status: 'incomplete' })]);
    expect(answer.success).toBe(false);
    expect(answer.message).toMatch(new RegExp(`^Entities deleted, but not every erasure completed: ${alice}: incomplete \\(ers_`));
  });

  it('over HTTP an eraser token deletes entities (it may not read entries: it erases what it names)', { timeout: 2 * TIMEOUT }, async () => {
    const name = `Ephemeral ${tag()}`;
    await call(kg, 'create_entities', { entities: [{ name, entityType: 'thing', observations: ['short-lived'] }] });
    const client = new Client({ name: 'lethe-test', version: '0.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${served.service.url}/mcp/knowledge-graph`), {
        requestInit: { headers: { authorization: `Bearer ${TOKENS.eraser}` } },
      }),
    );
    clients.push(client);
    const answer = await call<{ success: boolean; erasures: Array<{ name: string; status: string }> }>(client, 'delete_entities', { entityNames: [name] });
    expect(answer.erasures).toEqual([expect.objectContaining({ name, status: 'completed' })]);
    expect(answer.success).toBe(true);
    expect((await call<Graph>(kg, 'open_nodes', { names: [name] })).entities).toEqual([]);
  });

  it('POST /mcp/knowledge-graph lists the nine tools (Streamable HTTP, the caller’s token)', { timeout: TIMEOUT }, async () => {
    const client = new Client({ name: 'lethe-test', version: '0.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${served.service.url}/mcp/knowledge-graph`), {
        requestInit: { headers: { authorization: `Bearer ${TOKENS.writer}` } },
      }),
    );
    clients.push(client);
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual([...KNOWLEDGE_GRAPH_TOOL_NAMES]);
    const name = `Noor ${tag()}`;
    await call(client, 'create_entities', { entities: [{ name, entityType: 'person', observations: ['keeps bees'] }] });
    expect((await call<Graph>(client, 'open_nodes', { names: [name] })).entities).toEqual([{ name, entityType: 'person', observations: ['keeps bees'] }]);
    // the same auth as POST /mcp: no token is 401 before any MCP work; GET is 405 (no sessions)
    const url = `${served.service.url}/mcp/knowledge-graph`;
    const anonymous = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get('www-authenticate')).toMatch(/^Bearer/);
    await anonymous.body?.cancel();
    const get = await fetch(url, { headers: { authorization: `Bearer ${TOKENS.writer}`, accept: 'text/event-stream' } });
    expect(get.status).toBe(405);
    expect(get.headers.get('allow')).toBe('POST');
    await get.body?.cancel();
  });
});
