/**
 * Which methods a path answers: for a request no route matched, the methods the
 * registered routes of that path accept, so the app can answer 405 with an `Allow`
 * header instead of 404. Built from the app's route table on first use (every route
 * is registered by then).
 */

interface RouteEntry {
  readonly method: string;
  readonly path: string;
}

interface PathMethods {
  readonly pattern: RegExp;
  readonly methods: Set<string>;
}

const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** A Hono route path (`/v1/subjects/:subject/key`) as a regular expression over request paths. */
function toPattern(path: string): RegExp {
  const segments = path.split('/').map((segment) => {
    if (segment.startsWith(':')) return '[^/]+';
    if (segment === '*') return '.*';
    return escapeRegExp(segment);
  });
  return new RegExp(`^${segments.join('/')}$`);
}

/** `allowed(path)`: the methods of the routes that match `path` (HEAD with GET), sorted; empty when none do. */
export function allowedMethods(routes: () => readonly RouteEntry[]): (path: string) => string[] {
  let table: PathMethods[] | undefined;
  const build = (): PathMethods[] => {
    const byPath = new Map<string, Set<string>>();
    for (const r of routes()) {
      if (r.method === 'ALL' || r.path.includes('*')) continue; // middleware
      const methods = byPath.get(r.path) ?? new Set<string>();
      methods.add(r.method.toUpperCase());
      if (r.method.toUpperCase() === 'GET') methods.add('HEAD');
      byPath.set(r.path, methods);
    }
    return [...byPath].map(([path, methods]) => ({ pattern: toPattern(path), methods }));
  };
  return (path) => {
    table ??= build();
    const allowed = new Set<string>();
    for (const { pattern, methods } of table) if (pattern.test(path)) for (const m of methods) allowed.add(m);
    return [...allowed].sort();
  };
}
