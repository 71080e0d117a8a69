/**
 * Search: the records nearest a query in the vector index (src/vectors), each read
 * back through its key before it is served — a vector that outlived its key is never
 * answered — and a read fence covering the hits returned.
 *
 * A search names whose records it may answer: some subjects (their entries — the
 * vectors filed under their live keys — and the artifacts derived from them alone), or
 * every subject (`allSubjects`, an admin's). A scoped search ranks only the vectors in
 * its scope: it never searches everyone's and filters after, where the nearest could
 * all be someone else's. It also ranks the subjects' newest entries still queued for
 * the indexer (queued.ts): an entry is found by its subject's searches once registered.
 */
import { LetheError } from '../errors.js';
import type { ClosureFacts } from '../artifacts/provenance.js';
import type { ArtifactService } from '../artifacts/service.js';
import type { FoundItem, ItemSearch } from '../log/item-search.js';
import type { Entry, LogService } from '../log/service.js';
import { describeError, type Logger } from '../observability/logger.js';
import type { ReadFences } from '../vault/fences.js';
import type { KeyService } from '../vault/keys.js';
import type { Vectors } from '../vectors/service.js';
import type { IndexHit, RecordType } from '../vectors/vector-index.js';
import { mergeRanked, QUEUED_BYTES, QUEUED_RANKED, rankQueued } from './queued.js';
import { type RankScope, rankerFor, type SearchMode } from './rank.js';
import {
  type AsyncRanker,
  type PeerRankAnswer,
  type PeerRankRequest,
  rankForPeer,
  type ShardCoverage,
  type ShardRouting,
  shardedRanker,
  shardsOf,
} from './sharded.js';

export type { SearchMode } from './rank.js';
export type { PeerRankAnswer, PeerRankRequest, ShardCoverage, ShardRouting } from './sharded.js';

export const MAX_SEARCH_K = 100;
export const MAX_QUERY_BYTES = 8 * 1024;
/** The most subjects one search may name. */
export const MAX_SEARCH_SUBJECTS = 100;
/** Rounds of widening when candidates turn out unreadable or out of scope (each ranks 4x as many). */
const MAX_WIDENINGS = 3;

/** Whose records a search may answer: the named subjects', or everyone's (the route lets only an admin ask for that). */
export type SearchScope = { readonly subjects: readonly string[] } | { readonly allSubjects: true };

export interface SearchHit {
  readonly id: string;
  readonly type: RecordType;
  readonly score: number;
  readonly text: string;
  /** The named subject the hit belongs to (an entry of it; an artifact derived from it alone); null for an artifact of several, and in an allSubjects search. */
  readonly subject: string | null;
  /** An entry's kind, or an artifact's (summary, fact, digest). */
  readonly kind: string | null;
  /** An entry's metadata; null for artifacts. */
  readonly metadata: Record<string, unknown> | null;
  /** When the entry was appended; when the artifact's current version was written (its updatedAt). */
  readonly createdAt: Date;
}

/** A memory's time a search keeps to: `createdAt`, or an ISO date in its metadata under `field` (an event date). */
export interface TimeRange {
  readonly since?: Date | undefined;
  readonly until?: Date | undefined;
  /** A metadata field holding an ISO date (entries without a valid one are left out); default: createdAt. */
  readonly field?: string | undefined;
}

export interface SearchOptions {
  /** How hits are ranked (rank.ts); hybrid by default. */
  readonly mode?: SearchMode | undefined;
  /** Keep to memories of this time range (both ends inclusive). */
  readonly time?: TimeRange | undefined;
}

/** The time of a hit a range is about, or undefined (no valid date in the field). */
function timeOf(hit: { createdAt: Date; metadata: Record<string, unknown> | null }, field: string | undefined): number | undefined {
  if (field === undefined) return hit.createdAt.getTime();
  const v = hit.metadata?.[field];
  const t = typeof v === 'string' ? Date.parse(v) : Number.NaN;
  return Number.isNaN(t) ? undefined : t;
}

function inRange(hit: { createdAt: Date; metadata: Record<string, unknown> | null }, r: TimeRange): boolean {
  const t = timeOf(hit, r.field);
  return t !== undefined && (r.since === undefined || t >= r.since.getTime()) && (r.until === undefined || t <= r.until.getTime());
}

/** A candidate looked at: the hit it makes, or null (unreadable, or an artifact reaching a subject outside the scope). */
type Judged = Omit<SearchHit, 'score'> & { readonly fenceKeys: readonly string[] };

/** An entry read back, as the hit it makes for `subject`. */
function judgedEntry(e: Entry, subject: string | null): Judged {
  return { id: e.entryId, type: 'entry', text: e.text, subject, kind: e.kind, metadata: e.metadata, createdAt: e.createdAt, fenceKeys: [e.keyId] };
}

/** Whose records a search judges in scope: an entry's subject (by its key), an artifact's (by its closure: undefined when out of scope). */
interface JudgeScope {
  readonly hashes: readonly Uint8Array[] | undefined;
  /** An entry's subject by the key it was read back under: undefined when that key is not in the scope. */
  readonly entrySubject: (keyId: string) => string | null | undefined;
  /** Reads the scope's keys again (an entry read back under a key the scope did not know). */
  readonly refreshKeys?: () => Promise<void>;
  readonly artifactSubject: (facts: ClosureFacts | undefined) => string | null | undefined;
}

export interface SearchDeps {
  readonly vectors: Vectors;
  readonly log: LogService;
  readonly artifacts: ArtifactService;
  readonly fences: ReadFences;
  readonly keys: KeyService;
  /** The shard routing of a sharded replica (LETHE_INDEX_SHARDS > 1); absent: this replica's index holds every record. */
  readonly shards?: ShardRouting | undefined;
  readonly logger?: Logger | undefined;
}

export class Search {
  #d: SearchDeps;

  constructor(deps: SearchDeps) {
    this.#d = deps;
  }

  /** Routes searches by shard from now on (a sharded replica, once it holds leases). */
  useShards(routing: ShardRouting): void {
    this.#d = { ...this.#d, shards: routing };
  }

  /** A peer's ranking for the shards it asks this replica for (sharded only). */
  rankForPeer(request: PeerRankRequest): Promise<PeerRankAnswer> {
    if (!this.#d.shards) throw new LetheError('not_found', 'this replica is not sharded');
    return rankForPeer(this.#d.vectors, this.#d.shards, request);
  }

  /**
   * A subject's store items on the service (a LangGraph store's search): with a query,
   * the items of its best entries ranked by the scoped search (an item at its best
   * entry's score); without, its items newest first — either way kept to `namespaces`
   * and `metadata` and paged here (src/log/item-search.ts).
   */
  async searchItems(subject: string, s: ItemSearch & { readonly query?: string | undefined }): Promise<{ items: FoundItem[]; readFence: string }> {
    const { log, fences } = this.#d;
    let items: FoundItem[];
    if (s.query === undefined || s.query === '') items = await log.listItems(subject, s);
    else {
      // an item is one entry or more (one per indexed field): more hits than items asked for, as the filters drop some
      const { hits } = await this.search(s.query, Math.min(MAX_SEARCH_K, (s.offset + s.limit) * 4 + 10), { subjects: [subject] });
      // an entry without text (an item put unindexed) is not ranked by a query: its zero vector only ties at 0
      const ranked = hits.filter((h) => h.type === 'entry' && h.text !== '').map((h) => ({ entryId: h.id, score: h.score }));
      items = await log.rankItems(subject, ranked, s);
    }
    return { items, readFence: fences.issue([...new Set(items.flatMap((i) => i.entries.map((e) => e.keyId)))]) };
  }

  /**
   * The `k` records of the scope nearest the query, with their text read back through
   * their keys, and a read fence covering them.
   */
  async search(
    query: string,
    k: number,
    scope: SearchScope,
    options: SearchOptions = {},
  ): Promise<{ hits: SearchHit[]; readFence: string; shards?: ShardCoverage }> {
    if (Buffer.byteLength(query, 'utf8') > MAX_QUERY_BYTES) throw new LetheError('payload_too_large', `query is limited to ${MAX_QUERY_BYTES} bytes`);
    if (!Number.isInteger(k) || k < 1 || k > MAX_SEARCH_K) throw new LetheError('validation_failed', `k must be 1 to ${MAX_SEARCH_K}`);
    const subjects = 'subjects' in scope ? [...new Set(scope.subjects)] : undefined;
    if (subjects && (subjects.length < 1 || subjects.length > MAX_SEARCH_SUBJECTS)) {
      throw new LetheError('validation_failed', `subjects: name 1 to ${MAX_SEARCH_SUBJECTS} subjects`);
    }
    const { fences, keys } = this.#d;
    // keyed hashes first: a malformed subject id is refused before anything is embedded
    const named = subjects?.map((subject) => ({ subject, hash: keys.subjectHash(subject) }));
    let rankScope: RankScope | undefined;
    let queuedIds: string[] = [];
    let scopeOf: JudgeScope = { hashes: undefined, entrySubject: () => null, artifactSubject: () => null };
    if (named) {
      const hashes = named.map((n) => n.hash);
      const nameOf = new Map(named.map((n) => [Buffer.from(n.hash).toString('hex'), n.subject]));
      // the subjects' entries: the records filed under their live keys (head and shards); their artifacts: those above their entries
      const [live, touching, waiting] = await Promise.all([
        keys.keysOfSubjects(hashes),
        this.#d.artifacts.touchingSubjects(hashes),
        this.#d.log.indexer.queuedOf(hashes, QUEUED_RANKED, QUEUED_BYTES),
      ]);
      queuedIds = waiting;
      const subjectOfKey = new Map([...live].flatMap(([hex, list]) => list.map((key) => [key.keyId, nameOf.get(hex)!] as const)));
      rankScope = { keyIds: [...subjectOfKey.keys()], ids: touching.map((t) => t.artifactId) };
      scopeOf = {
        hashes,
        // by the key the entry reads back under (never a ranking's say-so: a peer's, on a sharded deployment)
        entrySubject: (keyId) => subjectOfKey.get(keyId),
        // a key made since the scope was read (a forget re-keyed the subject meanwhile)
        refreshKeys: async () => {
          for (const [hex, list] of await keys.keysOfSubjects(hashes)) for (const key of list) subjectOfKey.set(key.keyId, nameOf.get(hex)!);
        },
        // an artifact is in scope only when every subject its closure reaches is named
        artifactSubject: (f) => (!f || f.foreign ? undefined : f.subjects.length === 1 ? (nameOf.get(f.subjects[0]!) ?? null) : null),
      };
    }
    const mode = options.mode ?? 'hybrid';
    const time = options.time;
    let rank: AsyncRanker | undefined;
    let shards: ShardCoverage | undefined;
    const routing = this.#d.shards;
    if (routing) {
      const needed = shardsOf(routing.count, named && rankScope ? { hashes: named.map((n) => n.hash), artifactIds: rankScope.ids } : undefined);
      ({ rank, coverage: shards } = shardedRanker(
        routing,
        () => rankerFor(this.#d.vectors, query, mode, rankScope),
        { query, mode, scope: rankScope ?? null },
        needed,
      ));
    } else {
      const local = await rankerFor(this.#d.vectors, query, mode, rankScope);
      if (local) rank = async (n, keep) => local(n, keep);
    }
    // a query with nothing to match on (only stop words) finds nothing, rather than k arbitrary records
    if (!rank) return { hits: [], readFence: fences.issue([]), ...(shards ? { shards } : {}) };
    // over-fetch, then widen while too few candidates turn out readable and in scope
    const judged = new Map<string, Judged | null>();
    // the subjects' entries not indexed yet ranked besides the index (queued.ts), judged as they are read for it; should
    // that fail (an embedder refusing one of them), the search answers from the index alone, as before it was registered
    if (queuedIds.length > 0 && rankScope) {
      try {
        const read = [...(await this.#d.log.readMany(queuedIds)).values()].filter((e) => scopeOf.entrySubject(e.keyId) !== undefined);
        const queued = await rankQueued(
          this.#d.vectors,
          query,
          mode,
          rankScope,
          read.map((e) => ({ id: e.entryId, keyId: e.keyId, text: e.text })),
        );
        for (const e of read) {
          const j = judgedEntry(e, scopeOf.entrySubject(e.keyId)!);
          judged.set(e.entryId, time && !inRange(j, time) ? null : j);
        }
        const indexed = rank;
        if (queued.length > 0) rank = async (n, keep) => mergeRanked(await indexed(n, keep), queued, n, keep);
      } catch (e) {
        this.#d.logger?.warn(
          { err: describeError(e), queued: queuedIds.length },
          'a scoped search ranked the index alone: its queued entries could not be ranked',
        );
      }
    }
    let n = k * 2 + 4;
    let hits: SearchHit[] = [];
    for (let round = 0; ; round++) {
      const candidates = await rank(n, (id) => judged.get(id) !== null);
      // read back in rank order, only as many as may still be needed: most candidates are readable
      for (;;) {
        hits = [];
        const waiting: IndexHit[] = [];
        for (const c of candidates) {
          if (!judged.has(c.id)) {
            waiting.push(c);
            if (waiting.length >= k - hits.length + 2) break;
            continue;
          }
          const j = judged.get(c.id);
          if (!j || waiting.length > 0) continue;
          hits.push({
            id: j.id,
            type: j.type,
            score: Math.round(c.score * 1e6) / 1e6,
            text: j.text,
            subject: j.subject,
            kind: j.kind,
            metadata: j.metadata,
            createdAt: j.createdAt,
          });
          if (hits.length === k) break;
        }
        if (waiting.length === 0) break;
        // out of the time range: judged as not a hit, so the search looks further
        for (const [id, j] of await this.#judge(waiting, scopeOf)) judged.set(id, j && time && !inRange(j, time) ? null : j);
      }
      if (hits.length === k || candidates.length < n || round === MAX_WIDENINGS) break;
      n *= 4;
    }
    // the fence covers the hits returned, not every candidate read
    return { hits, readFence: fences.issue(new Set(hits.flatMap((h) => judged.get(h.id)!.fenceKeys))), ...(shards ? { shards } : {}) };
  }

  /**
   * Reads the candidates back through their keys: each one's hit, or null when it is
   * unreadable (its key destroyed a moment ago, forgotten) or out of scope. Entries are
   * read while the candidate artifacts' closures are walked (in scope? fenced by an
   * erasure? which keys does a fence of it cover?) and the artifacts left read after.
   */
  async #judge(candidates: readonly IndexHit[], scope: JudgeScope): Promise<Map<string, Judged | null>> {
    const out = new Map<string, Judged | null>(candidates.map((c) => [c.id, null]));
    const [entries, arts] = await Promise.all([
      this.#d.log.readMany(candidates.filter((c) => c.type === 'entry').map((c) => c.id)),
      this.#readArtifacts(
        candidates.filter((c) => c.type === 'artifact').map((c) => c.id),
        scope,
      ),
    ]);
    if (scope.refreshKeys && [...entries.values()].some((e) => scope.entrySubject(e.keyId) === undefined)) await scope.refreshKeys();
    for (const c of candidates) {
      if (c.type === 'entry') {
        const e = entries.get(c.id);
        const subject = e && scope.entrySubject(e.keyId);
        if (e && subject !== undefined) out.set(c.id, judgedEntry(e, subject));
      } else {
        const a = arts.get(c.id);
        if (a) out.set(c.id, a);
      }
    }
    return out;
  }

  /** The artifacts among `ids` in scope and not fenced by an erasure (an artifact derived from records being erased leaves search from its request until it is regenerated), read. */
  async #readArtifacts(ids: readonly string[], scope: JudgeScope): Promise<Map<string, Judged>> {
    const out = new Map<string, Judged>();
    if (ids.length === 0) return out;
    const facts = this.#d.artifacts.closureFacts(ids, scope.hashes);
    // the subject of each artifact in scope and not fenced: only those are opened (their rows and keys are read meanwhile)
    const admitted = facts.then((all) => {
      const subjects = new Map<string, string | null>();
      for (const id of ids) {
        const f = all.get(id);
        const subject = scope.artifactSubject(f);
        if (subject !== undefined && !f?.fenced) subjects.set(id, subject);
      }
      return subjects;
    });
    const read = await this.#d.artifacts.readMany(
      ids,
      admitted.then((subjects) => new Set(subjects.keys())),
    );
    const [all, subjects] = await Promise.all([facts, admitted]);
    for (const [id, a] of read) {
      out.set(id, {
        id,
        type: 'artifact',
        text: a.text,
        subject: subjects.get(id) ?? null,
        kind: a.kind,
        metadata: null,
        createdAt: a.updatedAt,
        // its version key and its closure's subject keys
        fenceKeys: [a.keyId, ...(all.get(id)?.keyIds ?? [])],
      });
    }
    return out;
  }
}
