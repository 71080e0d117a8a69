/**
 * Regeneration: rewrites artifacts from their surviving sources, cascading upward in
 * topological order (by height), each artifact exactly once per call.
 *
 * - The regenerator sees only the surviving sources' current texts, never the
 *   version it replaces (that text may carry the erased content).
 * - A new version is sealed under a new key, re-embedded, and switched in with the
 *   previous version's key destroyed in the same transaction: every copy of the old
 *   object is unreadable from the commit on.
 * - An artifact with no surviving source is erased (key destroyed, edges, embedding
 *   and object gone); the artifacts above it drop it.
 * - Under concurrency: a source regenerated under us is re-read, building from a
 *   stale source version is refused and retried, and artifacts written above ours
 *   meanwhile are found by another pass.
 */
import { asc, eq, inArray } from 'drizzle-orm';
import { zeroize } from '../crypto/index.js';
import type { Database } from '../db/client.js';
import { type ArtifactRow, artifacts, provenance } from '../db/schema.js';
import { isLetheError, LetheError } from '../errors.js';
import { isId } from '../ids.js';
import type { LogService } from '../log/service.js';
import type { Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import type { AuditLog } from '../vault/audit.js';
import type { KeyDestructions } from '../vault/destructions.js';
import type { VersionKeys } from '../vault/version-keys.js';
import { notifyEmbeddings, upsertEmbeddings } from '../vectors/embeddings.js';
import type { Vectors } from '../vectors/service.js';
import { upwardClosure } from './provenance.js';
import type { RegenerationSource, Regenerator } from './regenerator.js';
import { checkSources, insertEdges } from './sources.js';
import type { ArtifactTexts } from './texts.js';

export interface RegenerationResult {
  /** Artifacts rewritten, with their new version, in the order they were rewritten. */
  readonly regenerated: Array<{ artifactId: string; version: number }>;
  /** Artifacts erased because no source survived. */
  readonly removed: string[];
}

export interface RegenerationOptions {
  /** Sources to leave out even when readable. */
  readonly excluding?: readonly string[];
  readonly actor: string;
  /** Recorded with each destroyed version key. */
  readonly reason?: string;
  /** Told after each artifact's new version (or erasure) committed. */
  readonly onCommitted?: (artifactId: string) => void;
}

export interface RegenerationDeps {
  readonly db: Database;
  readonly versionKeys: VersionKeys;
  readonly destructions: KeyDestructions;
  readonly texts: ArtifactTexts;
  readonly vectors: Vectors;
  readonly log: LogService;
  readonly regenerator: Regenerator;
  readonly audit: AuditLog;
  readonly metrics: Metrics;
  readonly logger: Logger;
}

type Outcome = number | 'removed' | 'skipped';

export class Regeneration {
  readonly #d: RegenerationDeps;

  constructor(deps: RegenerationDeps) {
    this.#d = deps;
  }

  /**
   * Regenerates the given artifacts and every artifact above them from their
   * surviving sources: sources named in `excluding`, unreadable (key destroyed) or
   * erased are dropped. Each artifact is rewritten exactly once, after everything it
   * depends on; one left with no surviving source is erased.
   */
  async regenerate(artifactIds: readonly string[], options: RegenerationOptions): Promise<RegenerationResult> {
    const unknown = artifactIds.filter((id) => !isId('art', id));
    if (unknown.length > 0) throw new LetheError('validation_failed', `${unknown.length} id(s) are not artifact ids`);
    const existing = await this.#d.db
      .select({ id: artifacts.artifactId })
      .from(artifacts)
      .where(inArray(artifacts.artifactId, [...new Set(artifactIds)]));
    if (existing.length !== new Set(artifactIds).size) throw new LetheError('not_found', 'no such artifact');
    const excluded = new Set(options.excluding ?? []);
    const regenerated: Array<{ artifactId: string; version: number }> = [];
    const removed: string[] = [];
    const done = new Set<string>();
    // An artifact written above one of ours while we worked (it committed before a
    // version key we destroy, so its own check passed) is not in the first closure:
    // look again until a pass finds nothing new.
    for (let pass = 0; pass < 10; pass++) {
      const order = (await upwardClosure(this.#d.db, artifactIds)).filter((a) => !done.has(a.artifactId));
      if (order.length === 0) return { regenerated, removed };
      for (const { artifactId } of order) {
        done.add(artifactId);
        const outcome = await this.#regenerateOne(artifactId, excluded, new Set(removed), options);
        if (outcome === 'removed') removed.push(artifactId);
        else if (outcome !== 'skipped') regenerated.push({ artifactId, version: outcome });
        if (outcome !== 'skipped') options.onCommitted?.(artifactId);
      }
    }
    throw new LetheError('unavailable', 'artifacts kept appearing above the regenerated ones; run the regeneration again', { retryable: true });
  }

  async #regenerateOne(artifactId: string, excluded: ReadonlySet<string>, removed: ReadonlySet<string>, options: RegenerationOptions): Promise<Outcome> {
    for (let attempt = 0; attempt < 5; attempt++) {
      const [row] = await this.#d.db.select().from(artifacts).where(eq(artifacts.artifactId, artifactId));
      if (!row || row.state !== 'live') return 'skipped';
      const edges = await this.#d.db.select().from(provenance).where(eq(provenance.artifactId, artifactId)).orderBy(asc(provenance.sourceId));
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
    const arts = await this.#d.texts.readCurrent(artifactIds);
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
    options: RegenerationOptions,
  ): Promise<number> {
    const { versionKeys: keys, texts, vectors } = this.#d;
    const version = row.version + 1;
    const { keyId, key } = keys.fresh();
    try {
      const [embedding] = await vectors.seal([{ recordId: row.artifactId, recordType: 'artifact', text }], keyId, key);
      const object = await texts.put(key, { artifactId: row.artifactId, version, keyId }, { kind: row.kind, text });
      try {
        await this.#d.destructions.transaction(async (tx) => {
          const [locked] = await tx.select().from(artifacts).where(eq(artifacts.artifactId, row.artifactId)).for('update');
          if (!locked || locked.version !== row.version || locked.state !== 'live')
            throw new LetheError('conflict', 'the artifact changed during regeneration');
          // the artifact sources must still be at the versions we read (else we built from stale text)
          const { sourceRows } = await checkSources(
            tx,
            sources.map((s) => s.id),
            [...versionKeys.values()],
          );
          await tx
            .update(artifacts)
            .set({ version, keyId, object, generator: this.#d.regenerator.name, updatedAt: new Date() })
            .where(eq(artifacts.artifactId, row.artifactId));
          await keys.store(tx, { keyId, key, artifactId: row.artifactId, version, purpose: 'artifact-version' });
          await tx.delete(provenance).where(eq(provenance.artifactId, row.artifactId));
          await insertEdges(tx, row.artifactId, sourceRows);
          await upsertEmbeddings(tx, [embedding!]);
          if (locked.keyId) await keys.destroy(tx, locked.keyId, { reason: options.reason ?? 'regenerated', actor: options.actor, artifactId: row.artifactId });
          await this.#d.audit.append(tx, [
            {
              actor: options.actor,
              action: 'artifact.regenerate',
              keyId,
              detail: { artifactId: row.artifactId, version, sources: sources.length, reason: options.reason ?? null },
            },
          ]);
          await notifyEmbeddings(tx, [{ recordId: row.artifactId, keyId }]);
        });
      } catch (e) {
        await texts.remove(object).catch(() => {});
        throw e;
      }
      vectors.publish([embedding!]);
      if (row.object)
        await texts
          .remove(row.object)
          .catch((e) => this.#d.logger.warn({ err: String(e) }, 'could not delete a superseded artifact object (its key is destroyed)'));
      this.#d.metrics.artifactsWritten.inc({ operation: 'regenerate' });
      return version;
    } finally {
      zeroize(key);
    }
  }

  /** Erases an artifact left with no surviving source: its key destroyed, its edges, embedding and object gone. */
  async #erase(row: ArtifactRow, options: RegenerationOptions): Promise<void> {
    await this.#d.destructions.transaction(async (tx) => {
      const [locked] = await tx.select().from(artifacts).where(eq(artifacts.artifactId, row.artifactId)).for('update');
      if (!locked || locked.version !== row.version || locked.state !== 'live') throw new LetheError('conflict', 'the artifact changed during regeneration');
      await tx.update(artifacts).set({ state: 'erased', keyId: null, object: null, updatedAt: new Date() }).where(eq(artifacts.artifactId, row.artifactId));
      await tx.delete(provenance).where(eq(provenance.artifactId, row.artifactId));
      await this.#d.vectors.deleteRecord(tx, row.artifactId);
      if (locked.keyId) {
        await this.#d.versionKeys.destroy(tx, locked.keyId, {
          reason: options.reason ?? 'no surviving source',
          actor: options.actor,
          artifactId: row.artifactId,
        });
      }
      await this.#d.audit.append(tx, [
        { actor: options.actor, action: 'artifact.erase', keyId: locked.keyId ?? undefined, detail: { artifactId: row.artifactId, version: row.version } },
      ]);
    });
    this.#d.vectors.unpublish([row.artifactId]);
    if (row.object) await this.#d.texts.remove(row.object).catch(() => {});
    this.#d.metrics.artifactsWritten.inc({ operation: 'erase' });
  }
}
