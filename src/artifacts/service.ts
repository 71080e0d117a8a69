/**
 * Derived artifacts: summaries, facts and digests that name their sources.
 *
 * - An artifact is written with its provenance or not at all: every source must
 *   exist and still be readable, and every read fence presented must still hold.
 *   Those checks and the write commit in one transaction that holds FOR KEY SHARE on
 *   every key involved, so no destruction can slip in between.
 * - Each version's text is sealed under its own key (artifact_keys), stored in the
 *   object store at artifacts/<id>/v<version>; its embedding is sealed under the same
 *   key. Superseding or erasing a version destroys its key: the old object, and every
 *   copy of it, is unreadable from then on.
 * - Regeneration rewrites artifacts from their surviving sources, cascading upward
 *   in topological order (by height), each artifact exactly once per call.
 */
import { asc, eq, inArray, sql } from 'drizzle-orm';
import { encodeContext, open, seal, utf8, zeroize } from '../crypto/index.js';
import { type Db, queryRows, type Transaction } from '../db/client.js';
import { ARTIFACT_KINDS, type ArtifactKind, type ArtifactRow, artifacts, provenance } from '../db/schema.js';
import { isLetheError, LetheError } from '../errors.js';
import type { LogService } from '../log/service.js';
import type { Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import { upsertEmbeddings } from '../search/embeddings.js';
import type { SearchService } from '../search/service.js';
import type { ObjectStore } from '../storage/store.js';
import type { AuditLog } from '../vault/audit.js';
import { notifyEmbeddings } from '../vault/events.js';
import { newId } from '../vault/ids.js';
import type { KeyService } from '../vault/keys.js';
import { assertKeysLive, type ReadFences } from './fences.js';
import type { ArtifactKeys } from './keys.js';
import { closure, closureSubjects, MAX_HEIGHT, touchingRecords, touchingSubject, type TouchingArtifact, upwardClosure } from './provenance.js';
import { MAX_ARTIFACT_TEXT_BYTES, type RegenerationSource, type Regenerator } from './regenerator.js';

export const MAX_SOURCES = 10_000;
export const ARTIFACT_ID = /^art_[A-Za-z0-9_-]{22}$/;
export const ENTRY_ID = /^entry_[A-Za-z0-9_-]{22}$/;

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

export interface RegenerationResult {
  /** Artifacts rewritten, with their new version, in the order they were rewritten. */
  readonly regenerated: Array<{ artifactId: string; version: number }>;
  /** Artifacts erased because no source survived. */
  readonly removed: string[];
}

interface ArtifactPayload {
  readonly kind: ArtifactKind;
  readonly text: string;
}

function artifactContext(artifactId: string, version: number, keyId: string): Uint8Array {
  return encodeContext('artifact', { artifactId, version, keyId });
}

export function objectName(artifactId: string, version: number): string {
  return `artifacts/${artifactId}/v${version}`;
}

export interface ArtifactServiceDeps {
  readonly db: Db;
  readonly keys: KeyService;
  readonly artifactKeys: ArtifactKeys;
  readonly objects: ObjectStore;
  readonly search: SearchService;
  readonly log: LogService;
  readonly fences: ReadFences;
  readonly regenerator: Regenerator;
  readonly audit: AuditLog;
  readonly metrics: Metrics;
  readonly logger: Logger;
  /** Told after a commit destroyed artifact-version keys (backup manifests learn of it). */
  readonly onKeysDestroyed?: (keyIds: string[]) => void;
}

export class ArtifactService {
  readonly #d: ArtifactServiceDeps;

  constructor(deps: ArtifactServiceDeps) {
    this.#d = deps;
  }

  get regenerator(): Regenerator {
    return this.#d.regenerator;
  }

  /** POST /v1/artifacts. */
  async write(input: ArtifactWrite, actor: string): Promise<{ artifactId: string; version: 1; subjects: number }> {
    if (!(ARTIFACT_KINDS as readonly string[]).includes(input.kind)) throw new LetheError('validation_failed', `kind must be one of ${ARTIFACT_KINDS.join(', ')}`);
    if (Buffer.byteLength(input.text, 'utf8') > MAX_ARTIFACT_TEXT_BYTES) {
      throw new LetheError('payload_too_large', `text is limited to ${MAX_ARTIFACT_TEXT_BYTES} bytes`);
    }
    const sources = [...new Set(input.sources)];
    if (sources.length === 0) throw new LetheError('provenance_required', 'sources: an artifact must name the entries or artifacts it was derived from');
    if (sources.length > MAX_SOURCES) throw new LetheError('validation_failed', `sources: at most ${MAX_SOURCES}`);
    const malformed = sources.filter((s) => !ENTRY_ID.test(s) && !ARTIFACT_ID.test(s));
    if (malformed.length > 0) throw new LetheError('unknown_source', `sources: ${malformed.length} id(s) are neither entry nor artifact ids`);
    const fenceKeys = (input.readFences ?? []).flatMap((f) => this.#d.fences.parse(f));

    const artifactId = newId('art');
    const { keyId, key } = this.#d.artifactKeys.fresh();
    const object = objectName(artifactId, 1);
    try {
      const [embedding] = await this.#d.search.seal([{ recordId: artifactId, recordType: 'artifact', text: input.text }], keyId, key);
      await this.#d.objects.put(object, this.#seal(key, artifactId, 1, keyId, { kind: input.kind, text: input.text }));
      let subjects: number;
      try {
        subjects = await this.#d.db.db.transaction(async (tx) => {
          const { height, sourceRows } = await this.#checkSources(tx, sources, fenceKeys);
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
          await this.#d.artifactKeys.store(tx, { keyId, key, artifactId, version: 1 });
          await this.#insertEdges(tx, artifactId, sourceRows);
          await upsertEmbeddings(tx, [embedding!]);
          await this.#d.audit.append(tx, [{ actor, action: 'artifact.write', keyId, detail: { artifactId, version: 1, sources: sources.length } }]);
          await notifyEmbeddings(tx, [{ recordId: artifactId, keyId }]);
          return (await closureSubjects(tx, [artifactId])).subjects.length;
        });
      } catch (e) {
        await this.#d.objects.delete(object).catch(() => {});
        throw e;
      }
      this.#d.search.publish([embedding!]);
      this.#d.metrics.artifactsWritten.inc({ operation: 'write' });
      return { artifactId, version: 1, subjects };
    } finally {
      zeroize(key);
    }
  }

  /** GET /v1/artifacts/{artifactId}: the current version, and a read fence covering it and its closure. */
  async get(artifactId: string): Promise<Artifact> {
    for (let attempt = 0; attempt < 3; attempt++) {
      const row = await this.#row(artifactId);
      try {
        const payload = await this.#readVersion(row);
        const edges = await this.#d.db.db
          .select({ sourceId: provenance.sourceId })
          .from(provenance)
          .where(eq(provenance.artifactId, artifactId))
          .orderBy(asc(provenance.sourceId));
        const fenceKeys = await this.fenceKeys([row]);
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

  /** The current texts of the live artifacts among `ids` (others left out), each with the version key it was read under. */
  async readMany(ids: readonly string[]): Promise<Map<string, { text: string; keyId: string }>> {
    const out = new Map<string, { text: string; keyId: string }>();
    for (const [id, { row, text }] of await this.#readCurrent(ids)) out.set(id, { text, keyId: row.keyId! });
    return out;
  }

  /**
   * The current version's text of each live artifact among `ids`. An artifact that
   * was regenerated while we read (its version key destroyed under us) is read again
   * at its new version — never mistaken for an erased one.
   */
  async #readCurrent(ids: readonly string[]): Promise<Map<string, { row: ArtifactRow; text: string }>> {
    const out = new Map<string, { row: ArtifactRow; text: string }>();
    let pending = [...new Set(ids)];
    for (let attempt = 0; attempt < 5 && pending.length > 0; attempt++) {
      const rows = await this.#d.db.db.select().from(artifacts).where(inArray(artifacts.artifactId, pending));
      const retry: string[] = [];
      for (const row of rows) {
        if (row.state !== 'live') continue;
        try {
          out.set(row.artifactId, { row, text: (await this.#readVersion(row)).text });
        } catch (e) {
          if (!isLetheError(e, 'key_destroyed') && !isLetheError(e, 'not_found') && !isLetheError(e, 'artifact_erased')) throw e;
          retry.push(row.artifactId);
        }
      }
      pending = retry;
    }
    if (pending.length > 0) throw new LetheError('unavailable', 'artifacts kept changing during the read; try again', { retryable: true });
    return out;
  }

  /** The keys a read of these artifact versions depends on: their version keys and their closures' subject keys (one query). */
  async fenceKeys(rows: ReadonlyArray<Pick<ArtifactRow, 'artifactId' | 'keyId'>>): Promise<string[]> {
    const { keyIds } = await closureSubjects(this.#d.db.db, rows.map((r) => r.artifactId));
    return [...rows.flatMap((r) => (r.keyId ? [r.keyId] : [])), ...keyIds];
  }

  /** The transitive closure below an artifact, with the number of distinct subjects in it. */
  async provenance(artifactId: string): Promise<{ nodes: Awaited<ReturnType<typeof closure>>; subjects: string[] }> {
    await this.#row(artifactId, { allowErased: true });
    const nodes = await closure(this.#d.db.db, [artifactId]);
    const { subjects } = await closureSubjects(this.#d.db.db, [artifactId]);
    return { nodes, subjects };
  }

  /** Every artifact whose closure holds an entry of the subject (what an erasure must regenerate). */
  touching(subject: string): Promise<TouchingArtifact[]> {
    return touchingSubject(this.#d.db.db, this.#d.keys.subjectHash(subject));
  }

  touchingRecords(recordIds: readonly string[]): Promise<TouchingArtifact[]> {
    return touchingRecords(this.#d.db.db, recordIds);
  }

  /**
   * Regenerates the given artifacts and every artifact above them from their
   * surviving sources: sources named in `excluding`, unreadable (key destroyed) or
   * erased are dropped. Each artifact is rewritten exactly once, after everything it
   * depends on; one left with no surviving source is erased.
   */
  async regenerate(
    artifactIds: readonly string[],
    options: { excluding?: readonly string[]; actor: string; reason?: string },
  ): Promise<RegenerationResult> {
    const unknown = artifactIds.filter((id) => !ARTIFACT_ID.test(id));
    if (unknown.length > 0) throw new LetheError('validation_failed', `${unknown.length} id(s) are not artifact ids`);
    const existing = await this.#d.db.db.select({ id: artifacts.artifactId }).from(artifacts).where(inArray(artifacts.artifactId, [...new Set(artifactIds)]));
    if (existing.length !== new Set(artifactIds).size) throw new LetheError('not_found', 'no such artifact');
    const excluded = new Set(options.excluding ?? []);
    const regenerated: Array<{ artifactId: string; version: number }> = [];
    const removed: string[] = [];
    const done = new Set<string>();
    // An artifact written above one of ours while we worked (it committed before a
    // version key we destroy, so its own check passed) is not in the first closure:
    // look again until a pass finds nothing new.
    for (let pass = 0; pass < 10; pass++) {
      const order = (await upwardClosure(this.#d.db.db, artifactIds)).filter((a) => !done.has(a.artifactId));
      if (order.length === 0) return { regenerated, removed };
      for (const { artifactId } of order) {
        done.add(artifactId);
        const outcome = await this.#regenerateOne(artifactId, excluded, new Set(removed), options);
        if (outcome === 'removed') removed.push(artifactId);
        else if (outcome !== 'skipped') regenerated.push({ artifactId, version: outcome });
      }
    }
    throw new LetheError('unavailable', 'artifacts kept appearing above the regenerated ones; run the regeneration again', { retryable: true });
  }

  async #regenerateOne(
    artifactId: string,
    excluded: ReadonlySet<string>,
    removed: ReadonlySet<string>,
    options: { actor: string; reason?: string },
  ): Promise<number | 'removed' | 'skipped'> {
    for (let attempt = 0; attempt < 5; attempt++) {
      const [row] = await this.#d.db.db.select().from(artifacts).where(eq(artifacts.artifactId, artifactId));
      if (!row || row.state !== 'live') return 'skipped';
      const edges = await this.#d.db.db.select().from(provenance).where(eq(provenance.artifactId, artifactId)).orderBy(asc(provenance.sourceId));
      const candidates = edges.filter((e) => !excluded.has(e.sourceId) && !removed.has(e.sourceId));
      const { sources: readable, versionKeys } = await this.#readSources(candidates);
      try {
        if (readable.length === 0) {
          await this.#erase(row, options);
          return 'removed';
        }
        const text = await this.#d.regenerator.regenerate({ artifactId, kind: row.kind, sources: readable });
        return await this.#writeVersion(row, text, readable, versionKeys, options);
      } catch (e) {
        // a source was erased, or the artifact changed, meanwhile: look again
        if (isLetheError(e, 'source_erased') || isLetheError(e, 'conflict')) continue;
        throw e;
      }
    }
    throw new LetheError('unavailable', 'the artifact kept changing during regeneration; run it again', { retryable: true });
  }

  /**
   * The sources' current texts, in edge order (unreadable ones left out), and the
   * version key each artifact source was read under.
   */
  async #readSources(
    edges: ReadonlyArray<{ sourceId: string; sourceType: 'entry' | 'artifact' }>,
  ): Promise<{ sources: RegenerationSource[]; versionKeys: Map<string, string> }> {
    const entryIds = edges.filter((e) => e.sourceType === 'entry').map((e) => e.sourceId);
    const artifactIds = edges.filter((e) => e.sourceType === 'artifact').map((e) => e.sourceId);
    const entries = await this.#d.log.readMany(entryIds);
    const arts = await this.#readCurrent(artifactIds);
    const sources: RegenerationSource[] = [];
    for (const e of edges) {
      const text = e.sourceType === 'entry' ? entries.get(e.sourceId)?.text : arts.get(e.sourceId)?.text;
      if (text !== undefined) sources.push({ id: e.sourceId, type: e.sourceType, text });
    }
    return { sources, versionKeys: new Map([...arts].map(([id, a]) => [id, a.row.keyId!])) };
  }

  async #writeVersion(
    row: ArtifactRow,
    text: string,
    sources: readonly RegenerationSource[],
    versionKeys: ReadonlyMap<string, string>,
    options: { actor: string; reason?: string },
  ): Promise<number> {
    const version = row.version + 1;
    const { keyId, key } = this.#d.artifactKeys.fresh();
    const object = objectName(row.artifactId, version);
    try {
      const [embedding] = await this.#d.search.seal([{ recordId: row.artifactId, recordType: 'artifact', text }], keyId, key);
      await this.#d.objects.put(object, this.#seal(key, row.artifactId, version, keyId, { kind: row.kind, text }));
      try {
        await this.#d.db.db.transaction(async (tx) => {
          const [locked] = await tx.select().from(artifacts).where(eq(artifacts.artifactId, row.artifactId)).for('update');
          if (!locked || locked.version !== row.version || locked.state !== 'live') throw new LetheError('conflict', 'the artifact changed during regeneration');
          // the artifact sources must still be at the versions we read (else we built from stale text)
          const { sourceRows } = await this.#checkSources(tx, sources.map((s) => s.id), [...versionKeys.values()]);
          await tx
            .update(artifacts)
            .set({ version, keyId, object, generator: this.#d.regenerator.name, updatedAt: new Date() })
            .where(eq(artifacts.artifactId, row.artifactId));
          await this.#d.artifactKeys.store(tx, { keyId, key, artifactId: row.artifactId, version });
          await tx.delete(provenance).where(eq(provenance.artifactId, row.artifactId));
          await this.#insertEdges(tx, row.artifactId, sourceRows);
          await upsertEmbeddings(tx, [embedding!]);
          if (locked.keyId) await this.#d.artifactKeys.destroy(tx, locked.keyId, { reason: options.reason ?? 'regenerated', actor: options.actor, artifactId: row.artifactId });
          await this.#d.audit.append(tx, [
            { actor: options.actor, action: 'artifact.regenerate', keyId, detail: { artifactId: row.artifactId, version, sources: sources.length, reason: options.reason ?? null } },
          ]);
          await notifyEmbeddings(tx, [{ recordId: row.artifactId, keyId }]);
        });
      } catch (e) {
        await this.#d.objects.delete(object).catch(() => {});
        throw e;
      }
      this.#d.search.publish([embedding!]);
      if (row.keyId) {
        this.#d.search.removeKey(row.keyId);
        this.#d.onKeysDestroyed?.([row.keyId]);
      }
      if (row.object) await this.#d.objects.delete(row.object).catch((e) => this.#d.logger.warn({ err: String(e) }, 'could not delete a superseded artifact object (its key is destroyed)'));
      this.#d.metrics.artifactsWritten.inc({ operation: 'regenerate' });
      return version;
    } finally {
      zeroize(key);
    }
  }

  /** Erases an artifact left with no surviving source: its key destroyed, its edges, embedding and object gone. */
  async #erase(row: ArtifactRow, options: { actor: string; reason?: string }): Promise<void> {
    await this.#d.db.db.transaction(async (tx) => {
      const [locked] = await tx.select().from(artifacts).where(eq(artifacts.artifactId, row.artifactId)).for('update');
      if (!locked || locked.version !== row.version || locked.state !== 'live') throw new LetheError('conflict', 'the artifact changed during regeneration');
      await tx.update(artifacts).set({ state: 'erased', keyId: null, object: null, updatedAt: new Date() }).where(eq(artifacts.artifactId, row.artifactId));
      await tx.delete(provenance).where(eq(provenance.artifactId, row.artifactId));
      await tx.execute(sql`delete from embeddings where record_id = ${row.artifactId}`);
      if (locked.keyId) {
        await this.#d.artifactKeys.destroy(tx, locked.keyId, { reason: options.reason ?? 'no surviving source', actor: options.actor, artifactId: row.artifactId });
      }
      await this.#d.audit.append(tx, [{ actor: options.actor, action: 'artifact.erase', keyId: locked.keyId ?? undefined, detail: { artifactId: row.artifactId, version: row.version } }]);
    });
    this.#d.search.unpublish([row.artifactId]);
    if (row.keyId) this.#d.onKeysDestroyed?.([row.keyId]);
    if (row.object) await this.#d.objects.delete(row.object).catch(() => {});
    this.#d.metrics.artifactsWritten.inc({ operation: 'erase' });
  }

  /**
   * Inside `tx`: every source exists (else unknown_source) and is readable (else
   * source_erased / erasure_in_progress), and so is everything the read fences cover;
   * FOR KEY SHARE on all of their keys until `tx` ends. Returns the new height.
   */
  async #checkSources(tx: Transaction, sources: readonly string[], fenceKeys: readonly string[]) {
    const entryIds = sources.filter((s) => ENTRY_ID.test(s));
    const artifactIds = sources.filter((s) => ARTIFACT_ID.test(s));
    const entryRows = entryIds.length
      ? await queryRows<{ entry_id: string; key_id: string }>(
          tx,
          sql`select entry_id, key_id from log_entries where entry_id in (select json_array_elements_text(${JSON.stringify(entryIds)}::json))`,
        )
      : [];
    const artifactRows = artifactIds.length
      ? await tx.select().from(artifacts).where(inArray(artifacts.artifactId, artifactIds)).for('key share')
      : [];
    const unknown = entryIds.length - entryRows.length + (artifactIds.length - artifactRows.length);
    if (unknown > 0) throw new LetheError('unknown_source', `sources: ${unknown} source(s) do not exist`);
    const erased = artifactRows.filter((a) => a.state !== 'live');
    if (erased.length > 0) throw new LetheError('source_erased', `sources: ${erased.length} artifact(s) were erased`);
    try {
      await assertKeysLive(tx, [...entryRows.map((e) => e.key_id), ...artifactRows.map((a) => a.keyId!)], 'sources');
    } catch (e) {
      if (isLetheError(e, 'source_erased')) throw new LetheError('source_erased', 'sources: some were erased (their keys were destroyed)');
      throw e;
    }
    await assertKeysLive(tx, fenceKeys, 'readFence');
    const height = 1 + Math.max(0, ...artifactRows.map((a) => a.height));
    if (height > MAX_HEIGHT) throw new LetheError('validation_failed', `sources: artifacts may be derived from artifacts at most ${MAX_HEIGHT} levels deep`);
    const sourceRows = [
      ...entryRows.map((e) => ({ sourceId: e.entry_id, sourceType: 'entry' as const })),
      ...artifactRows.map((a) => ({ sourceId: a.artifactId, sourceType: 'artifact' as const })),
    ];
    return { height, sourceRows };
  }

  async #insertEdges(tx: Transaction, artifactId: string, rows: ReadonlyArray<{ sourceId: string; sourceType: 'entry' | 'artifact' }>): Promise<void> {
    if (rows.length === 0) return;
    await tx.execute(sql`insert into provenance (artifact_id, source_id, source_type)
      select ${artifactId}, v.source_id, v.source_type
        from json_to_recordset(${JSON.stringify(rows.map((r) => ({ source_id: r.sourceId, source_type: r.sourceType })))}::json)
             as v(source_id text, source_type text)`);
  }

  async #row(artifactId: string, options: { allowErased?: boolean } = {}): Promise<ArtifactRow> {
    if (!ARTIFACT_ID.test(artifactId)) throw new LetheError('not_found', 'no such artifact');
    const [row] = await this.#d.db.db.select().from(artifacts).where(eq(artifacts.artifactId, artifactId));
    if (!row) throw new LetheError('not_found', 'no such artifact');
    if (row.state !== 'live' && !options.allowErased) throw new LetheError('artifact_erased', 'the artifact was erased: none of its sources survived');
    return row;
  }

  async #readVersion(row: ArtifactRow): Promise<ArtifactPayload> {
    if (!row.keyId || !row.object) throw new LetheError('artifact_erased', 'the artifact was erased');
    const key = await this.#d.artifactKeys.unwrap(row.keyId);
    try {
      const envelope = await this.#d.objects.get(row.object);
      const plaintext = open({ key, envelope, expectedKeyId: row.keyId, associatedData: artifactContext(row.artifactId, row.version, row.keyId) });
      try {
        return JSON.parse(utf8.decode(plaintext)) as ArtifactPayload;
      } finally {
        plaintext.fill(0);
      }
    } finally {
      zeroize(key);
    }
  }

  #seal(key: Uint8Array, artifactId: string, version: number, keyId: string, payload: ArtifactPayload): Uint8Array {
    const plaintext = utf8.encode(JSON.stringify(payload));
    try {
      return seal({ key, keyId, plaintext, associatedData: artifactContext(artifactId, version, keyId) });
    } finally {
      plaintext.fill(0);
    }
  }
}
