/**
 * The API reference at /docs works offline: its page, script and stylesheet come from
 * lethe's own origin (swagger-ui-dist, installed), under a strict Content-Security-
 * Policy; asset names outside a fixed table are 404, so no path reaches the disk. Then
 * headless Chromium renders it with every request to another host refused, and the
 * operations list must appear. And the OpenAPI document names every operation
 * (operationId, unique) and its server.
 */
import type { AddressInfo } from 'node:net';
import { serve, type ServerType } from '@hono/node-server';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DOCS_CSP } from '../../src/http/docs.js';
import { launchChromium } from '../support/chromium.js';
import { expectProblem } from '../support/http.js';
import { minioEnv, openTestApp, type TestApp } from '../support/vault.js';

let t: TestApp;
let server: ServerType;
let baseUrl = '';

beforeAll(async () => {
  t = await openTestApp({ extraEnv: minioEnv('lethe-docs'), app: { erasureWorker: false } });
  await new Promise<void>((resolve) => {
    server = serve({ fetch: t.http.fetch, hostname: '127.0.0.1', port: 0 }, () => resolve());
  });
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  if (server) await new Promise((r) => server.close(r));
  await t?.close();
});

describe('GET /docs', () => {
  it('answers HTML under the strict policy, referencing only same-origin URLs', async () => {
    const res = await t.call('GET', '/docs', { role: 'none' });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    const csp = res.headers.get('content-security-policy') ?? '';
    expect(csp).toBe(DOCS_CSP);
    for (const directive of [
      "script-src 'self'",
      "style-src 'self'",
      "connect-src 'self'",
      "img-src 'self' data:",
      "frame-ancestors 'none'",
      "default-src 'none'",
    ]) {
      expect(csp.split('; '), directive).toContain(directive);
    }
    expect(csp).not.toContain('unsafe-inline');
    expect(csp).not.toContain('unsafe-eval');
    const html = await res.text();
    expect(html).not.toMatch(/(https?:)?\/\/[a-z0-9]/i);
    // no inline script: every <script> has a src, and the srcs and the stylesheet are lethe's
    const scripts = [...html.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/gi)];
    expect(scripts.length).toBeGreaterThan(0);
    for (const [, attrs, body] of scripts) {
      expect(body!.trim(), 'inline script').toBe('');
      expect(attrs).toMatch(/src="\/docs\/assets\/[a-z.-]+"/);
    }
    const refs = [...html.matchAll(/(?:src|href)="([^"]*)"/g)].map((m) => m[1]!);
    expect(html).toContain('data-url="/openapi.json"');
    expect(refs.sort()).toEqual(['/docs/assets/init.js', '/docs/assets/swagger-ui-bundle.js', '/docs/assets/swagger-ui.css']);
  });

  it('serves the assets with their content types, under the same policy', async () => {
    for (const [name, type] of [
      ['swagger-ui-bundle.js', /^text\/javascript/],
      ['init.js', /^text\/javascript/],
      ['swagger-ui.css', /^text\/css/],
    ] as const) {
      const res = await t.call('GET', `/docs/assets/${name}`, { role: 'none' });
      expect(res.status, name).toBe(200);
      expect(res.headers.get('content-type'), name).toMatch(type);
      expect(res.headers.get('x-content-type-options'), name).toBe('nosniff');
      expect(res.headers.get('content-security-policy'), name).toBe(DOCS_CSP);
      const body = await res.text();
      expect(body.length, name).toBeGreaterThan(name === 'init.js' ? 50 : 10_000);
    }
    const init = await (await t.call('GET', '/docs/assets/init.js', { role: 'none' })).text();
    expect(init).toContain("getElementById('swagger-ui').dataset.url");
    expect(init).toContain('validatorUrl: null');
  });

  it('answers 404 for an asset it does not serve, and never walks a path', async () => {
    for (const p of [
      '/docs/assets/index.html',
      '/docs/assets/package.json',
      '/docs/assets/swagger-ui-bundle.js.map',
      '/docs/assets/..%2Fpackage.json',
      '/docs/assets/..%2F..%2F..%2Fpackage.json',
      '/docs/assets/%2e%2e%2f%2e%2e%2fsrc%2fhttp%2fapp.ts',
      '/docs/assets/../../package.json',
      '/docs/assets/swagger-ui.css/..',
      '/docs/assets/sub/init.js',
    ]) {
      const res = await fetch(`${baseUrl}${p}`);
      expect([400, 404], p).toContain(res.status);
      const text = await res.text();
      expect(text, p).not.toContain('"name": "lethe"');
      expect(text, p).not.toContain('swagger-ui-dist');
    }
    await expectProblem(t.call('GET', '/docs/assets/nope.js', { role: 'none' }), 404, 'not_found');
  });
});

describe('the OpenAPI document', () => {
  it('gives every operation a unique camelCase operationId, and names its server', async () => {
    const doc = (await (await t.call('GET', '/openapi.json', { role: 'none' })).json()) as {
      servers?: unknown;
      paths: Record<string, Record<string, { operationId?: string }>>;
    };
    expect(doc.servers).toEqual([{ url: '/' }]);
    const ids: string[] = [];
    for (const [path, ops] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(ops)) {
        if (!['get', 'put', 'post', 'delete', 'patch'].includes(method)) continue;
        expect(op.operationId, `${method} ${path}`).toMatch(/^[a-z]+[A-Za-z]*$/);
        ids.push(op.operationId!);
      }
    }
    expect(ids.length).toBeGreaterThan(20);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids).toContain('listEntries'); // the names themselves: test/http/operation-ids.test.ts
  });
});

describe('/docs in headless Chromium, offline', () => {
  let browser: Browser | undefined;
  afterAll(async () => {
    await browser?.close();
  });

  it('renders the operations list from lethe alone, with no policy violation', async () => {
    browser = await launchChromium('The /docs browser test');
    const page = await (await browser.newContext()).newPage();
    const origin = new URL(baseUrl).origin;
    const foreign: string[] = [];
    const requested: string[] = [];
    const errors: string[] = [];
    page.on('console', (m) => {
      if (m.type() === 'error' || /Content Security Policy/i.test(m.text())) errors.push(m.text());
    });
    page.on('pageerror', (e) => errors.push(e.message));
    await page.route('**/*', (route) => {
      const url = route.request().url();
      requested.push(url);
      if (new URL(url).origin !== origin) {
        foreign.push(url);
        return route.abort();
      }
      return route.continue();
    });
    await page.goto(`${baseUrl}/docs`, { waitUntil: 'load' });
    await page.waitForSelector('.opblock', { timeout: 30_000 });
    const count = await page.locator('.opblock').count();
    expect(count).toBeGreaterThan(20);
    await expect(page.locator('.opblock-summary-path').first().textContent()).resolves.toMatch(/^\//);
    // opening an operation renders its schemas and examples: still nothing from elsewhere, no violation
    await page.locator('.opblock-summary').first().click();
    await page.waitForSelector('.opblock-body', { timeout: 10_000 });
    expect(foreign).toEqual([]);
    expect(requested).toContain(`${origin}/openapi.json`);
    expect(requested).toContain(`${origin}/docs/assets/swagger-ui-bundle.js`);
    expect(errors).toEqual([]);
  }, 90_000);
});
