/**
 * probe: can the subject still be reconstructed? The index's nearest neighbours of
 * (at most PROBE_MAX_QUERIES of) the fingerprints and of every public attribute,
 * and every affected artifact, are read back where readable and scored against the
 * fingerprints by shingle containment and cosine (src/erasure/probe.ts); a vector
 * still indexed under an unreadable key counts too. Read-only: safe to run again.
 */
import { ErasureKey } from '../erasure-key.js';
import { decodeFingerprints, type Fingerprints, keyedShingles, PROBE_MAX_QUERIES, PROBE_NEIGHBOURS, type ProbeCandidate, scoreProbe, spread } from '../probe.js';
import type { ProbeFinding, TierScope } from '../tiers/port.js';
import { type Step, TierFailure } from './step.js';

export const probe: Step = {
  name: 'probe',
  async run({ res, row, state }) {
    const scope: TierScope = { erasureId: row.erasureId, subjectHash: row.subjectHash, keyId: state.keyId ?? null, contributed: 0 };
    for (const f of await res.tiers['key-table'].probe(scope, { vectors: [], records: [], neighbours: 0 })) {
      if (f.kind === 'live-key') throw new TierFailure(`tier key-table: the subject has a live key (${f.keyId}) after its destruction`);
    }
    if (!row.sealedFingerprints) throw new TierFailure('the probe fingerprints are missing: the probe cannot run');
    const key = await ErasureKey.unwrap(res.versionKeys, row);
    let fp: Fingerprints | undefined;
    try {
      const plain = key.open('fingerprints', row.sealedFingerprints);
      fp = decodeFingerprints(plain);
      plain.fill(0);
      const embedder = res.vectors.embedder;
      const sameModel = fp.model === embedder.model;
      // candidates: the index's neighbours of the fingerprints and of every public attribute, and the affected artifacts;
      // at most PROBE_MAX_QUERIES of the records, evenly spread, query the index (each query is a full pass of it)
      const vectors: Float32Array[] = sameModel ? spread(fp.records, PROBE_MAX_QUERIES).map((r) => r.vector) : [];
      if (fp.attributes.length) vectors.push(...(await embedder.embed(fp.attributes)));
      const found = await res.tiers['vector-index'].probe(scope, { vectors, records: [], neighbours: PROBE_NEIGHBOURS });
      const records = new Map<string, 'entry' | 'artifact'>();
      for (const f of found) if (f.kind === 'neighbour') records.set(f.id, f.type);
      for (const n of state.graph?.nodes ?? []) if (n.type === 'artifact') records.set(n.id, 'artifact');
      res.failpoint?.('probe-candidates');
      const query = { vectors: [], records: [...records].map(([id, type]) => ({ id, type })), neighbours: 0 };
      const texts = [...(await res.tiers.log.probe(scope, query)), ...(await res.tiers.artifacts.probe(scope, query))].filter(
        (f): f is Extract<ProbeFinding, { kind: 'text' }> => f.kind === 'text',
      );
      const textVectors = texts.length ? await embedder.embed(texts.map((t) => t.text)) : [];
      const candidates: ProbeCandidate[] = texts.map((t, i) => ({
        id: t.id,
        tier: t.tier,
        vector: sameModel ? textVectors[i]! : new Float32Array(0),
        shingles: keyedShingles(t.text, key.shingles),
      }));
      for (const f of found) if (f.kind === 'vector') candidates.push({ id: f.id, tier: 'vector-index', vector: f.vector, shingles: new Set() });
      const { recovered, matches } = scoreProbe(fp.records, candidates, res.probeSimilarity);
      state.probe = { recovered, threshold: res.probeThreshold, matches };
      return {
        detail: `recovered ${recovered} of the subject's private content (threshold ${res.probeThreshold}) from ${candidates.length} readable candidate record(s); ${matches.length} match(es)`,
      };
    } finally {
      key.close();
      for (const r of fp?.records ?? []) r.vector.fill(0);
    }
  },
};
