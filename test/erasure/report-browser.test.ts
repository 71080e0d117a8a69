/**
 * The erasure report as a person sees it: rendered by headless Chromium with every
 * network request refused (and recorded: there must be none), the provenance graph
 * laid out on screen, and a screenshot of it that actually holds the node colours.
 *
 * Chromium is Debian's (`apt-get install -y chromium`, done by .ci/run), or the binary
 * named by LETHE_CHROMIUM. A missing browser fails the suite: it never skips.
 */
import { inflateSync } from 'node:zlib';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NODE_HEIGHT, NODE_STYLES, type NodeStyleName, NODE_WIDTH, renderReport } from '../../src/erasure/report/index.js';
import type { ErasureView, GraphEdge, GraphNode } from '../../src/erasure/view.js';
import { launchChromium } from '../support/chromium.js';

const generatedAt = new Date('2026-12-01T09:00:00.000Z');

const nodes: GraphNode[] = [
  { id: 'entry_Ab12cdEFghIJklMNopQRst', type: 'entry', erasedSubject: true },
  { id: 'entry_Zz98yxWVutSRqpONmlKJih', type: 'entry', erasedSubject: true },
  { id: 'entry_other0000000000000001', type: 'entry', erasedSubject: false },
  { id: 'entry_other0000000000000002', type: 'entry', erasedSubject: false },
  { id: 'art_summary000000000000001', type: 'artifact', kind: 'summary', erasedSubject: false, outcome: 'regenerated' },
  { id: 'art_digest0000000000000001', type: 'artifact', kind: 'digest', erasedSubject: false, outcome: 'regenerated' },
  { id: 'art_fact00000000000000001', type: 'artifact', kind: 'fact', erasedSubject: false, outcome: 'removed' },
  { id: 'art_fact00000000000000002', type: 'artifact', kind: 'fact', erasedSubject: false, outcome: 'unchanged' },
];
const edges: GraphEdge[] = [
  { from: 'entry_Ab12cdEFghIJklMNopQRst', to: 'art_summary000000000000001' },
  { from: 'entry_Zz98yxWVutSRqpONmlKJih', to: 'art_summary000000000000001' },
  { from: 'entry_other0000000000000001', to: 'art_summary000000000000001' },
  { from: 'entry_other0000000000000002', to: 'art_summary000000000000001' },
  { from: 'art_summary000000000000001', to: 'art_digest0000000000000001' },
  { from: 'entry_Ab12cdEFghIJklMNopQRst', to: 'art_fact00000000000000001' },
  { from: 'entry_other0000000000000002', to: 'art_fact00000000000000002' },
];

const classB: ErasureView = {
  erasureId: 'ers_browser00000000000001',
  status: 'completed',
  scope: 'subject',
  class: 'B',
  subjectHash: '9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08',
  legalBasis: 'GDPR Art. 17(1)(a)',
  createdAt: '2026-11-30T12:00:00.000Z',
  finishedAt: '2026-11-30T12:00:09.000Z',
  steps: [
    {
      name: 'classify',
      status: 'done',
      detail: 'class B: 3 artifacts depend on 2 entries',
      startedAt: '2026-11-30T12:00:00.000Z',
      finishedAt: '2026-11-30T12:00:01.000Z',
    },
    { name: 'cascade', status: 'done', detail: '2 regenerated, 1 removed', startedAt: '2026-11-30T12:00:02.000Z', finishedAt: '2026-11-30T12:00:05.000Z' },
  ],
  residuals: [{ tier: 'key-table', kind: 'wrapped-dek', detail: '2 wrapped copies in epoch 7', bound: 2, until: '2026-12-31T00:00:00.000Z' }],
  probe: { recovered: 0.04, threshold: 0.15, matches: [{ id: 'entry_other0000000000000001', tier: 'log', score: 0.42 }] },
  certificate: { payload: { erasureId: 'ers_browser00000000000001', final: false }, signature: 'c2ln', publicKey: 'cHVi', algorithm: 'Ed25519' },
  certificateState: 'provisional',
  graph: { nodes, edges },
};

const PWN = '<script>window.__pwned = 1</script>';
const IMG = '<img src="https://evil.example/x.png" onerror="window.__pwned = 2">';
const hostile: ErasureView = {
  ...classB,
  erasureId: `ers_${PWN}`,
  legalBasis: IMG,
  steps: [{ name: 'destroy', status: 'failed', detail: `${PWN}${IMG}` }],
  residuals: [{ tier: PWN, kind: '"onload="window.__pwned=3', detail: IMG, bound: 'unbounded' }],
  certificate: { payload: { note: PWN, img: IMG }, signature: PWN, publicKey: IMG, algorithm: 'Ed25519' },
  graph: {
    nodes: [
      { id: `entry_${PWN}`, type: 'entry', erasedSubject: true },
      { id: `art_"onload="window.__pwned=4`, type: 'artifact', kind: IMG, erasedSubject: false, outcome: 'regenerated' },
    ],
    edges: [{ from: `entry_${PWN}`, to: `art_"onload="window.__pwned=4` }],
  },
};

/** The little of the DOM the page functions below touch: the project's tsconfig has no DOM lib. */
interface DomPath {
  readonly dataset: { readonly [key: string]: string | undefined };
  getTotalLength(): number;
  getPointAtLength(length: number): { x: number; y: number };
  getScreenCTM(): { a: number; b: number; c: number; d: number; e: number; f: number } | null;
}
interface DomText {
  getComputedTextLength(): number;
}
interface DomWindow {
  __pwned?: number;
  readonly performance: { getEntriesByType(type: string): ArrayLike<unknown> };
  readonly document: {
    querySelectorAll(selector: string): ArrayLike<{ readonly attributes: ArrayLike<{ readonly name: string }> }>;
    readonly body: { readonly innerText: string };
  };
}

let browser: Browser | undefined;
let page: Page | undefined;
/** Every request the page tried to make (all are aborted). */
const requests: string[] = [];
/** Console errors and uncaught page errors (a CSP violation shows here). */
const errors: string[] = [];

/** Why there is no page: each test fails with it (a missing browser is a failure, never a skip). */
let unavailable: Error | undefined;

beforeAll(async () => {
  try {
    browser = await launchChromium("The erasure report's browser test");
  } catch (e) {
    unavailable = e as Error;
    return;
  }
  // One page for the file (a new page costs a renderer start); each test loads about:blank first, so no state carries over.
  const context = await browser.newContext({ viewport: { width: 1280, height: 1000 }, deviceScaleFactor: 1 });
  page = await context.newPage();
  page.on('request', (r) => requests.push(r.url()));
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(m.text());
  });
  page.on('pageerror', (e) => errors.push(e.message));
  await page.route('**/*', (route) => {
    requests.push(route.request().url());
    return route.abort();
  });
}, 60_000);

afterAll(async () => {
  await browser?.close();
});

/** Loads the report into a fresh document with the network refused. */
async function open(html: string): Promise<Page> {
  if (unavailable) throw unavailable;
  if (!page) throw new Error('Chromium did not start');
  await page.goto('about:blank');
  requests.length = 0;
  errors.length = 0;
  await page.setContent(html, { waitUntil: 'load' });
  return page;
}

describe('the erasure report in Chromium', () => {
  it('lays the provenance graph out on screen: every node visible with a box, every edge with a length', async () => {
    const page = await open(renderReport(classB, { generatedAt }));
    const svg = page.locator('svg#provenance-graph');
    const svgBox = await svg.boundingBox();
    expect(svgBox).not.toBeNull();
    expect(svgBox!.width).toBeGreaterThan(100);
    expect(svgBox!.height).toBeGreaterThan(50);

    const drawn = svg.locator('g.node');
    expect(await drawn.count()).toBe(nodes.length);
    const boxes = new Map<string, { x: number; y: number; width: number; height: number }>();
    for (let i = 0; i < nodes.length; i++) {
      const node = drawn.nth(i);
      expect(await node.isVisible()).toBe(true);
      const box = await node.boundingBox();
      const id = await node.getAttribute('data-id');
      expect(box, `node ${id}`).not.toBeNull();
      expect(box!.width).toBeGreaterThan(NODE_WIDTH / 2);
      expect(box!.height).toBeGreaterThan(NODE_HEIGHT / 2);
      expect(box!.x).toBeGreaterThanOrEqual(svgBox!.x - 0.5);
      expect(box!.y).toBeGreaterThanOrEqual(svgBox!.y - 0.5);
      expect(box!.x + box!.width).toBeLessThanOrEqual(svgBox!.x + svgBox!.width + 0.5);
      expect(box!.y + box!.height).toBeLessThanOrEqual(svgBox!.y + svgBox!.height + 0.5);
      boxes.set(id!, box!);
    }
    expect([...boxes.keys()].sort()).toEqual(nodes.map((n) => n.id).sort());

    // Each edge has a length, and on screen it runs from its source's box to its target's.
    const drawnEdges = await page.$$eval('svg#provenance-graph path.edge', (paths) =>
      paths.map((p) => {
        const path = p as unknown as DomPath;
        const length = path.getTotalLength();
        const m = path.getScreenCTM()!;
        const at = (l: number) => {
          const q = path.getPointAtLength(l);
          return { x: m.a * q.x + m.c * q.y + m.e, y: m.b * q.x + m.d * q.y + m.f };
        };
        return { from: path.dataset.from!, to: path.dataset.to!, length, start: at(0), end: at(length) };
      }),
    );
    expect(drawnEdges.map((e) => `${e.from}->${e.to}`).sort()).toEqual(edges.map((e) => `${e.from}->${e.to}`).sort());
    const inside = (p: { x: number; y: number }, b: { x: number; y: number; width: number; height: number }) =>
      p.x >= b.x - 2 && p.x <= b.x + b.width + 2 && p.y >= b.y - 2 && p.y <= b.y + b.height + 2;
    for (const e of drawnEdges) {
      expect(e.length, `${e.from}->${e.to}`).toBeGreaterThan(10);
      expect(inside(e.start, boxes.get(e.from)!), `${e.from}->${e.to} starts at its source`).toBe(true);
      expect(inside(e.end, boxes.get(e.to)!), `${e.from}->${e.to} ends at its target`).toBe(true);
    }

    // The labels are rendered text (fonts found), not empty boxes.
    const textWidths = await page.$$eval('svg#provenance-graph g.node text', (ts) => ts.map((t) => (t as unknown as DomText).getComputedTextLength()));
    expect(textWidths.every((w) => w > 10)).toBe(true);

    expect(requests).toEqual([]);
    expect(errors).toEqual([]);
  });

  it('a screenshot of the graph holds each node colour over most of its nodes', async () => {
    const page = await open(renderReport(classB, { generatedAt }));
    const svg = page.locator('svg#provenance-graph');
    const png = decodePng(await svg.screenshot());
    const viewBoxWidth = Number((await svg.getAttribute('viewBox'))!.split(' ')[2]);
    const scale = png.width / viewBoxWidth;
    expect(scale).toBeGreaterThan(0.9);

    const expected = new Map<NodeStyleName, number>();
    for (const n of nodes) {
      const style: NodeStyleName = n.type === 'entry' ? (n.erasedSubject ? 'entry-erased' : 'entry') : (`artifact-${n.outcome}` as NodeStyleName);
      expected.set(style, (expected.get(style) ?? 0) + 1);
    }
    expect(expected.size).toBe(5);
    const counts = countColours(
      png,
      [...expected.keys()].map((k) => NODE_STYLES[k].fill),
    );
    const nodeArea = NODE_WIDTH * NODE_HEIGHT * scale * scale;
    for (const [style, many] of expected) {
      const got = counts.get(NODE_STYLES[style].fill)!;
      // Fill minus border and label text: well over half of each box.
      expect(got, `${style} (${NODE_STYLES[style].fill}) pixels`).toBeGreaterThan(0.6 * many * nodeArea);
      expect(got, `${style} pixels`).toBeLessThanOrEqual(many * nodeArea);
    }
    // Edges and borders are drawn too: dark pixels beyond the fills.
    expect(darkPixels(png)).toBeGreaterThan(500);
    expect(requests).toEqual([]);
  });

  it('class A: says no derived artifact was affected, and draws no graph', async () => {
    const page = await open(renderReport({ ...classB, class: 'A', graph: { nodes: [], edges: [] } }, { generatedAt }));
    expect(await page.locator('#graph-empty').innerText()).toBe('No derived artifacts were affected (class A)');
    expect(await page.locator('svg#provenance-graph').count()).toBe(0);
    expect(requests).toEqual([]);
  });

  it('shows hostile strings from the view as text: no element, no handler, no request, nothing runs', async () => {
    const page = await open(renderReport(hostile, { generatedAt }));
    const found = await page.evaluate(() => {
      const w = globalThis as unknown as DomWindow;
      return {
        pwned: w.__pwned ?? null,
        active: w.document.querySelectorAll('script, img, iframe, object, embed, link, base, form').length,
        handlers: Array.from(w.document.querySelectorAll('*')).flatMap((el) =>
          Array.from(el.attributes)
            .map((a) => a.name)
            .filter((n) => n.startsWith('on')),
        ),
        resources: w.performance.getEntriesByType('resource').length,
        text: w.document.body.innerText,
      };
    });
    expect(found.pwned).toBeNull();
    expect(found.active).toBe(0);
    expect(found.handlers).toEqual([]);
    expect(found.resources).toBe(0);
    expect(found.text).toContain(PWN);
    expect(found.text).toContain(IMG);
    expect(await page.title()).toBe(`Erasure report ers_${PWN}`);
    const ids = await page.$$eval('svg#provenance-graph g.node', (gs) => gs.map((g) => g.getAttribute('data-id')));
    expect(ids.sort()).toEqual(hostile.graph.nodes.map((n) => n.id).sort());
    expect(requests).toEqual([]);
    expect(errors).toEqual([]);
  });
});

// --- PNG ---------------------------------------------------------------------------

interface Png {
  width: number;
  height: number;
  /** RGBA, 4 bytes a pixel. */
  rgba: Uint8Array;
}

/** Decodes the 8-bit, non-interlaced RGB(A) PNGs Chromium writes (RFC 2083 filters 0–4). */
function decodePng(buf: Buffer): Png {
  if (!buf.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))) throw new Error('not a PNG');
  let width = 0;
  let height = 0;
  let channels = 0;
  const idat: Buffer[] = [];
  for (let at = 8; at < buf.length; ) {
    const length = buf.readUInt32BE(at);
    const type = buf.toString('latin1', at + 4, at + 8);
    const data = buf.subarray(at + 8, at + 8 + length);
    if (type === 'IHDR') {
      width = data.readUInt32BE(0);
      height = data.readUInt32BE(4);
      const [depth, colour, , , interlace] = [data[8], data[9], data[10], data[11], data[12]];
      if (depth !== 8 || interlace !== 0 || (colour !== 2 && colour !== 6)) {
        throw new Error(`PNG not handled here: depth ${depth}, colour type ${colour}, interlace ${interlace}`);
      }
      channels = colour === 6 ? 4 : 3;
    } else if (type === 'IDAT') {
      idat.push(data);
    } else if (type === 'IEND') {
      break;
    }
    at += 12 + length;
  }
  const raw = inflateSync(Buffer.concat(idat));
  const stride = width * channels;
  const out = new Uint8Array(width * height * channels);
  for (let y = 0; y < height; y++) {
    const filter = raw[y * (stride + 1)]!;
    const line = raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1));
    const row = y * stride;
    for (let x = 0; x < stride; x++) {
      const a = x >= channels ? out[row + x - channels]! : 0;
      const b = y > 0 ? out[row - stride + x]! : 0;
      const c = x >= channels && y > 0 ? out[row - stride + x - channels]! : 0;
      let v = line[x]!;
      if (filter === 1) v += a;
      else if (filter === 2) v += b;
      else if (filter === 3) v += (a + b) >> 1;
      else if (filter === 4) {
        const p = a + b - c;
        const pa = Math.abs(p - a);
        const pb = Math.abs(p - b);
        const pc = Math.abs(p - c);
        v += pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
      } else if (filter !== 0) throw new Error(`bad PNG filter ${filter}`);
      out[row + x] = v & 0xff;
    }
  }
  if (channels === 4) return { width, height, rgba: out };
  const rgba = new Uint8Array(width * height * 4);
  for (let i = 0, j = 0; i < out.length; i += 3, j += 4) {
    rgba[j] = out[i]!;
    rgba[j + 1] = out[i + 1]!;
    rgba[j + 2] = out[i + 2]!;
    rgba[j + 3] = 255;
  }
  return { width, height, rgba };
}

function rgb(hex: string): [number, number, number] {
  const n = Number.parseInt(hex.slice(1), 16);
  return [(n >> 16) & 0xff, (n >> 8) & 0xff, n & 0xff];
}

/** Pixels within ±3 per channel of each colour. */
function countColours(png: Png, colours: string[]): Map<string, number> {
  const targets = colours.map((c) => ({ hex: c, rgb: rgb(c) }));
  const counts = new Map(colours.map((c) => [c, 0]));
  for (let i = 0; i < png.rgba.length; i += 4) {
    for (const t of targets) {
      if (Math.abs(png.rgba[i]! - t.rgb[0]) <= 3 && Math.abs(png.rgba[i + 1]! - t.rgb[1]) <= 3 && Math.abs(png.rgba[i + 2]! - t.rgb[2]) <= 3) {
        counts.set(t.hex, counts.get(t.hex)! + 1);
        break;
      }
    }
  }
  return counts;
}

function darkPixels(png: Png): number {
  let n = 0;
  for (let i = 0; i < png.rgba.length; i += 4) if (png.rgba[i]! + png.rgba[i + 1]! + png.rgba[i + 2]! < 3 * 160) n++;
  return n;
}
