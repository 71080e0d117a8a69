/** The probe's thresholds and budgets, and how much a shingle weighs. */

/** Candidates reported as matches score at least this much against some private record. */
export const MATCH_MIN_SCORE = 0.25;

/** Content words in order that make a verbatim run. */
export const RUN_WORDS = 6;

/** Pairs of a shortest verbatim run that must not be common: half of its RUN_WORDS - 1, rounded up. */
export const RUN_MIN_DISTINCT_PAIRS = Math.ceil((RUN_WORDS - 1) / 2);

/** What a verbatim run scores (at least): a quote of the record carries it. */
export const RUN_SCORE = 0.5;

/**
 * A candidate holding at least this share of the distinct shingles of a record of
 * RUN_WORDS content words or more is a near copy of it, whatever the weights say:
 * copying a record into many others does not make it common enough to hide.
 */
export const NEAR_COPY = 0.9;

/**
 * Postings read per private record, its weighted pairs before its words and shortest
 * lists first: a shingle on more lists than the budget left is not looked up (it still weighs in the score of
 * whatever is found). The probe's lexical cost is bounded by records × budget, not by
 * the store.
 */
export const POSTINGS_BUDGET = 256;

/** How much a word's list costs against a pair's of the same length when choosing what to read first. */
export const WORD_LOOKUP_COST = 4;

/**
 * Postings read of one record's rarest shingle when what was read found nothing and
 * a copy could still matter (an all-common record of RUN_WORDS words or more, or one
 * whose weight sits in shingles over the budget): near copies are found through it.
 */
export const FALLBACK_POSTINGS = 16_384;

/** A shingle in more readable records than max(this, COMMON_FRACTION · N) is common and weighs 0. */
export const COMMON_MIN_RECORDS = 20;

export const COMMON_FRACTION = 0.01;

/** Vector neighbours taken per query at least, and at most (the adaptive k's ceiling). */
export const VECTOR_NEIGHBOURS = 8;

export const VECTOR_LIMIT = 256;

/** Fingerprinted records used as nearest-neighbour queries (each a full pass of the vector index). */
export const PROBE_MAX_QUERIES = 128;

/**
 * How much a shingle found in `df` of `n` readable records weighs: its inverse
 * document frequency, counting the erased record among the records (so a shingle
 * found nowhere else weighs ln(n + 2), never 0, even in a store of one record).
 */
export function shingleWeight(df: number, n: number): number {
  if (df > Math.max(COMMON_MIN_RECORDS, COMMON_FRACTION * n)) return 0;
  return Math.log((n + 2) / (df + 1));
}
