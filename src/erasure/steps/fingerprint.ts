/**
 * fingerprint: reads the subject's entries one last time and keeps of each only its
 * embedding and keyed shingles in text order (the lexical index's keyed hashes),
 * sealed under the erasure's own key with the request's public attributes: what the
 * probe later looks for. Overwrites the sealed blob: safe to run again (the fence
 * step runs it again after late appends).
 */
import { utf8 } from '../../crypto/index.js';
import { ErasureKey } from '../erasure-key.js';
import { forgottenEntries } from '../state.js';
import { encodeFingerprints, type Fingerprints, type RecordFingerprint } from '../probe.js';
import type { Step, StepContext } from './step.js';

/** Entries read and embedded per round. */
const CHUNK = 256;

export async function takeFingerprints(ctx: StepContext): Promise<string> {
  const { res, row, state } = ctx;
  const key = await ErasureKey.unwrap(res.versionKeys, row);
  const records: RecordFingerprint[] = [];
  try {
    const plain = key.open('request', row.sealedRequest!);
    const request = JSON.parse(utf8.decode(plain)) as { publicAttributes: string[] };
    plain.fill(0);
    const forgetting = forgottenEntries(row);
    if (state.keyId) {
      // forgetting entries: those alone, read past their forgotten mark (this erasure set it)
      const ids = forgetting ? [...forgetting] : await res.log.entryIdsOf(row.subjectHash);
      for (let i = 0; i < ids.length; i += CHUNK) {
        const chunk = ids.slice(i, i + CHUNK);
        const entries = await res.log.readMany(chunk, forgetting ? { forgottenBy: row.erasureId } : {});
        const readable = chunk.filter((id) => entries.has(id));
        const vectors = await res.vectors.embedder.embed(readable.map((id) => entries.get(id)!.text));
        readable.forEach((id, j) => {
          records.push({ id, vector: vectors[j]!, ...res.vectors.shinglesOf(entries.get(id)!.text) });
        });
      }
    }
    const fingerprints: Fingerprints = { model: res.vectors.embedder.model, records, attributes: request.publicAttributes };
    const sealed = key.seal('fingerprints', encodeFingerprints(fingerprints));
    await res.records.saveFingerprints(row.erasureId, sealed, row.claimedBy ?? '');
    row.sealedFingerprints = sealed;
    state.fingerprinted = records.length;
    return `${records.length} record(s) and ${request.publicAttributes.length} public attribute(s) fingerprinted (sealed under the erasure key)`;
  } finally {
    for (const r of records) r.vector.fill(0);
    key.close();
  }
}

export const fingerprint: Step = {
  name: 'fingerprint',
  async run(ctx) {
    return { detail: await takeFingerprints(ctx) };
  },
};
