/**
 * An artifact version's text at rest: sealed under the version's own key (AAD =
 * artifact id, version, key id) in the object store at `artifacts/<id>/v<n>`, and
 * read back through that key. Reading the current version of many artifacts copes
 * with a regeneration under the reader: a version whose key was destroyed meanwhile
 * is read again at its new version, never mistaken for an erased artifact.
 */
import { inArray } from 'drizzle-orm';
import { encodeContext, open, seal, utf8, zeroize } from '../crypto/index.js';
import type { Database } from '../db/client.js';
import { type ArtifactKind, type ArtifactRow, artifacts } from '../db/schema.js';
import { isLetheError, LetheError } from '../errors.js';
import { mapLimit } from '../concurrency.js';
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

  /**
   * The current version's text of each live artifact among `ids` (others left out).
   * An artifact regenerated while we read (its version key destroyed under us) is
   * read again at its new version.
   */
  async readCurrent(ids: readonly string[]): Promise<Map<string, { row: ArtifactRow; text: string }>> {
    const out = new Map<string, { row: ArtifactRow; text: string }>();
    let pending = [...new Set(ids)];
    for (let attempt = 0; attempt < 5 && pending.length > 0; attempt++) {
      const rows = await this.#d.db.select().from(artifacts).where(inArray(artifacts.artifactId, pending));
      const retry: string[] = [];
      // side by side: each read is a key unwrap and an object fetch
      await mapLimit(
        rows.filter((row) => row.state === 'live'),
        READ_CONCURRENCY,
        async (row) => {
          try {
            out.set(row.artifactId, { row, text: (await this.read(row)).text });
          } catch (e) {
            if (!isLetheError(e, 'key_destroyed') && !isLetheError(e, 'not_found') && !isLetheError(e, 'artifact_erased')) throw e;
            retry.push(row.artifactId);
          }
        },
      );
      pending = retry;
    }
    if (pending.length > 0) throw new LetheError('unavailable', 'artifacts kept changing during the read; try again', { retryable: true });
    return out;
  }
}
