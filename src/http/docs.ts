/**
 * The API reference at /docs: Swagger UI served from lethe's own origin, offline.
 *
 * The UI's script and stylesheet come from the pinned `swagger-ui-dist` package,
 * read once when the app is built; the page's init is a served script (no inline
 * script), and every /docs answer carries a Content-Security-Policy that lets the page
 * load from lethe only. Asset names come from a fixed table: anything else is 404, so a
 * path never reaches the file system.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { Context, Hono } from 'hono';
import type { AuthEnv } from './auth.js';
import { problem } from './problem.js';

/**
 * The policy of the reference UI. Swagger UI sets element styles through the DOM
 * (CSSOM), which style-src 'self' allows; it needs no inline <style> or style attribute.
 */
export const DOCS_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

/** What the page runs: the UI, reading the document the page names, with no validator badge (it calls validator.swagger.io). */
const INIT_JS = `window.addEventListener('load', function () {
  window.ui = SwaggerUIBundle({
    url: document.getElementById('swagger-ui').dataset.url,
    dom_id: '#swagger-ui',
    presets: [SwaggerUIBundle.presets.apis],
    layout: 'BaseLayout',
    deepLinking: true,
    validatorUrl: null,
  });
});
`;

const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>lethe API reference</title>
<link rel="stylesheet" href="/docs/assets/swagger-ui.css">
</head>
<body>
<div id="swagger-ui" data-url="/openapi.json"></div>
<script src="/docs/assets/swagger-ui-bundle.js"></script>
<script src="/docs/assets/init.js"></script>
</body>
</html>
`;

interface Asset {
  readonly body: Uint8Array<ArrayBuffer> | string;
  readonly type: string;
}

let cached: ReadonlyMap<string, Asset> | undefined;

/** The served assets by name: read from swagger-ui-dist once per process. */
function assets(): ReadonlyMap<string, Asset> {
  if (cached) return cached;
  const dist = dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
  const read = (name: string): Uint8Array<ArrayBuffer> => new Uint8Array(readFileSync(join(dist, name)));
  cached = new Map<string, Asset>([
    ['swagger-ui-bundle.js', { body: read('swagger-ui-bundle.js'), type: 'text/javascript; charset=utf-8' }],
    ['swagger-ui.css', { body: read('swagger-ui.css'), type: 'text/css; charset=utf-8' }],
    ['init.js', { body: INIT_JS, type: 'text/javascript; charset=utf-8' }],
  ]);
  return cached;
}

function secure(c: Context): void {
  c.header('content-security-policy', DOCS_CSP);
  c.header('x-content-type-options', 'nosniff');
  c.header('referrer-policy', 'no-referrer');
}

/** GET /docs (the page) and GET /docs/assets/{name} (its script, stylesheet and init). */
export function registerDocs(app: Hono<AuthEnv>): void {
  const table = assets();
  app.get('/docs', (c) => {
    secure(c);
    return c.html(PAGE);
  });
  app.get('/docs/assets/:name', (c) => {
    const asset = table.get(c.req.param('name'));
    if (!asset) return problem(c, 'not_found', 'no such documentation asset');
    secure(c);
    c.header('content-type', asset.type);
    c.header('cache-control', 'public, max-age=3600');
    return c.body(asset.body);
  });
}

const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options', 'trace'] as const;

/** A hand-written operationId: a verb and a noun in camelCase (`requestErasure`, `leaseSubjectKey`), as generated clients name their methods. */
export const OPERATION_ID = /^[a-z]+[A-Za-z]*$/;

type Operation = { operationId?: string };

/**
 * The document, checked: every operation names its own operationId (each route file
 * declares one with its route), in camelCase, and no two share one. A route without one,
 * or a clash, throws rather than ship a document a client generator would name badly.
 */
export function withOperationIds<D extends { paths?: Record<string, unknown> }>(doc: D): D {
  const seen = new Map<string, string>();
  for (const [path, item] of Object.entries(doc.paths ?? {})) {
    if (!item || typeof item !== 'object') continue;
    const ops = item as Partial<Record<(typeof METHODS)[number], Operation>>;
    for (const method of METHODS) {
      const op = ops[method];
      if (!op) continue;
      const where = `${method.toUpperCase()} ${path}`;
      if (!op.operationId || !OPERATION_ID.test(op.operationId)) throw new Error(`${where} needs a camelCase operationId (createRoute({ operationId }))`);
      const other = seen.get(op.operationId);
      if (other) throw new Error(`operationId ${op.operationId} names both ${other} and ${where}`);
      seen.set(op.operationId, where);
    }
  }
  return doc;
}
