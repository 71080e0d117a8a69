/**
 * Derived artifacts: summaries, facts and digests that name their sources.
 *
 * - An artifact is written with its provenance or not at all: every source must
 *   exist and still be readable, and every read fence presented must still hold
 *   (sources.ts: checked in the writing transaction under FOR KEY SHARE).
 * - Each version's text is sealed under its own key (texts.ts); its embedding is
 *   sealed under the same key. Superseding or erasing a version destroys its key.
 * - Regeneration (regeneration.ts) rewrites artifacts from their surviving sources.
 * - The provenance queries (provenance.ts) answer what an erasure must regenerate.
 */
import { and, asc, eq, inArray, sql } from 'drizzle-orm';
import { zeroize } from '../crypto/index.js';
import { type Database, queryRows } from '../db/client.js';
import { afterPosition, type KeysetPage, type KeysetPosition, positionOrder, positionTime } from '../db/keyset.js';
import { ARTIFACT_KINDS, type ArtifactKind, type ArtifactRow, artifacts, provenance } from '../db/schema.js';
import { isLetheError, LetheError } from '../errors.js';
import { isId, newId } from '../ids.js';
import type { LogService } from '../log/service.js';
import type { Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import type { ObjectStore } from '../storage/store.js';
import type { AuditLog } from '../vault/audit.js';
import type { KeyDestructions } from '../vault/destructions.js';
import type { ReadFences } from '../vault/fences.js';
import type { KeyService } from '../vault/keys.js';
import type { VersionKeys } from '../vault/version-keys.js';
import { notifyEmbeddings, upsertEmbeddings } from '../vectors/embeddings.js';
import type { Vectors } from '../vectors/service.js';
import {
  closure,
  type ClosureFacts,
  closureFacts,
  closureSubjects,
  touchingRecords,
  touchingSubject,
  touchingSubjects,
  type TouchingArtifact,
  upwardClosure,
} from './provenance.js';
import { Regeneration, type RegenerationOptions, type RegenerationResult } from './regeneration.js';
import { MAX_ARTIFACT_TEXT_BYTES, type Regenerator } from './regenerator.js';
import { checkSources, insertEdges } from './sources.js';
import { ArtifactTexts } from './texts.js';

export { ARTIFACT_KINDS, type ArtifactKind } from '../db/schema.js';
export type { RegenerationResult } from './regeneration.js';

export const MAX_SOURCES = 10_000;

export interface ArtifactWrite {
  readonly kind: ArtifactKind;
  readonly text: string;
  readonly sources: readonly string[];
  readonly generator?: string | undefined;
  /** Read fences from the reads this artifact was made from. */
  readonly readFences?: readonly string[] | undefined;
}

export interface Artifact {
  readonly artifactId: string;
  readonly kind: ArtifactKind;
  readonly version: number;
  readonly text: string;
  readonly sources: string[];
  readonly generator: string | null;
  readonly createdAt: Date;
  readonly updatedAt: Date;
  readonly readFence: string;
}

/** An artifact as the list shows it: what it is, not its text. */
export type ArtifactSummary = Pick<Artifact, 'artifactId' | 'kind' | 'version' | 'generator' | 'createdAt' | 'updatedAt'>;

export interface ArtifactServiceDeps {
  readonly db: Database;
  readonly keys: KeyService;
  readonly versionKeys: VersionKeys;
  readonly destructions: KeyDestructions;
  readonly objects: ObjectStore;
  readonly vectors: Vectors;
  readonly log: LogService;
  readonly fences: ReadFences;
  readonly regenerator: Regenerator;
  readonly audit: AuditLog;
  readonly metrics: Metrics;
  readonly logger: Logger;
}

export class ArtifactService {
  readonly #d: ArtifactServiceDeps;
  readonly #texts: ArtifactTexts;
  readonly #regeneration: Regeneration;

  constructor(deps: ArtifactServiceDeps) {
    this.#d = deps;
    this.#texts = new ArtifactTexts(deps);
    this.#regeneration = new Regeneration({ ...deps, texts: this.#texts });
  }

  get regenerator(): Regenerator {
    return this.#d.regenerator;
  }

  /** POST /v1/artifacts. */
  async write(input: ArtifactWrite, actor: string): Promise<{ artifactId: string; version: 1; subjects: number }> {
    if (!(ARTIFACT_KINDS as readonly string[]).includes(input.kind))
      throw new LetheError('validation_failed', `kind must be one of ${ARTIFACT_KINDS.join(', ')}`);
    if (Buffer.byteLength(input.text, 'utf8') > MAX_ARTIFACT_TEXT_BYTES) {
      throw new LetheError('payload_too_large', `text is limited to ${MAX_ARTIFACT_TEXT_BYTES} bytes`);
    }
    const sources = [...new Set(input.sources)];
    if (sources.length === 0) throw new LetheError('provenance_required', 'sources: an artifact must name the entries or artifacts it was derived from');
    if (sources.length > MAX_SOURCES) throw new LetheError('validation_failed', `sources: at most ${MAX_SOURCES}`);
    const malformed = sources.filter((s) => !isId('entry', s) && !isId('art', s));
    if (malformed.length > 0) throw new LetheError('unknown_source', `sources: ${malformed.length} id(s) are neither entry nor artifact ids`);
    const fenceKeys = (input.readFences ?? []).flatMap((f) => this.#d.fences.parse(f));

    const artifactId = newId('art');
    const { keyId, key } = this.#d.versionKeys.fresh();
    try {
      const [embedding] = await this.#d.vectors.seal([{ recordId: artifactId, recordType: 'artifact', text: input.text }], keyId, key);
      const object = await this.#texts.put(key, { artifactId, version: 1, keyId }, { kind: input.kind, text: input.text });
      let subjects: number;
      try {
        subjects = await this.#d.db.transaction(async (tx) => {
          const { height, sourceRows } = await checkSources(tx, sources, fenceKeys);
          const now = new Date();
          await tx.insert(artifacts).values({
            artifactId,
            kind: input.kind,
            state: 'live',
            version: 1,
            height,
            keyId,
            object,
            generator: input.generator ?? null,
            createdAt: now,
            updatedAt: now,
          });
          await this.#d.versionKeys.store(tx, { keyId, key, artifactId, version: 1, purpose: 'artifact-version' });
          await insertEdges(tx, artifactId, sourceRows);
          await upsertEmbeddings(tx, [embedding!]);
          await this.#d.audit.append(tx, [{ actor, action: 'artifact.write', keyId, detail: { artifactId, version: 1, sources: sources.length } }]);
          await notifyEmbeddings(tx, [{ recordId: artifactId, keyId }]);
          return (await closureSubjects(tx, [artifactId])).subjects.length;
        });
      } catch (e) {
        await this.#texts.remove(object).catch(() => {});
        throw e;
      }
      this.#d.vectors.publish([embedding!]);
      this.#d.metrics.artifactsWritten.inc({ operation: 'write' });
      return { artifactId, version: 1, subjects };
    } finally {
      zeroize(key);
    }
  }

  /**
   * GET /v1/artifacts: a page of the live artifacts, oldest first (keyset on (created_at,
   * artifact id): src/db/keyset.ts), each with its position. What each one is, never its
   * text: GET /v1/artifacts/{artifactId} reads that (and hands out its read fence).
   */
  async list(page: KeysetPage = {}): Promise<Array<ArtifactSummary & { position: KeysetPosition }>> {
    const query = this.#d.db
      .select({
        artifactId: artifacts.artifactId,
        kind: artifacts.kind,
        version: artifacts.version,
        generator: artifacts.generator,
        createdAt: artifacts.createdAt,
        updatedAt: artifacts.updatedAt,
        time: positionTime(artifacts.createdAt),
      })
      .from(artifacts)
      .where(and(eq(artifacts.state, 'live'), afterPosition(artifacts.createdAt, artifacts.artifactId, page.after)))
      .orderBy(...positionOrder(artifacts.createdAt, artifacts.artifactId));
    const rows = await (page.limit === undefined ? query : query.limit(page.limit));
    return rows.map(({ time, ...row }) => ({ ...row, position: { createdAt: time, id: row.artifactId } }));
  }

  /** GET /v1/artifacts/{artifactId}: the current version, and a read fence covering it and its closure. */
  async get(artifactId: string): Promise<Artifact> {
    for (let attempt = 0; attempt < 3; attempt++) {
      const row = await this.#row(artifactId);
      // one walk of the closure: whether it is fenced, and the subject keys its read fence covers
      const facts = (await closureFacts(this.#d.db, [artifactId])).get(artifactId);
      if (facts?.fenced) {
        throw new LetheError(
          'erasure_in_progress',
          'the artifact is derived from records being erased: it is served again once the erasure has regenerated it',
        );
      }
      try {
        const payload = await this.#texts.read(row);
        const edges = await this.#d.db
          .select({ sourceId: provenance.sourceId })
          .from(provenance)
          .where(eq(provenance.artifactId, artifactId))
          .orderBy(asc(provenance.sourceId));
        const fenceKeys = [...(row.keyId ? [row.keyId] : []), ...(facts?.keyIds ?? [])];
        return {
          artifactId,
          kind: row.kind,
          version: row.version,
          text: payload.text,
          sources: edges.map((e) => e.sourceId),
          generator: row.generator,
          createdAt: row.createdAt,
          updatedAt: row.updatedAt,
          readFence: this.#d.fences.issue(fenceKeys),
        };
      } catch (e) {
        // regenerated between reading the row and reading the version: read again
        if (!isLetheError(e, 'key_destroyed') && !isLetheError(e, 'not_found')) throw e;
      }
    }
    throw new LetheError('unavailable', 'the artifact changed repeatedly during the read; try again');
  }

  /**
   * The current texts of the live artifacts among `ids` (others left out), each with the
   * version key it was read under, its kind, and when it was created and its current
   * version written (`updatedAt`).
   */
  async readMany(
    ids: readonly string[],
    only?: Promise<ReadonlySet<string>>,
  ): Promise<Map<string, { text: string; keyId: string; kind: ArtifactKind; createdAt: Date; updatedAt: Date }>> {
    const out = new Map<string, { text: string; keyId: string; kind: ArtifactKind; createdAt: Date; updatedAt: Date }>();
    for (const [id, { row, text }] of await this.#texts.readCurrent(ids, only)) {
      out.set(id, { text, keyId: row.keyId!, kind: row.kind, createdAt: row.createdAt, updatedAt: row.updatedAt });
    }
    return out;
  }

  /** The transitive closure below an artifact, with the number of distinct subjects in it. */
  async provenance(artifactId: string): Promise<{ nodes: Awaited<ReturnType<typeof closure>>; subjects: string[] }> {
    await this.#row(artifactId, { allowErased: true });
    const nodes = await closure(this.#d.db, [artifactId]);
    const { subjects } = await closureSubjects(this.#d.db, [artifactId]);
    return { nodes, subjects };
  }

  /** Every artifact whose closure holds an entry of the subject (what an erasure must regenerate). */
  touching(subject: string): Promise<TouchingArtifact[]> {
    return touchingSubject(this.#d.db, this.#d.keys.subjectHash(subject));
  }

  /** `touching` for a subject known by its keyed hash. */
  touchingSubject(subjectHash: Uint8Array): Promise<TouchingArtifact[]> {
    return touchingSubject(this.#d.db, subjectHash);
  }

  /** Every artifact whose closure holds an entry of one of the subjects (keyed hashes). */
  touchingSubjects(subjectHashes: readonly Uint8Array[]): Promise<TouchingArtifact[]> {
    return touchingSubjects(this.#d.db, subjectHashes);
  }

  /**
   * What reading each of the given artifacts depends on, in one walk of their closures
   * (provenance.ts): whether it is fenced while an erasure runs (an entry of its closure
   * forgotten, or under a key fenced or gone; reads answer `erasure_in_progress` and
   * search leaves it out until the cascade has regenerated it), the subject keys a read
   * fence of it covers, and — given a set of subjects — whether its closure stays within it.
   */
  closureFacts(artifactIds: readonly string[], subjectHashes?: readonly Uint8Array[]): Promise<Map<string, ClosureFacts>> {
    return closureFacts(this.#d.db, artifactIds, subjectHashes);
  }

  /** Every artifact whose closure holds one of the given records. */
  touchingRecords(recordIds: readonly string[]): Promise<TouchingArtifact[]> {
    return touchingRecords(this.#d.db, recordIds);
  }

  /** The given artifacts and every live artifact above them, in topological order. */
  upwardClosure(artifactIds: readonly string[]): Promise<Array<{ artifactId: string; height: number }>> {
    return upwardClosure(this.#d.db, artifactIds);
  }

  /** The current version, kind, state and version key of each artifact among `ids` (unknown ids are absent). */
  async current(ids: readonly string[]): Promise<Array<Pick<ArtifactRow, 'artifactId' | 'kind' | 'state' | 'version' | 'keyId'>>> {
    const unique = [...new Set(ids)];
    if (unique.length === 0) return [];
    return this.#d.db
      .select({ artifactId: artifacts.artifactId, kind: artifacts.kind, state: artifacts.state, version: artifacts.version, keyId: artifacts.keyId })
      .from(artifacts)
      .where(inArray(artifacts.artifactId, unique));
  }

  /** The live artifacts among `ids` whose current version was written before `since`. */
  async staleSince(ids: readonly string[], since: Date | undefined): Promise<string[]> {
    if (!since || ids.length === 0) return [];
    const rows = await queryRows<{ artifact_id: string }>(
      this.#d.db,
      sql`select artifact_id from artifacts
           where artifact_id = any(array(select json_array_elements_text(${JSON.stringify([...new Set(ids)])}::json)))
             and state = 'live' and updated_at < ${since.toISOString()}::timestamptz`,
    );
    return rows.map((r) => r.artifact_id);
  }

  /**
   * The direct provenance edges of the given artifacts, each source with its type,
   * its kind (artifacts) and whether it is an entry of the subject `subjectHash`.
   */
  async edges(
    artifactIds: readonly string[],
    subjectHash: Uint8Array,
  ): Promise<Array<{ artifactId: string; sourceId: string; sourceType: 'entry' | 'artifact'; ofSubject: boolean; kind: string | null }>> {
    if (artifactIds.length === 0) return [];
    const rows = await queryRows<{ artifact_id: string; source_id: string; source_type: 'entry' | 'artifact'; erased: boolean | null; kind: string | null }>(
      this.#d.db,
      // each source looked up by its primary key (a subquery per edge): never a join that could read log_entries whole
      sql`select p.artifact_id, p.source_id, p.source_type,
                 (select e.subject_hash = ${subjectHash} from log_entries e where p.source_type = 'entry' and e.entry_id = p.source_id) as erased,
                 (select a.kind from artifacts a where p.source_type = 'artifact' and a.artifact_id = p.source_id) as kind
            from provenance p
           where p.artifact_id = any(array(select json_array_elements_text(${JSON.stringify([...new Set(artifactIds)])}::json)))
           order by p.artifact_id, p.source_id`,
    );
    return rows.map((r) => ({ artifactId: r.artifact_id, sourceId: r.source_id, sourceType: r.source_type, ofSubject: r.erased === true, kind: r.kind }));
  }

  /**
   * Regenerates the given artifacts and every artifact above them from their
   * surviving sources (regeneration.ts).
   */
  regenerate(artifactIds: readonly string[], options: RegenerationOptions): Promise<RegenerationResult> {
    return this.#regeneration.regenerate(artifactIds, options);
  }

  async #row(artifactId: string, options: { allowErased?: boolean } = {}): Promise<ArtifactRow> {
    if (!isId('art', artifactId)) throw new LetheError('not_found', 'no such artifact');
    const [row] = await this.#d.db.select().from(artifacts).where(eq(artifacts.artifactId, artifactId));
    if (!row) throw new LetheError('not_found', 'no such artifact');
    if (row.state !== 'live' && !options.allowErased) throw new LetheError('artifact_erased', 'the artifact was erased: none of its sources survived');
    return row;
  }
}
