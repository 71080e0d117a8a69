/**
 * The re-index: sealed rows shingled and embedded with an older comparison form
 * (src/vectors/fold.ts FOLD_VERSION, recorded per row in `embeddings.fold_version`)
 * computed again from their text, so that what the probe and search compare is
 * disguise-free on both sides. It pages through the stale rows of live keys, reads
 * their text — an entry through the log, an artifact's current version through the
 * artifacts — and has the vectors re-seal them under the same key.
 *
 * Run by `lethe reindex`, and at start-up by every app that migrates (`lethe migrate`,
 * `lethe serve` with LETHE_AUTO_MIGRATE): after the schema, before the indexes are
 * rebuilt from the rows. A row whose text cannot be read now (an entry being forgotten
 * or refused, an artifact whose version moved on) is left as it is and counted: its
 * key's destruction or the next write replaces it.
 */
import type { ArtifactService } from '../artifacts/service.js';
import type { LogService } from '../log/service.js';
import type { Vectors } from '../vectors/service.js';

/** Stale rows read, and their texts decrypted, at a time. */
const PAGE = 256;

export interface ReindexResult {
  /** Rows of an older comparison form found. */
  readonly stale: number;
  /** Rows computed again and written. */
  readonly reindexed: number;
  /** Rows whose text could not be read now (left as they are). */
  readonly left: number;
}

export async function reindex(parts: { readonly vectors: Vectors; readonly log: LogService; readonly artifacts: ArtifactService }): Promise<ReindexResult> {
  const { vectors, log, artifacts } = parts;
  let stale = 0;
  let reindexed = 0;
  let after: string | undefined;
  for (;;) {
    const rows = await vectors.staleRows(PAGE, after);
    if (rows.length === 0) break;
    stale += rows.length;
    const entries = await log.readMany(rows.filter((r) => r.recordType === 'entry').map((r) => r.recordId));
    const versions = await artifacts.readMany(rows.filter((r) => r.recordType === 'artifact').map((r) => r.recordId));
    const readable = rows.flatMap((r) => {
      const read = r.recordType === 'entry' ? entries.get(r.recordId) : versions.get(r.recordId);
      // the text under the row's own key only: another key's text belongs to another row
      return read && read.keyId === r.keyId ? [{ ...r, text: read.text }] : [];
    });
    reindexed += await vectors.reindex(readable);
    after = rows.at(-1)!.recordId;
  }
  return { stale, reindexed, left: stale - reindexed };
}
