/**
 * Retrieval quality on lethe's own labelled set (test/search/retrieval): does a search
 * find what an agent asks its memory?
 *
 *   setup   a vault on a fresh scratch database; every turn of every conversation
 *           appended through vault.log.append as a memory of its speaker (one subject
 *           per person), as "Speaker: text" (how an agent keeps a dialogue turn; the
 *           baseline indexes the same text), its session date in metadata.
 *   query   each question with evidence, searched scoped to its conversation's two
 *           subjects (k = 10), in each mode: hybrid (the default), vector, lexical.
 *           Figures: recall@5 and recall@10 (an evidence turn in the top k), MRR (of the
 *           first evidence turn, 0 beyond 10), per mode and per category (4 searches at a
 *           time); search p50 over the first 60 questions, one at a time.
 *   baseline a plain BM25 (k1 1.2, b 0.75; lower-case words, no stemming, no stop words)
 *           over the same turns of the same conversation, computed in this run.
 *   aim     hybrid recall@10 ÷ BM25 recall@10 ≥ 1.2.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { mapLimit } from '../src/concurrency.js';
import type { SearchMode } from '../src/search/rank.js';
import { REPO_ROOT } from './support/mode.js';
import { runIfMain } from './support/process.js';
import { type Aim, aim, fmtNum, fmtRatio, fmtSeconds, progress, table } from './support/report.js';
import { scratchVault } from './support/scratch.js';

const K = 10;
const MODES: readonly SearchMode[] = ['hybrid', 'vector', 'lexical'];
const CONCURRENCY = 4;
/** Questions timed one at a time per mode (search p50). */
const TIMED = 60;

interface Turn {
  readonly id: string;
  readonly speaker: string;
  readonly text: string;
}
interface Question {
  readonly id: string;
  readonly question: string;
  readonly category: string;
  readonly evidence: readonly string[];
}
interface Conversation {
  readonly id: string;
  readonly speakers: readonly string[];
  readonly sessions: ReadonlyArray<{ readonly date: string; readonly turns: readonly Turn[] }>;
  readonly questions: readonly Question[];
}

export interface Scores {
  readonly recall5: number;
  readonly recall10: number;
  readonly mrr: number;
  readonly questions: number;
}

export interface RetrievalResult {
  readonly conversations: number;
  readonly turns: number;
  readonly questions: number;
  readonly unanswerable: number;
  readonly setupSeconds: number;
  readonly embedder: string;
  /** Per mode, and the BM25 baseline: overall and per category. */
  readonly scores: Record<string, { readonly all: Scores; readonly byCategory: Record<string, Scores> }>;
  /** Search p50 ms per mode (through vault.search.search). */
  readonly p50Ms: Record<string, number>;
  readonly aims: Aim[];
}

export async function loadRetrievalSet(): Promise<Conversation[]> {
  const file = path.join(REPO_ROOT, 'test/search/retrieval/conversations.json');
  return (JSON.parse(await readFile(file, 'utf8')) as { conversations: Conversation[] }).conversations;
}

/** Ranks of the first evidence turn (1-based; Infinity when absent) → the scores. */
function score(ranks: ReadonlyArray<{ category: string; rank: number }>): { all: Scores; byCategory: Record<string, Scores> } {
  const of = (rs: ReadonlyArray<{ rank: number }>): Scores => ({
    recall5: rs.filter((r) => r.rank <= 5).length / rs.length,
    recall10: rs.filter((r) => r.rank <= 10).length / rs.length,
    mrr: rs.reduce((s, r) => s + (r.rank <= K ? 1 / r.rank : 0), 0) / rs.length,
    questions: rs.length,
  });
  const byCategory: Record<string, Scores> = {};
  for (const c of [...new Set(ranks.map((r) => r.category))].sort()) byCategory[c] = of(ranks.filter((r) => r.category === c));
  return { all: of(ranks), byCategory };
}

/** A turn as it is stored, by lethe and the baseline alike. */
function asStored(t: Turn): string {
  return `${t.speaker}: ${t.text}`;
}

function rankOf(ids: readonly string[], evidence: readonly string[]): number {
  const at = ids.findIndex((id) => evidence.includes(id));
  return at < 0 ? Number.POSITIVE_INFINITY : at + 1;
}

/** A plain BM25 over a conversation's turns: the baseline a user could write in an afternoon. */
export function plainBm25(turns: readonly Turn[]): (query: string, k: number) => string[] {
  const words = (t: string) => t.toLowerCase().match(/[a-z0-9]+/g) ?? [];
  const docs = turns.map((t) => {
    const tf = new Map<string, number>();
    for (const w of words(asStored(t))) tf.set(w, (tf.get(w) ?? 0) + 1);
    return { id: t.id, tf, length: [...tf.values()].reduce((a, b) => a + b, 0) };
  });
  const df = new Map<string, number>();
  for (const d of docs) for (const w of d.tf.keys()) df.set(w, (df.get(w) ?? 0) + 1);
  const avgdl = docs.reduce((s, d) => s + d.length, 0) / docs.length;
  const n = docs.length;
  return (query, k) => {
    const terms = [...new Set(words(query))];
    return docs
      .map((d) => {
        let s = 0;
        for (const t of terms) {
          const f = d.tf.get(t);
          if (!f) continue;
          const idf = Math.log(1 + (n - df.get(t)! + 0.5) / (df.get(t)! + 0.5));
          s += (idf * f * 2.2) / (f + 1.2 * (0.25 + (0.75 * d.length) / avgdl));
        }
        return { id: d.id, s };
      })
      .filter((d) => d.s > 0)
      .sort((a, b) => b.s - a.s)
      .slice(0, k)
      .map((d) => d.id);
  };
}

export async function runRetrieval(): Promise<RetrievalResult> {
  const conversations = await loadRetrievalSet();
  const { vault, cleanup } = await scratchVault('retrieval');
  try {
    const t0 = performance.now();
    const subjectOf = (c: Conversation, speaker: string) => `conv:${c.id}:${speaker.toLowerCase()}`;
    const turnOf = new Map<string, string>();
    const jobs = conversations.flatMap((c) => c.sessions.flatMap((s) => s.turns.map((t) => ({ c, date: s.date, t }))));
    progress(`retrieval: appending ${jobs.length} turns of ${conversations.length} conversations`);
    let next = 0;
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (next < jobs.length) {
          const { c, date, t } = jobs[next++]!;
          const { entryId } = await vault.log.append(subjectOf(c, t.speaker), { text: asStored(t), metadata: { turn: t.id, date } }, 'bench');
          turnOf.set(entryId, t.id);
        }
      }),
    );
    const setupSeconds = (performance.now() - t0) / 1000;
    const asked = conversations.flatMap((c) => c.questions.filter((q) => q.evidence.length > 0).map((q) => ({ c, q })));
    const ranks: Record<string, Array<{ category: string; rank: number }>> = {};
    const p50Ms: Record<string, number> = {};
    for (const mode of MODES) {
      progress(`retrieval: ${asked.length} questions, ${mode}`);
      const search = ({ c, q }: (typeof asked)[number]) => vault.search.search(q.question, K, { subjects: c.speakers.map((s) => subjectOf(c, s)) }, { mode });
      // latency: one search at a time, over the first TIMED questions
      const times: number[] = [];
      for (const a of asked.slice(0, TIMED)) {
        const s0 = performance.now();
        await search(a);
        times.push(performance.now() - s0);
      }
      times.sort((x, y) => x - y);
      p50Ms[mode] = times[Math.floor(times.length / 2)]!;
      // recall: every question, CONCURRENCY at a time
      const found = await mapLimit(asked, CONCURRENCY, async (a) =>
        rankOf(
          (await search(a)).hits.map((h) => turnOf.get(h.id) ?? ''),
          a.q.evidence,
        ),
      );
      ranks[mode] = asked.map((a, i) => ({ category: a.q.category, rank: found[i]! }));
    }
    ranks.bm25 = [];
    for (const c of conversations) {
      const bm25 = plainBm25(c.sessions.flatMap((s) => s.turns));
      for (const q of c.questions.filter((x) => x.evidence.length > 0))
        ranks.bm25.push({ category: q.category, rank: rankOf(bm25(q.question, K), q.evidence) });
    }
    const scores = Object.fromEntries(Object.entries(ranks).map(([m, r]) => [m, score(r)]));
    const ratio = scores.hybrid!.all.recall10 / scores.bm25!.all.recall10;
    return {
      conversations: conversations.length,
      turns: jobs.length,
      questions: asked.length,
      unanswerable: conversations.reduce((n, c) => n + c.questions.filter((q) => q.evidence.length === 0).length, 0),
      setupSeconds,
      embedder: vault.vectors.embedder.model,
      scores,
      p50Ms,
      aims: [aim('retrieval: hybrid recall@10 ÷ plain BM25 (same run, same turns)', ratio, '>= 1.2', ratio >= 1.2)],
    };
  } finally {
    await cleanup();
  }
}

export function formatRetrieval(r: RetrievalResult): string {
  const pct = (x: number) => `${fmtNum(x * 100, 1)}%`;
  const rows = Object.entries(r.scores).map(([m, s]) => [
    m === 'bm25' ? 'plain BM25 (baseline)' : m,
    pct(s.all.recall5),
    pct(s.all.recall10),
    fmtNum(s.all.mrr, 3),
    r.p50Ms[m] === undefined ? '' : fmtNum(r.p50Ms[m]!, 2),
  ]);
  const categories = Object.keys(r.scores.hybrid?.byCategory ?? {});
  const byCategory = Object.entries(r.scores).map(([m, s]) => [m, ...categories.map((c) => pct(s.byCategory[c]?.recall10 ?? 0))]);
  return [
    `${r.turns} turns of ${r.conversations} conversations appended in ${fmtSeconds(r.setupSeconds)}; ${r.questions} questions with evidence ` +
      `(${r.unanswerable} without, not scored); embedder ${r.embedder}; each search scoped to the conversation's two subjects, k = ${K}`,
    table(['ranking', 'recall@5', 'recall@10', 'MRR', 'search p50 ms'], rows),
    table(['recall@10 by category', ...categories], byCategory),
    `hybrid ÷ plain BM25, recall@10: ${fmtRatio(r.aims[0]!.ratio)} (aim >= 1.2: ${r.aims[0]!.met ? 'met' : 'NOT met'})`,
  ].join('\n');
}

await runIfMain(import.meta.url, runRetrieval, formatRetrieval);
