/**
 * Provenance queries: recursive CTEs over the `provenance` edges of artifacts'
 * current versions. Every query starts from what it is asked about and follows the
 * two indexes (artifact → sources by the primary key, source → artifacts by
 * `provenance_source`), so its cost follows the part of the graph it touches, never
 * the size of the store. Depth is bounded by MAX_HEIGHT (enforced on write).
 *
 * The plan is fixed by the query's shape, not left to the planner's estimates: each
 * step of a walk is a `lateral (… offset 0)` subquery, which the planner cannot turn
 * into a hash join (it would read `provenance` whole wherever it guesses the walk is
 * large: a recursive CTE's estimate is ten times its start's, and a store without
 * statistics — the embedded PGlite before its first ANALYZE — guesses a hundred rows
 * for any id list), and rows of another table are fetched with `= any(array(…))`,
 * an index condition (docs/performance.md, "Erasure on every backend").
 */
import { type SQL, sql } from 'drizzle-orm';
import { type Executor, queryPrepared } from '../db/client.js';
import { subjectHashArray } from '../vault/subjects.js';

/** The deepest chain of artifacts of artifacts accepted. */
export const MAX_HEIGHT = 64;

export interface ClosureNode {
  readonly id: string;
  readonly type: 'entry' | 'artifact';
  /** Shortest number of provenance edges from the start. */
  readonly depth: number;
}

const idsJson = (ids: readonly string[]) => JSON.stringify([...new Set(ids)]);

/** `= any(array(…))` over a JSON array of ids: an index condition on the column, whatever the planner knows. */
const anyOf = (ids: readonly string[]) => sql`any(array(select json_array_elements_text(${idsJson(ids)}::json)))`;

/** The artifacts citing `source` (an id expression): one probe of `provenance_source` per row. */
const citing = (source: SQL) => sql`lateral (select p.artifact_id from provenance p where p.source_id = ${source} offset 0) p`;

/** `with recursive c(id, type, depth)`: everything below the given artifacts, at every depth it is reached. */
function closureCte(artifactIds: readonly string[]): SQL {
  return sql`with recursive c(id, type, depth) as (
          select p.source_id, p.source_type, 1
            from provenance p where p.artifact_id = ${anyOf(artifactIds)}
          union
          select p.source_id, p.source_type, c.depth + 1
            from c cross join lateral (select p.source_id, p.source_type from provenance p where p.artifact_id = c.id offset 0) p
           where c.type = 'artifact' and c.depth < ${MAX_HEIGHT + 1})`;
}

/** `with recursive c(root, id, type, depth)`: everything below each of the given artifacts, with the artifact (`root`) it is below. */
function rootedClosureCte(artifactIds: readonly string[]): SQL {
  return sql`with recursive c(root, id, type, depth) as (
          select p.artifact_id, p.source_id, p.source_type, 1
            from provenance p where p.artifact_id = ${anyOf(artifactIds)}
          union
          select c.root, p.source_id, p.source_type, c.depth + 1
            from c cross join lateral (select p.source_id, p.source_type from provenance p where p.artifact_id = c.id offset 0) p
           where c.type = 'artifact' and c.depth < ${MAX_HEIGHT + 1})`;
}

/** `with recursive t(artifact_id, depth)`: every artifact above `start` (rows of `artifact_id` at depth 1). */
function upwardCte(start: SQL): SQL {
  return sql`with recursive t(artifact_id, depth) as (
          ${start}
          union
          select p.artifact_id, t.depth + 1
            from t cross join ${citing(sql`t.artifact_id`)}
           where t.depth < ${MAX_HEIGHT + 1})`;
}

/** Everything below the given artifacts: their sources, their sources' sources... */
export async function closure(exec: Executor, artifactIds: readonly string[]): Promise<ClosureNode[]> {
  if (artifactIds.length === 0) return [];
  const rows = await queryPrepared<{ id: string; type: 'entry' | 'artifact'; depth: number }>(
    exec,
    'provenance-closure',
    sql`${closureCte(artifactIds)}
        select id, min(type) as type, min(depth)::int as depth from c group by id order by min(depth), id`,
  );
  return rows.map((r) => ({ id: r.id, type: r.type, depth: Number(r.depth) }));
}

/**
 * The subjects (keyed hashes, hex) and the subject keys under which the entries in
 * the closure of the given artifacts were written.
 */
export async function closureSubjects(exec: Executor, artifactIds: readonly string[]): Promise<{ subjects: string[]; keyIds: string[] }> {
  if (artifactIds.length === 0) return { subjects: [], keyIds: [] };
  const rows = await queryPrepared<{ subject: string; key_id: string }>(
    exec,
    'provenance-closureSubjects',
    sql`${closureCte(artifactIds)}
        select distinct encode(e.subject_hash, 'hex') as subject, e.key_id
          from log_entries e where e.entry_id = any(array(select distinct id from c where type = 'entry'))`,
  );
  return { subjects: [...new Set(rows.map((r) => r.subject))].sort(), keyIds: [...new Set(rows.map((r) => r.key_id))].sort() };
}

export interface TouchingArtifact {
  readonly artifactId: string;
  /** Shortest number of provenance edges from one of the subject's entries. */
  readonly depth: number;
}

/** Every artifact whose closure holds an entry of the subject, with the depth at which it does. */
export async function touchingSubject(exec: Executor, subjectHash: Uint8Array): Promise<TouchingArtifact[]> {
  return touching(exec, 'provenance-touchingSubject', touchingSubjectQuery(subjectHash));
}

/** The statement touchingSubject sends (the bench explains it as sent). */
export function touchingSubjectQuery(subjectHash: Uint8Array): SQL {
  return touchingQuery(
    sql`select p.artifact_id, 1
          from log_entries e cross join ${citing(sql`e.entry_id`)}
         where e.subject_hash = decode(${Buffer.from(subjectHash).toString('hex')}, 'hex')`,
  );
}

/** Every artifact whose closure holds an entry of one of the subjects (keyed hashes). */
export async function touchingSubjects(exec: Executor, subjectHashes: readonly Uint8Array[]): Promise<TouchingArtifact[]> {
  if (subjectHashes.length === 0) return [];
  return touching(
    exec,
    'provenance-touchingSubjects',
    touchingQuery(sql`select p.artifact_id, 1
          from log_entries e cross join ${citing(sql`e.entry_id`)}
         where e.subject_hash = any(${subjectHashArray(subjectHashes)})`),
  );
}

export interface ClosureFacts {
  /** An entry in the closure is of a subject outside the set asked about, or is no longer indexed at all (false when no set was named). */
  readonly foreign: boolean;
  /** The subjects of the set the closure holds entries of (keyed hashes, hex, sorted). */
  readonly subjects: string[];
  /** The subject keys of the closure's entries: what a read fence of the artifact covers (sorted). */
  readonly keyIds: string[];
  /** Fenced while an erasure runs: an entry of the closure is forgotten, or under a key that is not active (fenced, or gone). */
  readonly fenced: boolean;
}

/**
 * What reading each of the given artifacts depends on, from one recursive walk down
 * from them (never the whole graph): whether its closure stays within a set of
 * subjects (keyed hashes, when named), the subject keys a read fence covers, and
 * whether an erasure fences it. Artifacts without provenance are absent.
 */
export async function closureFacts(exec: Executor, artifactIds: readonly string[], subjectHashes?: readonly Uint8Array[]): Promise<Map<string, ClosureFacts>> {
  const out = new Map<string, ClosureFacts>();
  if (artifactIds.length === 0) return out;
  const rows = await queryPrepared<{ root: string; key_id: string | null; subject: string | null; forgotten: boolean | null; state: string | null }>(
    exec,
    'provenance-closureFacts',
    sql`${rootedClosureCte(artifactIds)}
        select g.root, g.key_id, encode(g.subject_hash, 'hex') as subject, g.forgotten, k.state::text as state
          from (select x.root, e.key_id, e.subject_hash, bool_or(e.forgotten_by is not null) as forgotten
                  from (select distinct root, id from c where type = 'entry') x
                  left join lateral (select e.key_id, e.subject_hash, e.forgotten_by from log_entries e where e.entry_id = x.id offset 0) e on true
                 group by x.root, e.key_id, e.subject_hash) g
          left join lateral (select k.state from subject_keys k where k.key_id = g.key_id offset 0) k on true`,
  );
  const named = subjectHashes ? new Set(subjectHashes.map((h) => Buffer.from(h).toString('hex'))) : undefined;
  const facts = new Map<string, { foreign: boolean; subjects: Set<string>; keyIds: Set<string>; fenced: boolean }>();
  for (const r of rows) {
    let f = facts.get(r.root);
    if (!f) facts.set(r.root, (f = { foreign: false, subjects: new Set(), keyIds: new Set(), fenced: false }));
    // an entry log_entries no longer holds: whose it was cannot be told
    if (r.key_id === null || r.subject === null) {
      if (named) f.foreign = true;
      continue;
    }
    if (named?.has(r.subject)) f.subjects.add(r.subject);
    else if (named) f.foreign = true;
    f.keyIds.add(r.key_id);
    if (r.forgotten === true || r.state !== 'active') f.fenced = true;
  }
  for (const [root, f] of facts) out.set(root, { foreign: f.foreign, subjects: [...f.subjects].sort(), keyIds: [...f.keyIds].sort(), fenced: f.fenced });
  return out;
}

/** Every artifact whose closure holds one of the given records (entries or artifacts). */
export async function touchingRecords(exec: Executor, recordIds: readonly string[]): Promise<TouchingArtifact[]> {
  if (recordIds.length === 0) return [];
  return touching(
    exec,
    'provenance-touchingRecords',
    touchingQuery(sql`select p.artifact_id, 1
          from provenance p where p.source_id = ${anyOf(recordIds)}`),
  );
}

/** Every artifact above `start` (rows of `artifact_id` at depth 1), with its shortest depth. */
function touchingQuery(start: SQL): SQL {
  return sql`${upwardCte(start)}
        select artifact_id, min(depth)::int as depth from t group by artifact_id order by min(depth), artifact_id`;
}

async function touching(exec: Executor, name: string, query: SQL): Promise<TouchingArtifact[]> {
  const rows = await queryPrepared<{ artifact_id: string; depth: number }>(exec, name, query);
  return rows.map((r) => ({ artifactId: r.artifact_id, depth: Number(r.depth) }));
}

/** The given artifacts and every artifact above them, in topological order (height, then id). */
export async function upwardClosure(exec: Executor, artifactIds: readonly string[]): Promise<Array<{ artifactId: string; height: number }>> {
  if (artifactIds.length === 0) return [];
  const rows = await queryPrepared<{ artifact_id: string; height: number }>(
    exec,
    'provenance-upwardClosure',
    sql`with recursive u(artifact_id, depth) as (
          select a, 0 from json_array_elements_text(${idsJson(artifactIds)}::json) as r(a)
          union
          select p.artifact_id, u.depth + 1
            from u cross join ${citing(sql`u.artifact_id`)}
           where u.depth < ${MAX_HEIGHT + 1})
        select a.artifact_id, a.height from artifacts a
         where a.artifact_id = any(array(select distinct artifact_id from u)) and a.state = 'live'
         order by a.height, a.artifact_id`,
  );
  return rows.map((r) => ({ artifactId: r.artifact_id, height: Number(r.height) }));
}
