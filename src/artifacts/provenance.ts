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
import { type Executor, queryRows } from '../db/client.js';

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
  const rows = await queryRows<{ id: string; type: 'entry' | 'artifact'; depth: number }>(
    exec,
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
  const rows = await queryRows<{ subject: string; key_id: string }>(
    exec,
    sql`${closureCte(artifactIds)}
        select distinct encode(e.subject_hash, 'hex') as subject, e.key_id
          from log_entries e where e.entry_id = any(array(select distinct id from c where type = 'entry'))`,
  );
  return { subjects: [...new Set(rows.map((r) => r.subject))].sort(), keyIds: [...new Set(rows.map((r) => r.key_id))].sort() };
}

/**
 * For each of the given artifacts, the subject keys of the entries in its closure and
 * whether any of those entries is forgotten (a records-scope erasure marked it): what
 * decides whether the artifact is fenced while an erasure runs.
 */
export async function closureEntryStates(
  exec: Executor,
  artifactIds: readonly string[],
): Promise<Array<{ artifactId: string; keyId: string; forgotten: boolean }>> {
  if (artifactIds.length === 0) return [];
  const rows = await queryRows<{ root: string; key_id: string; forgotten: boolean }>(
    exec,
    sql`${rootedClosureCte(artifactIds)}
        select c.root, e.key_id, bool_or(e.forgotten_by is not null) as forgotten
          from c cross join lateral (select e.key_id, e.forgotten_by from log_entries e where e.entry_id = c.id offset 0) e
         where c.type = 'entry'
         group by c.root, e.key_id`,
  );
  return rows.map((r) => ({ artifactId: r.root, keyId: r.key_id, forgotten: r.forgotten === true }));
}

export interface TouchingArtifact {
  readonly artifactId: string;
  /** Shortest number of provenance edges from one of the subject's entries. */
  readonly depth: number;
}

/** Every artifact whose closure holds an entry of the subject, with the depth at which it does. */
export async function touchingSubject(exec: Executor, subjectHash: Uint8Array): Promise<TouchingArtifact[]> {
  return touching(
    exec,
    sql`select p.artifact_id, 1
          from log_entries e cross join ${citing(sql`e.entry_id`)}
         where e.subject_hash = decode(${Buffer.from(subjectHash).toString('hex')}, 'hex')`,
  );
}

/** `json_array_elements_text` of the keyed hashes' hex: a set of subjects a query can join or compare against. */
const hashesJson = (subjectHashes: readonly Uint8Array[]) => JSON.stringify([...new Set(subjectHashes.map((h) => Buffer.from(h).toString('hex')))]);

/** Every artifact whose closure holds an entry of one of the subjects (keyed hashes). */
export async function touchingSubjects(exec: Executor, subjectHashes: readonly Uint8Array[]): Promise<TouchingArtifact[]> {
  if (subjectHashes.length === 0) return [];
  return touching(
    exec,
    sql`select p.artifact_id, 1
          from log_entries e cross join ${citing(sql`e.entry_id`)}
         where e.subject_hash = any(array(select decode(h, 'hex') from json_array_elements_text(${hashesJson(subjectHashes)}::json) as s(h)))`,
  );
}

export interface ClosureScope {
  /** An entry in the closure is of a subject outside the set (or is no longer indexed at all). */
  readonly foreign: boolean;
  /** The subjects of the set the closure holds entries of (keyed hashes, hex, sorted). */
  readonly subjects: string[];
}

/**
 * For each of the given artifacts, whether its closure stays within a set of subjects
 * (keyed hashes): one recursive walk down from the artifacts asked about, never the
 * whole graph. An entry of the closure that `log_entries` does not hold counts as
 * foreign (whose it was cannot be told). Artifacts without provenance are absent.
 */
export async function closureScope(exec: Executor, artifactIds: readonly string[], subjectHashes: readonly Uint8Array[]): Promise<Map<string, ClosureScope>> {
  if (artifactIds.length === 0) return new Map();
  const rows = await queryRows<{ artifact_id: string; foreign: number | string; subjects: string[] | string | null }>(
    exec,
    sql`${rootedClosureCte(artifactIds)},
        s(h) as (select decode(h, 'hex') from json_array_elements_text(${hashesJson(subjectHashes)}::json) as s(h))
        select x.root as artifact_id,
               count(*) filter (where s.h is null)::int as foreign,
               coalesce(json_agg(distinct encode(s.h, 'hex')) filter (where s.h is not null), '[]'::json) as subjects
          from (select distinct root, id from c where type = 'entry') x
          left join lateral (select e.subject_hash from log_entries e where e.entry_id = x.id offset 0) e on true
          left join s on s.h = e.subject_hash
         group by x.root`,
  );
  const out = new Map<string, ClosureScope>();
  for (const r of rows) {
    const subjects = (typeof r.subjects === 'string' ? JSON.parse(r.subjects) : (r.subjects ?? [])) as string[];
    out.set(r.artifact_id, { foreign: Number(r.foreign) > 0, subjects: [...subjects].sort() });
  }
  return out;
}

/** Every artifact whose closure holds one of the given records (entries or artifacts). */
export async function touchingRecords(exec: Executor, recordIds: readonly string[]): Promise<TouchingArtifact[]> {
  if (recordIds.length === 0) return [];
  return touching(
    exec,
    sql`select p.artifact_id, 1
          from provenance p where p.source_id = ${anyOf(recordIds)}`,
  );
}

async function touching(exec: Executor, start: SQL): Promise<TouchingArtifact[]> {
  const rows = await queryRows<{ artifact_id: string; depth: number }>(
    exec,
    sql`${upwardCte(start)}
        select artifact_id, min(depth)::int as depth from t group by artifact_id order by min(depth), artifact_id`,
  );
  return rows.map((r) => ({ artifactId: r.artifact_id, depth: Number(r.depth) }));
}

/** The given artifacts and every artifact above them, in topological order (height, then id). */
export async function upwardClosure(exec: Executor, artifactIds: readonly string[]): Promise<Array<{ artifactId: string; height: number }>> {
  if (artifactIds.length === 0) return [];
  const rows = await queryRows<{ artifact_id: string; height: number }>(
    exec,
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
