/**
 * The tier port (ARCHITECTURE.md, "Stores and tiers"): each place the subject's
 * information can live reports the subject's contributions, erases them, and answers
 * the reconstruction probe. Implemented for the key table, the episodic log, derived
 * artifacts, the vector index and backups.
 *
 * `erase` reports cumulative figures (what is removed and what is left now, not what
 * this call did), so a step re-run after a crash reports what the first run did. The
 * engine turns "contributed but removed nothing" and "anything left" into a hard
 * failure of the erasure: never a silent `deleted: 0`.
 */
import { inArray, sql } from 'drizzle-orm';
import { type Database, queryRows } from '../db/client.js';
import { artifacts, destructionLedger } from '../db/schema.js';
import type { ArtifactService } from '../artifacts/service.js';
import { touchingSubject, upwardClosure } from '../artifacts/provenance.js';
import type { BackupService } from '../backups/service.js';
import type { LogService } from '../log/service.js';
import type { Vectors } from '../vectors/service.js';
import type { KeyService } from '../vault/keys.js';

export type TierName = 'key-table' | 'log' | 'vector-index' | 'artifacts' | 'backups';

export interface TierScope {
  readonly erasureId: string;
  readonly subjectHash: Uint8Array;
  /** The subject's key this erasure fenced and destroys (null: it had none left). */
  readonly keyId: string | null;
  /** Contributions recorded at classification (what removals are measured against). */
  readonly contributed: number;
  /** Keys of derived versions and other subjects that this erasure destroyed (their backups are marked too). */
  readonly otherKeys?: readonly string[];
  /** Artifacts classified as affected (the upward closure of what touched the subject). */
  readonly affected?: readonly string[];
  /** When the subject's key was destroyed: a version written before it may hold the subject's content. */
  readonly since?: Date;
}

/** The live artifacts among `ids` whose current version was written before `since`. */
export async function staleSince(db: Database, ids: readonly string[], since: Date | undefined): Promise<string[]> {
  if (!since || ids.length === 0) return [];
  const rows = await queryRows<{ artifact_id: string }>(
    db,
    sql`select artifact_id from artifacts
         where artifact_id in (select json_array_elements_text(${JSON.stringify(ids)}::json))
           and state = 'live' and updated_at < ${since.toISOString()}::timestamptz`,
  );
  return rows.map((r) => r.artifact_id);
}

export interface TierErasure {
  readonly removed: number;
  readonly left: number;
  readonly detail: string;
}

/** What the probe asks: the neighbours of these vectors, and the readable text of these records. */
export interface ProbeQuery {
  readonly vectors: readonly Float32Array[];
  readonly records: ReadonlyArray<{ readonly id: string; readonly type: 'entry' | 'artifact' }>;
  readonly neighbours: number;
}

export type ProbeFinding =
  /** A record the vector index places near a fingerprint. */
  | { readonly kind: 'neighbour'; readonly id: string; readonly type: 'entry' | 'artifact'; readonly cosine: number }
  /** A record whose text is readable. */
  | { readonly kind: 'text'; readonly id: string; readonly tier: 'log' | 'artifacts'; readonly text: string }
  /** A vector still indexed although its text can no longer be read. */
  | { readonly kind: 'vector'; readonly id: string; readonly vector: Float32Array }
  /** The subject still has a live key: everything of it is readable. */
  | { readonly kind: 'live-key'; readonly keyId: string };

export interface Tier {
  readonly name: TierName;
  /** How many of the subject's records (keys, entries, vectors, artifacts, backups) this tier holds. */
  contributions(scope: Omit<TierScope, 'contributed'>): Promise<number>;
  erase(scope: TierScope): Promise<TierErasure>;
  probe(scope: TierScope, query: ProbeQuery): Promise<ProbeFinding[]>;
}

export interface TierDeps {
  readonly db: Database;
  readonly keys: KeyService;
  readonly log: LogService;
  readonly artifacts: ArtifactService;
  readonly vectors: Vectors;
  readonly backups: BackupService;
  /** Test fault injection (never honoured in production). */
  readonly failpoint?: (name: string) => void;
}

export async function count(db: Database, query: ReturnType<typeof sql>): Promise<number> {
  const [r] = await queryRows<{ n: string | number }>(db, query);
  return Number(r?.n ?? 0);
}

/** The subject's live key, if it has one (a subject has at most one). */
export async function liveKey(db: Database, subjectHash: Uint8Array): Promise<{ keyId: string; state: 'active' | 'fenced' } | undefined> {
  const [k] = await queryRows<{ key_id: string; state: 'active' | 'fenced' }>(db, sql`select key_id, state from subject_keys where subject_hash = ${subjectHash}`);
  return k ? { keyId: k.key_id, state: k.state } : undefined;
}

/**
 * Regenerates what `pending` names (and everything above it), after handing the
 * version keys about to be destroyed to `beforeRegenerate` (recorded so that their
 * backups are marked even if we crash mid-way). `pending` is asked again afterwards:
 * `left` is what still needs it.
 */
export async function regenerateDerived(
  d: TierDeps,
  pending: () => Promise<string[]>,
  options: { reason: string; beforeRegenerate: (versionKeys: string[]) => Promise<void> },
): Promise<{ roots: number; regenerated: number; removed: number; left: number }> {
  const roots = await pending();
  let regenerated = 0;
  let removed = 0;
  if (roots.length > 0) {
    const upward = await upwardClosure(d.db, roots);
    const current = await d.db.select({ keyId: artifacts.keyId }).from(artifacts).where(inArray(artifacts.artifactId, upward.map((u) => u.artifactId)));
    await options.beforeRegenerate(current.map((c) => c.keyId).filter((k): k is string => k !== null));
    const result = await d.artifacts.regenerate(roots, { actor: 'erasure', reason: options.reason, onCommitted: () => d.failpoint?.('cascade-regenerated') });
    regenerated = result.regenerated.length;
    removed = result.removed.length;
  }
  return { roots: roots.length, regenerated, removed, left: (await pending()).length };
}

/** The key table: the subject's wrapped DEK. Erased by destroying the key (row gone, ledger row, replicas told). */
export function keyTableTier(d: TierDeps): Tier {
  return {
    name: 'key-table',
    async contributions(scope) {
      return scope.keyId ? 1 : 0;
    },
    async erase(scope) {
      if (scope.keyId) await d.keys.destroyKey(scope.keyId, { reason: `erasure ${scope.erasureId}`, actor: 'erasure' });
      const removed = scope.keyId ? await count(d.db, sql`select count(*) as n from destruction_ledger where key_id = ${scope.keyId}`) : 0;
      const left = (await liveKey(d.db, scope.subjectHash)) ? 1 : 0;
      return { removed, left, detail: scope.keyId ? `key ${scope.keyId} destroyed` : 'no live key' };
    },
    async probe(scope) {
      const k = await liveKey(d.db, scope.subjectHash);
      return k ? [{ kind: 'live-key' as const, keyId: k.keyId }] : [];
    },
  };
}

/** The episodic log: frames under the subject's key. Erased by the key's destruction (every copy, every version). */
export function logTier(d: TierDeps): Tier {
  return {
    name: 'log',
    async contributions(scope) {
      return scope.keyId ? count(d.db, sql`select count(*) as n from log_entries where key_id = ${scope.keyId}`) : 0;
    },
    async erase(scope) {
      const destroyed = scope.keyId ? await count(d.db, sql`select count(*) as n from destruction_ledger where key_id = ${scope.keyId}`) : 0;
      const removed = destroyed ? await count(d.db, sql`select count(*) as n from log_entries where key_id = ${scope.keyId}`) : 0;
      const left = await count(d.db, sql`select count(*) as n from log_entries e join subject_keys k on k.key_id = e.key_id where e.subject_hash = ${scope.subjectHash}`);
      return { removed, left, detail: `${removed} entr${removed === 1 ? 'y' : 'ies'} unreadable` };
    },
    async probe(_scope, query) {
      const ids = query.records.filter((r) => r.type === 'entry').map((r) => r.id);
      const out: ProbeFinding[] = [];
      for (const [id, e] of await d.log.readMany(ids)) out.push({ kind: 'text', id, tier: 'log', text: e.text });
      return out;
    },
  };
}

/** The vector index: the subject's embeddings at rest (sealed under its key) and in every replica's memory. */
export function vectorIndexTier(d: TierDeps): Tier {
  const left = async (keyId: string | null) =>
    keyId ? (await count(d.db, sql`select count(*) as n from embeddings where key_id = ${keyId}`)) + d.vectors.index.idsOfKey(keyId).length : 0;
  return {
    name: 'vector-index',
    async contributions(scope) {
      return scope.keyId ? count(d.db, sql`select count(*) as n from embeddings where key_id = ${scope.keyId}`) : 0;
    },
    async erase(scope) {
      // the rows went with the key's destruction, and the destruction event dropped the vectors from the index
      const remaining = await left(scope.keyId);
      const removed = Math.max(0, scope.contributed - remaining);
      return { removed, left: remaining, detail: `${removed} vector(s) removed from the index and at rest` };
    },
    async probe(_scope, query) {
      const index = d.vectors.index;
      const near = new Map<string, { type: 'entry' | 'artifact'; cosine: number }>();
      for (const q of query.vectors) {
        if (q.length !== index.dimensions || !q.some((x) => x !== 0)) continue;
        for (const hit of index.search(q, Math.min(query.neighbours, index.size))) {
          const prev = near.get(hit.id);
          if (!prev || hit.score > prev.cosine) near.set(hit.id, { type: hit.type, cosine: hit.score });
        }
        // each search is a brute-force pass: let requests (and the claim's heartbeat) run between them
        await new Promise((resolve) => setImmediate(resolve));
      }
      const out: ProbeFinding[] = [...near].map(([id, v]) => ({ kind: 'neighbour' as const, id, type: v.type, cosine: v.cosine }));
      // a vector whose text is unreadable (its key destroyed) but still indexed: the index outlived the key
      const readable = new Set<string>();
      const entryIds = [...near].filter(([, v]) => v.type === 'entry').map(([id]) => id);
      const artifactIds = [...near].filter(([, v]) => v.type === 'artifact').map(([id]) => id);
      for (const id of (await d.log.readMany(entryIds)).keys()) readable.add(id);
      for (const id of (await d.artifacts.readMany(artifactIds)).keys()) readable.add(id);
      for (const id of near.keys()) {
        if (readable.has(id)) continue;
        const vector = index.vectorOf(id);
        if (vector) out.push({ kind: 'vector', id, vector });
      }
      return out;
    },
  };
}

/** Derived artifacts: regenerated from surviving sources by provenance, or removed when none survives. */
export function artifactsTier(d: TierDeps, hooks: { beforeRegenerate: (versionKeys: string[]) => Promise<void> }): Tier {
  return {
    name: 'artifacts',
    async contributions(scope) {
      return (await touchingSubject(d.db, scope.subjectHash)).length;
    },
    async erase(scope) {
      const pending = async () => {
        const touching = (await touchingSubject(d.db, scope.subjectHash)).map((t) => t.artifactId);
        // An artifact classified as affected still holding a version written before the key's
        // destruction carries the subject's content even when it no longer cites the subject
        // directly (a digest above a summary that a crashed run already regenerated).
        const stale = await staleSince(d.db, scope.affected ?? [], scope.since);
        return [...new Set([...touching, ...stale])];
      };
      const r = await regenerateDerived(d, pending, { reason: `erasure ${scope.erasureId}`, beforeRegenerate: hooks.beforeRegenerate });
      const detail =
        r.roots > 0
          ? `${r.regenerated} artifact(s) regenerated from surviving sources and re-embedded, ${r.removed} removed (no surviving source); old version keys destroyed`
          : scope.contributed > 0
            ? 'every affected artifact was already regenerated (a re-run)'
            : 'no derived artifact depends on the subject';
      const left = r.left;
      return { removed: Math.max(0, scope.contributed - left), left, detail };
    },
    async probe(_scope, query) {
      const ids = query.records.filter((r) => r.type === 'artifact').map((r) => r.id);
      const out: ProbeFinding[] = [];
      for (const [id, a] of await d.artifacts.readMany(ids)) out.push({ kind: 'text', id, tier: 'artifacts', text: a.text });
      return out;
    },
  };
}

/** Backups: ciphertext copies whose manifests must mark the destroyed keys. */
export function backupsTier(d: TierDeps): Tier {
  return {
    name: 'backups',
    async contributions(scope) {
      return scope.keyId ? count(d.db, sql`select count(*) as n from backup_keys where key_id = ${scope.keyId}`) : 0;
    },
    async erase(scope) {
      const keyIds = [...new Set([...(scope.keyId ? [scope.keyId] : []), ...(scope.otherKeys ?? [])])];
      const destroyed = keyIds.length
        ? (await d.db.select({ keyId: destructionLedger.keyId }).from(destructionLedger).where(inArray(destructionLedger.keyId, keyIds))).map((r) => r.keyId)
        : [];
      const written = destroyed.length ? await d.backups.propagate({ keyIds: destroyed }) : { backups: 0, keys: 0 };
      const listed = scope.keyId ? await count(d.db, sql`select count(*) as n from backup_keys where key_id = ${scope.keyId}`) : 0;
      const marked = scope.keyId ? await count(d.db, sql`select count(*) as n from backup_propagations where key_id = ${scope.keyId}`) : 0;
      const held = destroyed.length
        ? await count(d.db, sql`select count(distinct backup_id) as n from backup_keys where key_id in (select json_array_elements_text(${JSON.stringify(destroyed)}::json))`)
        : 0;
      return { removed: marked, left: Math.max(0, listed - marked), detail: `${held} backup manifest(s) mark the destroyed keys (${written.backups} written now)` };
    },
    async probe() {
      // backups hold ciphertext only; what they still allow (wrapped copies until the epoch retires) is a residual
      return [];
    },
  };
}
