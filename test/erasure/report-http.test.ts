/**
 * The report a DPO signs, end to end on PostgreSQL: an erasure requested with its
 * context (reason category, legal basis, controller, reference) goes incomplete (another
 * subject's note carries the content), is redacted, and completes. Its view and its
 * signed certificate carry the context; its report's first page states it with dates in
 * words, keeps both outcomes in order, and its timeline is in time order. A shareable
 * link opens the report without a token until it expires, and opens nothing else.
 * Chromium opens the link over a real HTTP server: a screenshot of the first page and
 * a PDF print go to test-artifacts/.
 */
import { mkdirSync, statSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { serve, type ServerType } from '@hono/node-server';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyCertificate } from '../../src/crypto/certificate.js';
import { queryRows } from '../../src/db/client.js';
import { launchChromium } from '../support/chromium.js';
import { expectProblem, ok } from '../support/http.js';
import { runCli } from '../support/process.js';
import { type CallOptions, openTestApp, type TestApp, TOKENS } from '../support/vault.js';

const tag = () => randomBytes(5).toString('hex');
const ARTIFACTS = path.resolve(import.meta.dirname, '../../test-artifacts');
/** A4 at 96 CSS pixels per inch. */
const A4 = { width: 794, height: 1123 };

const CONTEXT = {
  reasonCategory: 'withdrawn-consent',
  legalBasis: 'GDPR Art. 17(1)(b)',
  controller: 'Acme Analytics GmbH',
  reference: 'DSR-2026-0042',
} as const;

interface View {
  erasureId: string;
  status: string;
  request?: typeof CONTEXT;
  certificate?: { payload: Record<string, unknown>; signature: string; publicKey: string; algorithm: string };
}
interface Link {
  url: string;
  path: string;
  expiresAt: string;
}

let t: TestApp;
/** The erasure that went incomplete, was redacted and completed. */
let redacted: View;
/** Another finished erasure (for a link used on the wrong erasure). */
let other: View;

const call = (method: string, p: string, o: CallOptions = {}) => t.call(method, p, { role: 'eraser', ...o });

/** The test app on a real HTTP server on a free loopback port. */
async function listen(): Promise<{ base: string; close: () => Promise<void> }> {
  const server: ServerType = await new Promise((resolve) => {
    const s = serve({ fetch: t.http.fetch, hostname: '127.0.0.1', port: 0 }, () => resolve(s));
  });
  const { port } = server.address() as AddressInfo;
  return { base: `http://127.0.0.1:${port}`, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

async function append(subject: string, text: string): Promise<string> {
  return (await t.app.log.append(subject, { text }, 'writer')).entryId;
}

beforeAll(async () => {
  t = await openTestApp({ app: { erasureWorker: false } });
  const A = `user:dpo-a-${tag()}`;
  const B = `user:dpo-b-${tag()}`;
  const num = `${Math.floor(Math.random() * 900) + 100}`;
  await append(A, `My home address is ${num} Rue des Lilas, Lyon; I moved there in March.`);
  const note = await append(B, `Dropped the parcel at Alice's place, ${num} rue des Lilas in Lyon, she moved there in March.`);
  await append(B, 'Bob ordered new running shoes.');
  const accepted = await ok<{ erasureId: string }>(call('POST', '/v1/erasures', { body: { subject: A, publicAttributes: ['Alice'], request: CONTEXT } }), 202);
  const first = await t.app.erasures.settle(accepted.erasureId);
  expect(first.status).toBe('incomplete');
  await ok(call('POST', `/v1/erasures/${accepted.erasureId}/redactions`, { body: { ids: [note] } }), 202);
  expect((await t.app.erasures.settle(accepted.erasureId)).status).toBe('completed');
  redacted = await ok<View>(call('GET', `/v1/erasures/${accepted.erasureId}`), 200);

  const C = `user:dpo-c-${tag()}`;
  await append(C, 'Carol keeps bees.');
  const second = await ok<{ erasureId: string }>(call('POST', '/v1/erasures', { body: { subject: C } }), 202);
  await t.app.erasures.settle(second.erasureId);
  other = await ok<View>(call('GET', `/v1/erasures/${second.erasureId}`), 200);
}, 120_000);

afterAll(async () => {
  await t?.close();
});

describe('the request context', () => {
  it('is in the erasure view and signed into its certificate, which verifies against the vault keys', async () => {
    expect(redacted.request).toEqual(CONTEXT);
    expect(redacted.certificate?.payload.request).toEqual(CONTEXT);
    const { keys } = await ok<{ keys: Array<{ publicKey: string }> }>(t.call('GET', '/v1/certificates/keys', { role: 'none' }), 200);
    expect(
      verifyCertificate(
        redacted.certificate,
        keys.map((k) => k.publicKey),
      ),
    ).toMatchObject({ valid: true });
    // an erasure requested without one has neither
    expect(other.request).toBeUndefined();
    expect(other.certificate?.payload).not.toHaveProperty('request');
  });

  it('is refused with a 400 naming the field when malformed, personal, too long or unknown, and nothing is created', async () => {
    const [before] = await queryRows<{ n: number }>(t.app.db.db, sql`select count(*)::int as n from erasures`);
    const subject = `user:dpo-bad-${tag()}`;
    await append(subject, 'Dan likes jazz.');
    const cases: Array<[string, unknown, RegExp]> = [
      ['an unknown category', { ...CONTEXT, reasonCategory: 'because' }, /body\.request\.reasonCategory: must be one of withdrawn-consent/],
      ['the subject id in the reference', { ...CONTEXT, reference: `ticket for ${subject}` }, /body\.request\.reference: must not be personal data/],
      ['a reference too long', { ...CONTEXT, reference: 'R'.repeat(101) }, /body\.request\.reference: 1 to 100 characters/],
      ['a controller with a line break', { ...CONTEXT, controller: 'Acme\nInc' }, /body\.request\.controller: one line of text/],
      ['an empty legal basis', { ...CONTEXT, legalBasis: '  ' }, /body\.request\.legalBasis: 1 to 200 characters/],
      ['a missing controller', { reasonCategory: 'other', legalBasis: 'x', reference: 'r' }, /body\.request\.controller/],
      ['an unknown field', { ...CONTEXT, name: 'Dan' }, /body\.request/],
    ];
    for (const [what, request, detail] of cases) {
      const reply = await expectProblem(call('POST', '/v1/erasures', { body: { subject, request } }), 400, 'validation_failed', what);
      expect(reply.detail, what).toMatch(detail);
    }
    const [after] = await queryRows<{ n: number }>(t.app.db.db, sql`select count(*)::int as n from erasures`);
    expect(after!.n).toBe(before!.n);
  });
});

describe('lethe erase with the request context', () => {
  it('sends all four flags as the request context, refuses some without the others or a bad category (exit 2, nothing sent)', async () => {
    const server = await listen();
    try {
      const env = { LETHE_URL: server.base, LETHE_TOKENS: `eraser=${TOKENS.eraser}`, LETHE_LOG_LEVEL: 'silent' };
      const subject = `user:dpo-cli-${tag()}`;
      await append(subject, 'Erin plays the cello.');
      const flags = ['--reason-category', 'objection', '--legal-basis', 'GDPR Art. 21(1)', '--controller', 'Acme Analytics GmbH', '--reference', 'DSR-7'];
      const bad = await runCli(['erase', subject, ...flags.slice(0, 4), '--no-wait'], env, { timeoutMs: 60_000 });
      expect(bad.code, bad.stderr).toBe(2);
      expect(bad.stderr).toContain('--reason-category, --legal-basis, --controller, --reference go together');
      const wrong = await runCli(['erase', subject, '--reason-category', 'whim', ...flags.slice(2), '--no-wait'], env, { timeoutMs: 60_000 });
      expect(wrong.code, wrong.stderr).toBe(2);
      expect(wrong.stderr).toContain('--reason-category must be one of withdrawn-consent');
      const run = await runCli(['erase', subject, ...flags, '--no-wait', '--json'], env, { timeoutMs: 60_000 });
      expect(run.code, run.stderr).toBe(0);
      const { erasureId } = JSON.parse(run.stdout) as { erasureId: string };
      const view = await ok<View>(call('GET', `/v1/erasures/${erasureId}`), 200);
      expect(view.request).toEqual({ reasonCategory: 'objection', legalBasis: 'GDPR Art. 21(1)', controller: 'Acme Analytics GmbH', reference: 'DSR-7' });
      await t.app.erasures.settle(erasureId);
    } finally {
      await server.close();
    }
  }, 120_000);
});

describe('the report', () => {
  let html = '';
  beforeAll(async () => {
    const res = await call('GET', `/v1/erasures/${redacted.erasureId}/report`);
    html = await res.text();
    expect(res.status, html).toBe(200);
    expect(res.headers.get('content-security-policy')).toMatch(
      /^default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'/,
    );
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(res.headers.get('referrer-policy')).toBe('no-referrer');
  });

  it("page one states the request's context and what was erased, by keyed hash", () => {
    const one = /<section id="page-one">([\s\S]*?)<\/section>/.exec(html)![1]!;
    expect(one).toContain('The person withdrew the consent the processing rested on');
    for (const v of [CONTEXT.legalBasis, CONTEXT.controller, CONTEXT.reference]) expect(one).toContain(v);
    expect(one).toMatch(/All data of the person with keyed hash <code class="hash">[0-9a-f]{64}<\/code>/);
    expect(one).toMatch(/Completed, <time datetime="[^"]+">\d{1,2} [A-Z][a-z]+ \d{4}, \d{2}:\d{2} UTC<\/time>/);
  });

  it('keeps the outcome history: incomplete, then the redaction, then completed, in time order', () => {
    const items = [...html.matchAll(/<li data-kind="([a-z-]+)"(?: data-status="([a-z]+)")?><time datetime="([^"]+)">/g)].map((m) => ({
      kind: m[1],
      status: m[2],
      at: Date.parse(m[3]!),
    }));
    expect(items.map((i) => `${i.kind}:${i.status}`)).toEqual(['outcome:incomplete', 'reopened:running', 'outcome:completed']);
    expect(items.map((i) => i.at)).toEqual([...items.map((i) => i.at)].sort((a, b) => a - b));
    expect(html).toContain('Re-opened: redaction of 1 record(s) ordered by eraser');
  });

  it('lists every transition in the timeline, in time order, both outcomes included', async () => {
    const rows = [...html.matchAll(/<tr data-kind="([a-z-]+)" data-at="([^"]+)"/g)].map((m) => ({ kind: m[1]!, at: Date.parse(m[2]!) }));
    const transitions = await t.app.erasures.allTransitions(redacted.erasureId);
    expect(rows).toHaveLength(transitions.length);
    expect(rows.map((r) => r.at)).toEqual([...rows.map((r) => r.at)].sort((a, b) => a - b));
    expect(rows.filter((r) => r.kind === 'outcome')).toHaveLength(2);
    // the redaction step ran before the certify step that followed it
    const redact = html.indexOf('Step redact done');
    const lastOutcome = html.lastIndexOf('Finished completed; certificate signed');
    expect(redact).toBeGreaterThan(0);
    expect(redact).toBeLessThan(lastOutcome);
  });
});

describe('report links', () => {
  let link: Link;
  beforeAll(async () => {
    link = await ok<Link>(call('POST', `/v1/erasures/${redacted.erasureId}/report-link`, { body: {} }), 201);
  });

  it('last 7 days by default, as asked up to 30 days, and are audited without the signature', async () => {
    expect(Date.parse(link.expiresAt) - Date.now()).toBeGreaterThan(7 * 86400_000 - 60_000);
    expect(Date.parse(link.expiresAt) - Date.now()).toBeLessThanOrEqual(7 * 86400_000);
    expect(link.path).toMatch(new RegExp(`^/v1/erasures/${redacted.erasureId}/report\\?exp=\\d+&sig=[A-Za-z0-9_-]{43}$`));
    expect(link.url.endsWith(link.path)).toBe(true);
    const short = await ok<Link>(call('POST', `/v1/erasures/${redacted.erasureId}/report-link`, { body: { expiresInSeconds: 120 } }), 201);
    expect(Math.abs(Date.parse(short.expiresAt) - Date.now() - 120_000)).toBeLessThan(5_000);
    // no body at all: the default
    expect((await call('POST', `/v1/erasures/${redacted.erasureId}/report-link`)).status).toBe(201);
    const rows = await queryRows<{ actor: string; detail: string }>(
      t.app.db.db,
      sql`select actor, detail from audit_log where action = 'erasure.report.link' order by seq`,
    );
    expect(rows.length).toBe(3);
    expect(rows[0]!.actor).toBe('eraser');
    expect(JSON.parse(rows[0]!.detail)).toEqual({ erasureId: redacted.erasureId, expiresAt: link.expiresAt });
    const sig = new URL(link.url).searchParams.get('sig')!;
    expect(JSON.stringify(rows)).not.toContain(sig);
  });

  it('are refused past 30 days, under a minute, to the writer role, and for an unknown erasure', async () => {
    const p = `/v1/erasures/${redacted.erasureId}/report-link`;
    await expectProblem(call('POST', p, { body: { expiresInSeconds: 30 * 86400 + 1 } }), 400, 'validation_failed');
    await expectProblem(call('POST', p, { body: { expiresInSeconds: 59 } }), 400, 'validation_failed');
    await expectProblem(call('POST', p, { body: { expiresInSeconds: 1.5 } }), 400, 'validation_failed');
    await expectProblem(call('POST', p, { body: { ttl: 5 } }), 400, 'validation_failed');
    await expectProblem(call('POST', p, { role: 'writer', body: {} }), 403, 'forbidden');
    await expectProblem(call('POST', p, { role: 'none', body: {} }), 401, 'unauthorized');
    await expectProblem(call('POST', `/v1/erasures/ers_${'A'.repeat(22)}/report-link`, { body: {} }), 404, 'not_found');
  });

  it('open the report without a token, with no-referrer, no-store and the strict CSP', async () => {
    const res = await t.call('GET', link.path, { role: 'none' });
    const text = await res.text();
    expect(res.status, text).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    expect(res.headers.get('referrer-policy')).toBe('no-referrer');
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(res.headers.get('content-security-policy')).toMatch(/default-src 'none'/);
    expect(text).toContain(redacted.erasureId);
    expect(text).toContain(CONTEXT.reference);
  });

  it('are refused (403 problem+json) when tampered, expired, or used on another erasure', async () => {
    const u = new URL(link.url);
    const exp = u.searchParams.get('exp')!;
    const sig = u.searchParams.get('sig')!;
    const flipped = `${sig.slice(0, 10)}${sig[10] === 'A' ? 'B' : 'A'}${sig.slice(11)}`;
    const report = (id: string, q: string) => `/v1/erasures/${id}/report?${q}`;
    const cases: Array<[string, string, RegExp]> = [
      ['a tampered signature', report(redacted.erasureId, `exp=${exp}&sig=${flipped}`), /not valid/],
      ['a later expiry', report(redacted.erasureId, `exp=${Number(exp) + 1}&sig=${sig}`), /not valid/],
      ["erasure A's link on erasure B", report(other.erasureId, `exp=${exp}&sig=${sig}`), /not valid/],
      ['a signature without its expiry', report(redacted.erasureId, `sig=${sig}`), /needs both/],
      ['a truncated signature', report(redacted.erasureId, `exp=${exp}&sig=${sig.slice(0, 20)}`), /needs both/],
    ];
    const expired = await t.app.reportLinks.issue(redacted.erasureId, 60, 'eraser', new Date(Date.now() - 3600_000));
    cases.push(['an expired link', expired.path, /expired/]);
    for (const [what, p, detail] of cases) {
      const res = await t.call('GET', p, { role: 'none' });
      expect(res.headers.get('cache-control'), what).toBe('no-store');
      const reply = await expectProblem(res, 403, 'forbidden', what);
      expect(reply.detail, what).toMatch(detail);
    }
  });

  it('open nothing but the report: the same query on other erasure routes is 401', async () => {
    const q = new URL(link.url).search;
    for (const suffix of ['', '/certificate', '/events', '/report-link']) {
      const method = suffix === '/report-link' ? 'POST' : 'GET';
      await expectProblem(t.call(method, `/v1/erasures/${redacted.erasureId}${suffix}${q}`, { role: 'none' }), 401, 'unauthorized', suffix || 'the view');
    }
    await expectProblem(t.call('GET', `/v1/erasures${q}`, { role: 'none' }), 401, 'unauthorized');
  });
});

describe('the report in Chromium, opened with its link', () => {
  it('renders offline: a screenshot of the first page and an A4 PDF print go to test-artifacts/', async () => {
    const server = await listen();
    const browser = await launchChromium("The DPO report's print test");
    try {
      const link = await ok<Link>(call('POST', `/v1/erasures/${redacted.erasureId}/report-link`, { body: { expiresInSeconds: 600 } }), 201);
      const url = `${server.base}${link.path}`;
      const context = await browser.newContext({ viewport: A4, deviceScaleFactor: 1 });
      const page = await context.newPage();
      const requests: string[] = [];
      const errors: string[] = [];
      page.on('console', (m) => {
        if (m.type() === 'error') errors.push(m.text());
      });
      page.on('pageerror', (e) => errors.push(e.message));
      page.on('request', (r) => requests.push(r.url()));
      const res = await page.goto(url, { waitUntil: 'load' });
      expect(res?.status()).toBe(200);
      expect(await page.title()).toBe(`Erasure report ${redacted.erasureId}`);
      // the page loaded nothing but itself (no token was sent: the link alone opened it)
      expect(requests).toEqual([url]);
      expect(errors).toEqual([]);
      expect(await page.locator('#request-reference').innerText()).toBe(CONTEXT.reference);

      mkdirSync(ARTIFACTS, { recursive: true });
      const shot = await page.screenshot({ path: path.join(ARTIFACTS, 'erasure-report-page1.png') });
      expect(shot.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))).toBe(true);
      expect(shot.toString('latin1', 12, 16)).toBe('IHDR');
      expect({ width: shot.readUInt32BE(16), height: shot.readUInt32BE(20) }).toEqual(A4);
      expect(shot.length).toBeGreaterThan(20_000);

      // printed: page one fits on one A4 page (297 mm less 2 × 16 mm margins, at 96 px per inch)
      await page.emulateMedia({ media: 'print' });
      const printable = ((297 - 32) / 25.4) * 96;
      const pageOne = await page.locator('#page-one').boundingBox();
      expect(pageOne!.height).toBeLessThan(printable);
      expect(await page.locator('nav.toc').isVisible()).toBe(false);
      const pdf = await page.pdf({ format: 'A4', printBackground: true, preferCSSPageSize: true });
      writeFileSync(path.join(ARTIFACTS, 'erasure-report.pdf'), pdf);
      expect(pdf.toString('latin1', 0, 5)).toBe('%PDF-');
      expect(pdf.length).toBeGreaterThan(20_000);
      // page one, the timeline, the technical detail, the glossary and the appendix each start a page
      const pages = pdf.toString('latin1').match(/\/Type\s*\/Page(?![s\w])/g) ?? [];
      expect(pages.length).toBeGreaterThanOrEqual(5);
      expect(statSync(path.join(ARTIFACTS, 'erasure-report.pdf')).size).toBe(pdf.length);
      await context.close();
    } finally {
      await browser.close();
      await server.close();
    }
  }, 90_000);
});
