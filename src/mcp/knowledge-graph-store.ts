/**
 * The knowledge graph of the reference memory server (`@modelcontextprotocol/server-memory`)
 * kept in lethe, so that deleting an entity is an erasure:
 *
 * - an entity is a subject (`kg:` + its escaped name: entity-subjects.ts) whose entity entry
 *   (kind `kg-entity`, text `<name> (<entityType>)`, metadata `{ kg: { name, entityType } }`,
 *   store item `['kg','entity']`/name) says what it is; `entries.namespaceEntries()` lists one
 *   per entity subject, `entries.lookup` finds one by name;
 * - an observation is an entry of its entity's subject (kind `kg-observation`), in append order;
 * - a relation is a derived artifact (kind `fact`, text `{"kgRelation":{from,to,relationType}}`)
 *   whose sources are its endpoints' entity entries: erasing either endpoint regenerates it
 *   from the other alone (no longer a relation) or erases it.
 *
 * What a call adds or skips is the reference's (filtered against what existed before the call),
 * except that a name repeated within one create_entities call is created once (a name is one subject).
 */
import type { Erasure } from '../client/erasures.js';
import { ServiceError } from '../client/http.js';
import type { Entry, Lethe } from '../client/lethe.js';
import { mapLimit } from '../concurrency.js';
import { LetheError } from '../errors.js';
import { entitySubject, entitySubjectOrUndefined } from './entity-subjects.js';

export interface KgEntity {
  readonly name: string;
  readonly entityType: string;
  readonly observations: string[];
}
export interface KgRelation {
  readonly from: string;
  readonly to: string;
  readonly relationType: string;
}
export interface KgGraph {
  readonly entities: KgEntity[];
  readonly relations: KgRelation[];
}
export interface KgErasure {
  readonly name: string;
  readonly erasureId: string;
  readonly status: string;
}

/** The store item of an entity's entry: `entries.lookup(subject, ENTITY_NAMESPACE, name)`. */
export const ENTITY_NAMESPACE = ['kg', 'entity'] as const;
export const ENTITY_KIND = 'kg-entity';
export const OBSERVATION_KIND = 'kg-observation';
/** The artifact kind of a relation. */
const RELATION_KIND = 'fact';
/** The Idempotency-Key of an entity's entry (per subject): two calls creating one entity at once store one entry. */
const ENTITY_ONCE = 'kg-entity';

interface StoredEntity {
  readonly name: string;
  readonly entityType: string;
  readonly subject: string;
  readonly entryId: string;
  readonly createdAt: string;
}
interface StoredRelation extends KgRelation {
  readonly artifactId: string;
  readonly sources: readonly string[];
}

/** An entity entry's name and type, or undefined when the entry is not one. */
function entityOf(e: Entry): { name: string; entityType: string } | undefined {
  const kg = e.kind === ENTITY_KIND ? e.metadata?.kg : undefined;
  if (typeof kg !== 'object' || kg === null) return undefined;
  const { name, entityType } = kg as Record<string, unknown>;
  return typeof name === 'string' && typeof entityType === 'string' ? { name, entityType } : undefined;
}

/** An artifact's text as a relation, or undefined when it is not one. */
function relationOf(text: string): KgRelation | undefined {
  try {
    const r = (JSON.parse(text) as { kgRelation?: Record<string, unknown> } | null)?.kgRelation;
    if (typeof r !== 'object' || r === null) return undefined;
    const { from, to, relationType } = r;
    return typeof from === 'string' && typeof to === 'string' && typeof relationType === 'string' ? { from, to, relationType } : undefined;
  } catch {
    return undefined;
  }
}

const sameRelation = (a: KgRelation, b: KgRelation) => a.from === b.from && a.to === b.to && a.relationType === b.relationType;
const byCreation = (a: StoredEntity, b: StoredEntity) => a.createdAt.localeCompare(b.createdAt) || a.name.localeCompare(b.name);
const relationOnly = ({ from, to, relationType }: KgRelation): KgRelation => ({ from, to, relationType });
/** Answers the service gives for what is erased or being erased: read as absent. */
const gone = (e: unknown) => e instanceof ServiceError && (e.status === 410 || e.code === 'erasure_in_progress');
const fenced = (e: unknown) => e instanceof ServiceError && e.code === 'erasure_in_progress';
const forbidden = (e: unknown) => e instanceof ServiceError && e.status === 403;
const neverSeen = (e: unknown) => e instanceof ServiceError && e.status === 404 && e.code === 'not_found';
/** At most this many reads of the service at once. */
const READS_AT_ONCE = 8;
/** `fn` over `items`, READS_AT_ONCE at a time; results in order. */
const inBatches = <T, R>(items: readonly T[], fn: (item: T) => Promise<R>): Promise<R[]> => mapLimit(items, READS_AT_ONCE, (item) => fn(item));

/**
 * `work`, again while the service answers 409 erasure_in_progress (an artifact whose sources'
 * key is fenced for a moment: a forgotten observation re-keys its subject), for up to about
 * 15 s; then that answer.
 */
async function patiently<T>(work: () => Promise<T>): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await work();
    } catch (e) {
      if (!fenced(e) || attempt >= 20) throw e;
      await new Promise((resolve) => setTimeout(resolve, Math.min(50 * 2 ** attempt, 1000)));
    }
  }
}

export class KnowledgeGraphStore {
  readonly #lethe: Lethe;
  readonly #forgetAs: 'eraser' | 'writer';

  constructor(lethe: Lethe, options: { readonly forgetAs?: 'eraser' | 'writer' } = {}) {
    this.#lethe = lethe;
    this.#forgetAs = options.forgetAs ?? 'eraser';
  }

  async createEntities(entities: readonly KgEntity[]): Promise<KgEntity[]> {
    const subjects = entities.map((e, i) => entitySubject(e.name, `entities[${i}].name`));
    const created: KgEntity[] = [];
    const seen = new Set<string>();
    for (const [i, e] of entities.entries()) {
      if (seen.has(e.name)) continue;
      seen.add(e.name);
      if (await this.#entity(e.name, subjects[i]!)) continue;
      await this.#refuseForeign(subjects[i]!, `entities[${i}].name`);
      let appended: { replayed: boolean };
      try {
        // one entity entry per subject, however many calls create it at once: a second is a replay, or refused
        appended = await this.#lethe.entries.append(
          subjects[i]!,
          {
            text: `${e.name} (${e.entityType})`,
            kind: ENTITY_KIND,
            metadata: { kg: { name: e.name, entityType: e.entityType } },
            item: { namespace: ENTITY_NAMESPACE, key: e.name },
          },
          { idempotencyKey: ENTITY_ONCE },
        );
      } catch (err) {
        if (err instanceof ServiceError && err.code === 'idempotency_key_reused') continue;
        throw err;
      }
      if (appended.replayed) continue;
      for (const o of e.observations) await this.#observe(subjects[i]!, o);
      created.push({ name: e.name, entityType: e.entityType, observations: [...e.observations] });
    }
    return created;
  }

  async createRelations(relations: readonly KgRelation[]): Promise<KgRelation[]> {
    const entities = await this.#existing(relations.flatMap((r, i) => [[r.from, `relations[${i}].from`] as const, [r.to, `relations[${i}].to`] as const]));
    const existing = await this.#relations();
    const created = relations.filter((r) => !existing.some((x) => sameRelation(x, r))).map(relationOnly);
    for (const r of created) {
      const sources = [...new Set([entities.get(r.from)!.entryId, entities.get(r.to)!.entryId])];
      await patiently(() => this.#lethe.artifacts.create({ kind: RELATION_KIND, text: JSON.stringify({ kgRelation: r }), sources }));
    }
    return created;
  }

  async addObservations(
    observations: ReadonlyArray<{ readonly entityName: string; readonly contents: readonly string[] }>,
  ): Promise<Array<{ entityName: string; addedObservations: string[] }>> {
    const entities = await this.#existing(observations.map((o, i) => [o.entityName, `observations[${i}].entityName`] as const));
    const present = new Map<string, string[]>();
    const results: Array<{ entityName: string; addedObservations: string[] }> = [];
    for (const o of observations) {
      const entity = entities.get(o.entityName)!;
      let current = present.get(o.entityName);
      if (!current) present.set(o.entityName, (current = (await this.#observations(entity.subject)).map((x) => x.text)));
      const added = o.contents.filter((c) => !current.includes(c));
      for (const c of added) await this.#observe(entity.subject, c);
      current.push(...added);
      results.push({ entityName: o.entityName, addedObservations: added });
    }
    return results;
  }

  /** Erases each existing entity's subject and follows it to its end (`follow`); names that do not exist are skipped. */
  async deleteEntities(names: readonly string[], follow: (erasureId: string) => Promise<Erasure>): Promise<KgErasure[]> {
    const subjects = names.map((n, i) => entitySubject(n, `entityNames[${i}]`));
    const erasures: KgErasure[] = [];
    const seen = new Set<string>();
    for (const [i, name] of names.entries()) {
      if (seen.has(name)) continue;
      seen.add(name);
      // an eraser's token may not read entries (over HTTP, one token): it erases what it names, as it could directly
      const exists = await this.#entity(name, subjects[i]!).catch((e: unknown) => {
        if (forbidden(e)) return 'unknown' as const;
        throw e;
      });
      if (!exists) continue;
      let accepted: { erasureId: string };
      try {
        accepted = await this.#lethe.erase({ subject: subjects[i]!, reason: 'knowledge-graph delete_entities' });
      } catch (e) {
        if (neverSeen(e)) continue;
        throw e;
      }
      const view = await follow(accepted.erasureId);
      erasures.push({ name, erasureId: view.erasureId, status: view.status });
    }
    return erasures;
  }

  /** Forgets each matching observation entry; an entity that does not exist is skipped. */
  async deleteObservations(deletions: ReadonlyArray<{ readonly entityName: string; readonly observations: readonly string[] }>): Promise<void> {
    const subjects = deletions.map((d, i) => entitySubject(d.entityName, `deletions[${i}].entityName`));
    for (const [i, d] of deletions.entries()) {
      if (!(await this.#entity(d.entityName, subjects[i]!))) continue;
      for (const o of await this.#observations(subjects[i]!)) {
        if (!d.observations.includes(o.text)) continue;
        await (this.#forgetAs === 'writer' ? this.#lethe.entries.forget(o.entryId) : this.#lethe.forget(o.entryId));
      }
    }
  }

  /** Regenerates each matching relation without any of its sources: with none surviving, lethe erases it. */
  async deleteRelations(relations: readonly KgRelation[]): Promise<void> {
    relations.forEach((r, i) => {
      entitySubject(r.from, `relations[${i}].from`);
      entitySubject(r.to, `relations[${i}].to`);
    });
    for (const r of await this.#relations()) {
      if (relations.some((d) => sameRelation(d, r))) await patiently(() => this.#lethe.artifacts.regenerate(r.artifactId, { excluding: r.sources }));
    }
  }

  async readGraph(): Promise<KgGraph> {
    const candidates = new Map<string, StoredEntity>();
    for await (const e of this.#lethe.entries.namespaceEntries()) {
      const entity = entityOf(e);
      const subject = entity && entitySubjectOrUndefined(entity.name);
      if (!entity || !subject || candidates.has(entity.name)) continue;
      candidates.set(entity.name, { ...entity, subject, entryId: e.entryId, createdAt: e.createdAt });
    }
    // an entity is the entity entry of its own subject: one written into another subject is not it
    const checked = await inBatches([...candidates.values()], async (c) => ((await this.#entity(c.name, c.subject))?.entryId === c.entryId ? c : undefined));
    const stored = new Map(checked.flatMap((c) => (c ? [[c.name, c] as const] : [])));
    const [entities, relations] = await Promise.all([this.#withObservations([...stored.values()]), this.#relations(stored)]);
    return { entities, relations: relations.map(relationOnly) };
  }

  /** The reference's search: a case-insensitive substring of a name, a type or an observation; relations with an endpoint among them. */
  async searchNodes(query: string): Promise<KgGraph> {
    const graph = await this.readGraph();
    const q = query.toLowerCase();
    const entities = graph.entities.filter(
      (e) => e.name.toLowerCase().includes(q) || e.entityType.toLowerCase().includes(q) || e.observations.some((o) => o.toLowerCase().includes(q)),
    );
    const names = new Set(entities.map((e) => e.name));
    return { entities, relations: graph.relations.filter((r) => names.has(r.from) || names.has(r.to)) };
  }

  /** The named entities that exist (looked up by subject), and the relations with an endpoint among them. */
  async openNodes(names: readonly string[]): Promise<KgGraph> {
    const subjects = names.map((n, i) => entitySubject(n, `names[${i}]`));
    const found = new Map<string, StoredEntity>();
    for (const [i, name] of names.entries()) {
      if (found.has(name)) continue;
      const entity = await this.#entity(name, subjects[i]!);
      if (entity) found.set(name, entity);
    }
    const [entities, relations] = await Promise.all([this.#withObservations([...found.values()]), this.#relations(new Map(found))]);
    return { entities, relations: relations.filter((r) => found.has(r.from) || found.has(r.to)).map(relationOnly) };
  }

  /** Refuses a subject that already holds entries (another tool's memories): the graph writes only into subjects of its own. */
  async #refuseForeign(subject: string, argument: string): Promise<void> {
    try {
      const { entries } = await this.#lethe.entries.page(subject, { limit: 1 });
      // the graph's own entries (another call creating this entity at this moment) are no other memories
      if (entries.some((e) => e.kind !== ENTITY_KIND && e.kind !== OBSERVATION_KIND))
        throw new LetheError('conflict', `${argument}: the subject ${subject} holds memories that are not this graph's entity: choose another name`);
    } catch (e) {
      if (!neverSeen(e)) throw e;
    }
  }

  /** The entity named `name` (of `subject`), or undefined. */
  async #entity(name: string, subject: string): Promise<StoredEntity | undefined> {
    let entries: Entry[];
    try {
      entries = await this.#lethe.entries.lookup(subject, ENTITY_NAMESPACE, name);
    } catch (e) {
      if (gone(e)) return undefined;
      throw e;
    }
    for (const e of entries) {
      const entity = entityOf(e);
      if (entity?.name === name) return { ...entity, subject, entryId: e.entryId, createdAt: e.createdAt };
    }
    return undefined;
  }

  /** Each named entity (each `[name, argument]`); the first missing one is `not_found`, before anything is written. */
  async #existing(names: ReadonlyArray<readonly [string, string]>): Promise<Map<string, StoredEntity>> {
    const subjects = names.map(([name, argument]) => [name, entitySubject(name, argument)] as const);
    const found = new Map<string, StoredEntity>();
    for (const [name, subject] of subjects) {
      if (found.has(name)) continue;
      const entity = await this.#entity(name, subject);
      if (!entity) throw new LetheError('not_found', `Entity with name ${name} not found`);
      found.set(name, entity);
    }
    return found;
  }

  async #observe(subject: string, text: string): Promise<void> {
    await this.#lethe.entries.append(subject, { text, kind: OBSERVATION_KIND, metadata: { kg: { observation: true } } });
  }

  /** An entity's live observation entries, oldest first. */
  async #observations(subject: string): Promise<Array<{ entryId: string; text: string }>> {
    const out: Array<{ entryId: string; text: string }> = [];
    try {
      for await (const e of this.#lethe.entries.list(subject)) if (e.kind === OBSERVATION_KIND) out.push({ entryId: e.entryId, text: e.text });
    } catch (e) {
      if (gone(e)) return [];
      throw e;
    }
    return out;
  }

  async #withObservations(stored: StoredEntity[]): Promise<KgEntity[]> {
    const sorted = stored.sort(byCreation);
    const observations = await inBatches(sorted, (e) => this.#observations(e.subject));
    return sorted.map((e, i) => ({ name: e.name, entityType: e.entityType, observations: observations[i]!.map((o) => o.text) }));
  }

  /**
   * Every live relation: each artifact of kind fact read (again while it is fenced by an erasure
   * running; skipped once erased, or still fenced), kept when its text is a relation whose sources
   * are exactly its endpoints' entity entries (`known`, else looked up): an artifact that only
   * says it relates two names relates nothing.
   */
  async #relations(known: Map<string, StoredEntity> = new Map()): Promise<StoredRelation[]> {
    const endpoints = new Map<string, Promise<StoredEntity | undefined>>([...known].map(([name, e]) => [name, Promise.resolve(e)]));
    const endpoint = (name: string) => {
      let found = endpoints.get(name);
      if (!found) {
        const subject = entitySubjectOrUndefined(name);
        found = subject ? this.#entity(name, subject) : Promise.resolve(undefined);
        endpoints.set(name, found);
      }
      return found;
    };
    const out: StoredRelation[] = [];
    for await (const page of this.#lethe.artifacts.pages()) {
      const read = await inBatches(
        page.artifacts.filter((a) => a.kind === RELATION_KIND),
        (a) =>
          patiently(() => this.#lethe.artifacts.get(a.artifactId)).catch((e: unknown) => {
            if (gone(e)) return undefined;
            throw e;
          }),
      );
      for (const a of read) {
        const r = a && relationOf(a.text);
        if (!a || !r) continue;
        const [from, to] = await Promise.all([endpoint(r.from), endpoint(r.to)]);
        const sources = new Set(a.sources);
        if (!from || !to || sources.size !== new Set([from.entryId, to.entryId]).size || !sources.has(from.entryId) || !sources.has(to.entryId)) continue;
        out.push({ ...r, artifactId: a.artifactId, sources: a.sources });
      }
    }
    return out;
  }
}
