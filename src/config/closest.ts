/** The known name a mistyped one most likely meant ("did you mean …?"), for commands and variables alike. */
import { distance } from 'fastest-levenshtein';

/**
 * A candidate the word starts, or that starts it (`LETHE_LEASE_TTL` → `LETHE_LEASE_TTL_SECONDS`),
 * else the nearest by edit distance: at most 2, or a third of the word's length; undefined when none is near.
 */
export function closest(word: string, candidates: readonly string[]): string | undefined {
  const upper = word.toUpperCase();
  const prefixed = candidates
    .filter((c) => c.length > 3 && word.length > 3 && (c.toUpperCase().startsWith(upper) || upper.startsWith(c.toUpperCase())))
    .sort((a, b) => Math.abs(a.length - word.length) - Math.abs(b.length - word.length))[0];
  if (prefixed) return prefixed;
  let best: string | undefined;
  let bestDistance = Math.max(2, Math.floor(word.length / 3)) + 1;
  for (const c of candidates) {
    const d = distance(upper, c.toUpperCase());
    if (d < bestDistance) {
      best = c;
      bestDistance = d;
    }
  }
  return best;
}
