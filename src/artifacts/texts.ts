/**
 * An artifact version's text at rest: sealed under the version's own key (AAD =
 * artifact id, version, key id) in the object store at `artifacts/<id>/v<n>`, and
 * read back through that key. Reading the current version of many artifacts copes
 * with a regeneration under the reader: a version whose key was destroyed meanwhile
 * is read again at its new version, never mistaken for an erased artifact.
 */
import { and, eq, sql } from 'drizzle-orm';
import { encodeContext, open, seal, utf8, zeroize } from '../crypto/index.js';
import { type Database, preparedPer } from '../db/client.js';
import { type ArtifactKind, artifactKeys, type ArtifactRow, artifacts } from '../db/schema.js';
import { isLetheError, LetheError } from '../errors.js';
import { mapLimit } from '../concurrency.js';
import { SealedCache } from '../storage/sealed-cache.js';
import type { ObjectStore } from '../storage/store.js';
import type { VersionKeys } from '../vault/version-keys.js';

/** Versions read at once. */
const READ_CONCURRENCY = 8;

export interface ArtifactPayload {
  readonly kind: ArtifactKind;
  readonly text: string;
}

export function objectName(artifactId: string, version: number): string {
  return `artifacts/${artifactId}/v${version}`;
}

function artifactContext(artifactId: string, version: number, keyId: string): Uint8Array {
  return encodeContext('artifact', { artifactId, version, keyId });
}

export class ArtifactTexts {
  readonly #d: { db: Database; versionKeys: VersionKeys; objects: ObjectStore };
  /** Versions recently written or read, sealed, by object and key: a name never denotes another sealing. */
  readonly #sealed = new SealedCache();

  constructor(deps: { db: Database; versionKeys: VersionKeys; objects: ObjectStore }) {
    this.#d = deps;
  }

  /** Seals a version's text under its key and stores it; answers the object name. */
  async put(key: Uint8Array, at: { artifactId: string; version: number; keyId: string }, payload: ArtifactPayload): Promise<string> {
    const plaintext = utf8.encode(JSON.stringify(payload));
    let envelope: Uint8Array;
    try {
      envelope = seal({ key, keyId: at.keyId, plaintext, associatedData: artifactContext(at.artifactId, at.version, at.keyId) });
    } finally {
      plaintext.fill(0);
    }
    const object = objectName(at.artifactId, at.version);
    await this.#d.objects.put(object, envelope);
    this.#sealed.set(cacheName(object, at.keyId), envelope);
    return object;
  }

  /** Removes a version's object (its key is destroyed, or its row never committed). */
  async remove(object: string): Promise<void> {
    await this.#d.objects.delete(object);
  }

  /** The text of the version `row` names. */
  async read(row: ArtifactRow): Promise<ArtifactPayload> {
    if (!row.keyId || !row.object) throw new LetheError('artifact_erased', 'the artifact was erased');
    const key = await this.#d.versionKeys.unwrap(row.keyId, 'artifact-version');
    try {
      return await this.#open(key, row);
    } finally {
      zeroize(key);
    }
  }

  /** The version `row` names opened under its key (the caller has read the row and unwrapped the key). */
  async #open(key: Uint8Array, row: ArtifactRow): Promise<ArtifactPayload> {
    const keyId = row.keyId!;
    const object = row.object!;
    const name = cacheName(object, keyId);
    let envelope = this.#sealed.get(name);
    if (!envelope) {
      envelope = await this.#d.objects.get(object);
      this.#sealed.set(name, envelope);
    }
    const plaintext = open({ key, envelope, expectedKeyId: keyId, associatedData: artifactContext(row.artifactId, row.version, keyId) });
    try {
      return JSON.parse(utf8.decode(plaintext)) as ArtifactPayload;
    } finally {
      plaintext.fill(0);
    }
  }

  /**
   * The current version's text of each live artifact among `ids` (others left out);
   * given `only`, just those it admits are opened (their rows and keys are read meanwhile).
   * An artifact regenerated while we read (its version key destroyed under us) is
   * read again at its new version.
   */
  async readCurrent(ids: readonly string[], only?: Promise<ReadonlySet<string>>): Promise<Map<string, { row: ArtifactRow; text: string }>> {
    const out = new Map<string, { row: ArtifactRow; text: string }>();
    // handled here, thrown where awaited: a refusal while the rows are read is not an unhandled rejection
    only?.catch(() => undefined);
    let pending = [...new Set(ids)];
    for (let attempt = 0; attempt < 5 && pending.length > 0; attempt++) {
      // each artifact with its version key's wrapped copy, in one query; a key missing was destroyed since (a regeneration): read again
      const joined = await readCurrentQuery(this.#d.db).execute({ ids: pending });
      let rows = joined.map((j) => j.row);
      const retry: string[] = [];
      const keys = await this.#d.versionKeys.unwrapVersionRows(joined.flatMap((j) => (j.key ? [j.key] : [])));
      try {
        // rows and keys were fetched while the caller decided which to open: nothing else is decrypted
        if (only) {
          const admitted = await only;
          rows = rows.filter((row) => admitted.has(row.artifactId));
        }
        // side by side: each read is an object fetch, unless the version is cached
        await mapLimit(rows, READ_CONCURRENCY, async (row) => {
          const key = row.keyId && row.object ? keys.get(row.keyId) : undefined;
          if (!key) return void retry.push(row.artifactId);
          try {
            out.set(row.artifactId, { row, text: (await this.#open(key, row)).text });
          } catch (e) {
            if (!isLetheError(e, 'not_found')) throw e;
            retry.push(row.artifactId);
          }
        });
      } finally {
        zeroize(...keys.values());
      }
      pending = retry;
    }
    if (pending.length > 0) throw new LetheError('unavailable', 'artifacts kept changing during the read; try again', { retryable: true });
    return out;
  }
}

/** readCurrent's query, prepared (parsed and planned once per connection): live artifacts with their version keys' wrapped copies. */
const readCurrentQuery = preparedPer((db) => prepareReadCurrent(db));

function prepareReadCurrent(db: Database) {
  return db
    .select({
      row: artifacts,
      key: { keyId: artifactKeys.keyId, epoch: artifactKeys.epoch, wrappedDek: artifactKeys.wrappedDek, purpose: artifactKeys.purpose },
    })
    .from(artifacts)
    .leftJoin(artifactKeys, eq(artifactKeys.keyId, artifacts.keyId))
    .where(and(sql`${artifacts.artifactId} = any(${sql.placeholder('ids')})`, eq(artifacts.state, 'live')))
    .prepare('artifacts-read-current');
}

/** A version's name in the cache: its object and the key it is sealed under. */
const cacheName = (object: string, keyId: string) => `${object}\u0000${keyId}`;
