/**
 * The knowledge-graph tool set (`lethe mcp --knowledge-graph`, `POST /mcp/knowledge-graph`):
 * the nine tools of the reference memory server (`@modelcontextprotocol/server-memory`), with
 * its tool names, input schemas and answers, kept in lethe (knowledge-graph-store.ts) so that
 * delete_entities is a subject's erasure, with its certificate. Roles: writer, except
 * delete_entities (eraser) and delete_observations (as forget_memory: `forgetAs`).
 */
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import type { Lethe } from '../client/lethe.js';
import { type KgErasure, type KgGraph, KnowledgeGraphStore } from './knowledge-graph-store.js';
import { answer, followErasure, tool } from './tool.js';

/** The tools, in the order `tools/list` names them (the reference's). */
export const KNOWLEDGE_GRAPH_TOOL_NAMES = [
  'create_entities',
  'create_relations',
  'add_observations',
  'delete_entities',
  'delete_observations',
  'delete_relations',
  'read_graph',
  'search_nodes',
  'open_nodes',
] as const;

export const KNOWLEDGE_GRAPH_INSTRUCTIONS =
  'A knowledge graph of entities (each with a type and observations) and the relations between them, kept in lethe: ' +
  'create_entities, create_relations and add_observations add to it; read_graph, search_nodes and open_nodes read it; ' +
  'delete_entities erases an entity for good (its observations, and every relation touching it) with a signed certificate; ' +
  'delete_observations and delete_relations forget single observations and relations.';

const Entity = z.object({
  name: z.string().describe('the entity name (1 or more characters; its lethe subject is kg: and the escaped name)'),
  entityType: z.string().describe("the entity's type (a person, an organization, an event …)"),
  observations: z.array(z.string()).describe('what is known of it, one fact per string'),
});
const Relation = z.object({
  from: z.string().describe('the entity the relation starts at'),
  to: z.string().describe('the entity the relation ends at'),
  relationType: z.string().describe('the relation, in active voice (works_at, knows …)'),
});
const Graph = { entities: z.array(Entity), relations: z.array(Relation) };
const Done = { success: z.boolean(), message: z.string() };

const graphAnswer = (graph: KgGraph) => answer({ ...graph });
const done = (message: string, extra: Record<string, unknown> = {}) => answer({ success: true, message, ...extra }, message);
const writes = { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false } as const;
const deletes = { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false } as const;
const reads = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false } as const;

export function registerKnowledgeGraphTools(
  server: McpServer,
  lethe: Lethe,
  options: { readonly forgetAs?: 'eraser' | 'writer'; readonly signal?: AbortSignal },
): void {
  const graph = new KnowledgeGraphStore(lethe, options.forgetAs ? { forgetAs: options.forgetAs } : {});
  registerWrites(server, graph);
  registerDeletes(server, lethe, graph, options.signal);
  registerReads(server, graph);
}

/** create_entities, create_relations, add_observations (writer). */
function registerWrites(server: McpServer, graph: KnowledgeGraphStore): void {
  server.registerTool(
    'create_entities',
    {
      title: 'Create Entities',
      description: 'Create entities (name, type, observations) in the knowledge graph; names that exist already are skipped. Answers those created.',
      inputSchema: { entities: z.array(Entity) },
      outputSchema: { entities: z.array(Entity) },
      annotations: writes,
    },
    (args) =>
      tool(
        async () => ({ entities: await graph.createEntities(args.entities) }),
        (v) => answer(v, JSON.stringify(v.entities, null, 2)),
      ),
  );

  server.registerTool(
    'create_relations',
    {
      title: 'Create Relations',
      description: 'Create relations between existing entities (in active voice); relations that exist already are skipped. Answers those created.',
      inputSchema: { relations: z.array(Relation) },
      outputSchema: { relations: z.array(Relation) },
      annotations: writes,
    },
    (args) =>
      tool(
        async () => ({ relations: await graph.createRelations(args.relations) }),
        (v) => answer(v, JSON.stringify(v.relations, null, 2)),
      ),
  );

  server.registerTool(
    'add_observations',
    {
      title: 'Add Observations',
      description: "Add observations to existing entities; contents an entity has already are skipped. Answers each entity's added ones.",
      inputSchema: {
        observations: z.array(
          z.object({
            entityName: z.string().describe('the entity to add to'),
            contents: z.array(z.string()).describe('the observations to add'),
          }),
        ),
      },
      outputSchema: { results: z.array(z.object({ entityName: z.string(), addedObservations: z.array(z.string()) })) },
      annotations: writes,
    },
    (args) =>
      tool(
        async () => ({ results: await graph.addObservations(args.observations) }),
        (v) => answer(v, JSON.stringify(v.results, null, 2)),
      ),
  );
}

/** delete_entities (eraser: a subject's erasure), delete_observations (forgetAs), delete_relations (writer). */
function registerDeletes(server: McpServer, lethe: Lethe, graph: KnowledgeGraphStore, session: AbortSignal | undefined): void {
  server.registerTool(
    'delete_entities',
    {
      title: 'Delete Entities',
      description:
        "Erase entities for good, with their observations and every relation touching them: each is its subject's erasure, followed to its end (progress notifications with a progress token), with a signed certificate. Answers the erasures.",
      inputSchema: { entityNames: z.array(z.string()).describe('the entities to erase') },
      outputSchema: { ...Done, erasures: z.array(z.object({ name: z.string(), erasureId: z.string(), status: z.string() })) },
      annotations: deletes,
    },
    (args, extra) =>
      tool(
        async () => {
          const counter = { progress: 0 };
          const erasures = await graph.deleteEntities(args.entityNames, (id) => followErasure(lethe, id, extra, session, counter));
          return { erasures };
        },
        (v) => {
          // an erasure that did not complete left something recoverable (its residuals say what): not a success
          const open = (v.erasures as KgErasure[]).filter((e) => e.status !== 'completed');
          if (open.length === 0) return done('Entities deleted successfully', v);
          const message = `Entities deleted, but not every erasure completed: ${open.map((e) => `${e.name}: ${e.status} (${e.erasureId})`).join('; ')}`;
          return answer({ success: false, message, ...v }, message);
        },
      ),
  );

  server.registerTool(
    'delete_observations',
    {
      title: 'Delete Observations',
      description: 'Forget observations of entities (each an erasure of that one memory); entities that do not exist are skipped.',
      inputSchema: {
        deletions: z.array(
          z.object({
            entityName: z.string().describe('the entity whose observations to forget'),
            observations: z.array(z.string()).describe('the observations to forget'),
          }),
        ),
      },
      outputSchema: Done,
      annotations: deletes,
    },
    (args) =>
      tool(
        async () => {
          await graph.deleteObservations(args.deletions);
          return {};
        },
        () => done('Observations deleted successfully'),
      ),
  );

  server.registerTool(
    'delete_relations',
    {
      title: 'Delete Relations',
      description: 'Delete relations from the knowledge graph (each relation is erased); relations that do not exist are skipped.',
      inputSchema: { relations: z.array(Relation).describe('the relations to delete') },
      outputSchema: Done,
      annotations: deletes,
    },
    (args) =>
      tool(
        async () => {
          await graph.deleteRelations(args.relations);
          return {};
        },
        () => done('Relations deleted successfully'),
      ),
  );
}

/** read_graph, search_nodes, open_nodes (writer). */
function registerReads(server: McpServer, graph: KnowledgeGraphStore): void {
  server.registerTool(
    'read_graph',
    {
      title: 'Read Graph',
      description: 'The whole knowledge graph: every entity with its observations, and every relation.',
      inputSchema: {},
      outputSchema: Graph,
      annotations: reads,
    },
    () => tool(async () => ({ ...(await graph.readGraph()) }), graphAnswer),
  );

  server.registerTool(
    'search_nodes',
    {
      title: 'Search Nodes',
      description: 'The entities whose name, type or an observation contains the query (case-insensitive), and the relations touching them.',
      inputSchema: { query: z.string().describe('what to look for in names, types and observations') },
      outputSchema: Graph,
      annotations: reads,
    },
    (args) => tool(async () => ({ ...(await graph.searchNodes(args.query)) }), graphAnswer),
  );

  server.registerTool(
    'open_nodes',
    {
      title: 'Open Nodes',
      description: 'The named entities (those that exist), with their observations, and the relations touching them.',
      inputSchema: { names: z.array(z.string()).describe('the entities to open') },
      outputSchema: Graph,
      annotations: reads,
    },
    (args) => tool(async () => ({ ...(await graph.openNodes(args.names)) }), graphAnswer),
  );
}
