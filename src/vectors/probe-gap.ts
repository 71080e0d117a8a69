/**
 * Deletion from a linear-probing table (id-table.ts, posting-table.ts): the hole left
 * at `at` is closed by moving back each later entry of its run whose home does not lie
 * after the hole, so that every lookup still finds its entry without tombstones.
 */
export function closeGap(
  at: number,
  mask: number,
  occupied: (place: number) => boolean,
  homeOf: (place: number) => number,
  move: (from: number, to: number) => void,
): number {
  for (let next = (at + 1) & mask; occupied(next); next = (next + 1) & mask) {
    const home = homeOf(next);
    const stays = at <= next ? at < home && home <= next : at < home || home <= next;
    if (stays) continue;
    move(next, at);
    at = next;
  }
  return at;
}
