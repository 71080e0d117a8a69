/**
 * LETHE_TOKENS, `role=token,role=token`: the tokens the service accepts, and the ones the
 * CLI, the clients and the examples call it with. No dependency: the client ships it.
 */
export const ROLES = ['writer', 'backup', 'eraser', 'approver', 'admin'] as const;
export type Role = (typeof ROLES)[number];

/** The pairs, or the first problem with them (never a token in it). */
export function parseTokenPairs(raw: string): { pairs: Array<{ role: Role; token: string }> } | { problem: string } {
  const pairs: Array<{ role: Role; token: string }> = [];
  for (const part of raw
    .split(',')
    .map((p) => p.trim())
    .filter((p) => p.length > 0)) {
    const eq = part.indexOf('=');
    const role = part.slice(0, eq);
    const token = part.slice(eq + 1);
    if (eq <= 0 || !(ROLES as readonly string[]).includes(role)) return { problem: `each entry must be role=token with role one of ${ROLES.join(', ')}` };
    if (token.length < 8) return { problem: `the ${role} token must be at least 8 characters` };
    pairs.push({ role: role as Role, token });
  }
  return { pairs };
}
