/**
 * Lints lethe's OpenAPI document (what GET /openapi.json answers) with Redocly's
 * recommended rules, without a database or a server: the app is built over services
 * that are never called, since building the document only reads the route definitions.
 * Offline: Redocly's telemetry and update check are off and no config is fetched.
 * Exits non-zero when Redocly reports an error (warnings are printed, not fatal).
 *
 * Usage: npm run lint:openapi            (tsx infra/openapi-lint.ts)
 *        tsx infra/openapi-lint.ts --write <out.json>   (only write the document)
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createHttpApp } from '../src/http/app.js';
import { TokenStore } from '../src/http/auth.js';
import type { Services } from '../src/http/services.js';
import { createLogger } from '../src/observability/logger.js';
import { createMetrics } from '../src/observability/metrics.js';

const base = { metrics: createMetrics(), logger: createLogger('silent'), config: { bodyLimitBytes: 1 } };
// Any other service touched while the document is built is a mistake here: say which.
const services = new Proxy(base, {
  get(target, name) {
    if (name in target) return target[name as keyof typeof target];
    throw new Error(`building the OpenAPI document touched services.${String(name)}`);
  },
}) as unknown as Services;
const app = createHttpApp({ services, tokens: TokenStore.fromPairs([]) });
const res = await app.request('/openapi.json');
if (res.status !== 200) throw new Error(`GET /openapi.json answered ${res.status}: ${await res.text()}`);
const document = JSON.stringify(await res.json(), null, 2);

if (process.argv[2] === '--write') {
  const out = process.argv[3];
  if (!out) throw new Error('usage: tsx infra/openapi-lint.ts --write <out.json>');
  writeFileSync(out, document);
} else {
  const dir = mkdtempSync(join(tmpdir(), 'lethe-openapi-'));
  try {
    const file = join(dir, 'openapi.json');
    writeFileSync(file, document);
    const run = spawnSync('npx', ['--no-install', 'redocly', 'lint', file, '--format=stylish'], {
      stdio: 'inherit',
      env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
    });
    process.exitCode = run.status ?? 1;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
