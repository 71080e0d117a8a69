/**
 * The search section's index phase (bench/search.ts, steps 2-4), in a process of its
 * own so that its RSS before the build holds little but the corpus: the graph build,
 * its memory, the queries against brute force, and the deletion. bench/search.ts writes
 * the corpus (SEARCH_CORPUS: int8 vectors, then float32 scales; SEARCH_N x SEARCH_D)
 * and starts this with node --expose-gc; the result goes back through
 * BENCH_RESULT_FILE.
 */
import { HashingEmbedder } from '../src/vectors/embedder.js';
import { envInt } from './support/mode.js';
import { isMain, reportResult } from './support/process.js';
import { indexRun, readCorpus } from './search.js';

if (isMain(import.meta.url)) {
  const file = process.env.SEARCH_CORPUS;
  if (!file) throw new Error('SEARCH_CORPUS names the corpus file bench/search.ts wrote');
  const n = envInt('SEARCH_N', 0, 1);
  const d = envInt('SEARCH_D', 512, 16);
  const embedder = new HashingEmbedder(d);
  await reportResult(await indexRun(embedder, readCorpus(file, n, d), envInt('SEARCH_QUERIES', 300, 1), envInt('SEARCH_REBUILD_AT', n, 1)));
}
