/**
 * The architecture rules, as data. `check.ts` enforces them; edit them here.
 *
 * A module is a top-level folder of src/ (src/vault/keys.ts is in `vault`) or one of
 * the root files src/errors.ts, src/ids.ts, src/erasable.ts and src/concurrency.ts (modules
 * `errors`, `ids`, `erasable` and `concurrency`). A module
 * may always import itself, npm packages and `node:` built-ins; anything else must be
 * listed below. A folder (or root file) missing from this table is itself a
 * violation: a new module has to be placed before it can be used.
 *
 * Which module owns which table is not here: it is parsed from src/db/README.md, so
 * the README and the check cannot disagree.
 */

export interface ModuleRule {
  /** The modules this one may import, or every module but the listed ones. */
  readonly imports: readonly string[] | { readonly allExcept: readonly string[] };
  /** Single files it may import from modules not in `imports` (repo-relative paths). */
  readonly files?: readonly string[];
}

export const MODULES: Readonly<Record<string, ModuleRule>> = {
  errors: { imports: [] },
  concurrency: { imports: [] },
  ids: { imports: ['crypto', 'errors'] },
  // the erasable port (src/erasable.ts): what each module answers to an erasure; pure types
  erasable: { imports: [] },
  crypto: { imports: ['errors'] },
  config: { imports: ['errors'] },
  observability: { imports: [] },
  db: { imports: ['errors'] },
  storage: { imports: ['errors', 'observability'] },
  keyprovider: { imports: ['crypto', 'errors', 'config'] },
  vault: { imports: ['erasable', 'crypto', 'db', 'errors', 'ids', 'keyprovider', 'observability', 'config'] },
  vectors: { imports: ['erasable', 'vault', 'crypto', 'db', 'errors', 'ids', 'observability'] },
  log: { imports: ['erasable', 'vectors', 'vault', 'storage', 'crypto', 'db', 'errors', 'ids', 'observability', 'concurrency'] },
  artifacts: { imports: ['erasable', 'log', 'vectors', 'vault', 'storage', 'crypto', 'db', 'errors', 'ids', 'observability', 'concurrency'] },
  search: { imports: ['artifacts', 'log', 'vectors', 'vault', 'crypto', 'errors', 'ids', 'observability'] },
  backups: {
    imports: ['erasable', 'artifacts', 'log', 'vectors', 'vault', 'storage', 'keyprovider', 'crypto', 'db', 'errors', 'ids', 'observability', 'config'],
  },
  erasure: {
    imports: [
      'erasable',
      'backups',
      'search',
      'artifacts',
      'log',
      'vectors',
      'vault',
      'storage',
      'keyprovider',
      'crypto',
      'db',
      'errors',
      'ids',
      'observability',
      'config',
      'concurrency',
    ],
  },
  // What crosses HTTP, declared once (plain zod schemas): routes, the client and the CLI import it.
  wire: { imports: ['ids', 'errors'], files: ['src/erasure/view.ts', 'src/erasure/machine.ts', 'src/erasure/request.ts', 'src/log/payload.ts'] },
  // Routes never touch the database (no db), and nothing below the composition root
  // imports it (no app, client, cli).
  http: {
    imports: [
      'erasure',
      'backups',
      'search',
      'artifacts',
      'log',
      'vectors',
      'vault',
      'storage',
      'keyprovider',
      'crypto',
      'errors',
      'ids',
      'config',
      'observability',
      'wire',
    ],
  },
  // The composition root: it wires everything; only cli imports it.
  app: { imports: { allExcept: ['cli', 'client'] } },
  // The client ships to writers: it shares the frame format, the erasure request and
  // view types, the wire types and the LETHE_TOKENS format with the server, nothing else.
  client: {
    imports: ['crypto', 'errors', 'ids', 'storage', 'wire'],
    files: [
      'src/config/token-pairs.ts',
      'src/log/frame.ts',
      'src/log/payload.ts',
      'src/log/segment.ts',
      'src/erasure/request.ts',
      'src/erasure/view.ts',
      'src/erasure/machine.ts',
    ],
  },
  // The MCP server is a client of the running service: the client, and of erasure only the request the client shares (its bounds).
  mcp: { imports: ['client', 'errors', 'ids'], files: ['src/erasure/request.ts', 'src/concurrency.ts'] },
  cli: { imports: { allExcept: ['db'] } },
};

/**
 * Files allowed to write a table their module does not own. Each entry needs a reason
 * a reviewer can check; prefer calling the owner's service instead.
 *
 * Example:
 *   'src/backups/service.ts': { tables: ['audit_log'], reason: 'restore replays the audit chain verbatim' },
 */
export const WRITE_EXCEPTIONS: Readonly<Record<string, { readonly tables: readonly string[]; readonly reason: string }>> = {};

/**
 * Today's offenders of the shape rules (test/architecture/shape.ts): files over 400 lines,
 * functions over 120 lines (`file#name`), and import cycles, type imports included (each as the files
 * it joins). They are reported as warnings; any offender not listed is a violation.
 * Take an entry off when its file shrinks; an empty list makes the rule strict.
 */
export const ALLOWED_LONG_FILES: readonly string[] = [];
export const ALLOWED_LONG_FUNCTIONS: readonly string[] = [];
export const ALLOWED_CYCLES: readonly (readonly string[])[] = [];
