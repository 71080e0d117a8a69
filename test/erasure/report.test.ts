/**
 * The erasure report as text: what a DPO must find in it for each class, that no
 * string from the view reaches the page as markup, that it loads nothing remote, and
 * that the provenance graph draws every node and edge inside its canvas with no two
 * nodes on top of each other. The browser test renders the same report in Chromium.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { escapeHtml, MAX_GRAPH_NODES, NODE_STYLES, renderReport, shortId } from '../../src/erasure/report/index.js';
import { STEP_NAMES } from '../../src/erasure/machine.js';
import type { ErasureView, GraphEdge, GraphNode, StepView } from '../../src/erasure/view.js';

const generatedAt = new Date('2026-12-01T09:00:00.000Z');

const E1 = 'entry_Ab12cdEFghIJklMNopQRst';
const E2 = 'entry_Zz98yxWVutSRqpONmlKJih';
const E3 = 'entry_other0000000000000001';
const E4 = 'entry_other0000000000000002';
const SUMMARY = 'art_summary000000000000001';
const DIGEST = 'art_digest0000000000000001';
const FACT = 'art_fact00000000000000001';

function steps(status: StepView['status'] = 'done'): StepView[] {
  return STEP_NAMES.filter((n) => n !== 'redact').map((name, i) => ({
    name,
    status,
    detail: `${name}: ${i + 1} record(s)`,
    startedAt: `2026-11-30T12:00:0${i}.000Z`,
    finishedAt: `2026-11-30T12:00:0${i}.500Z`,
  }));
}

const classA: ErasureView = {
  erasureId: 'ers_classA0000000000000001',
  status: 'completed',
  scope: 'subject',
  class: 'A',
  subjectHash: '9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08',
  legalBasis: 'GDPR Art. 17(1)(b): consent withdrawn',
  createdAt: '2026-11-30T12:00:00.000Z',
  finishedAt: '2026-11-30T12:00:09.000Z',
  steps: steps(),
  residuals: [{ tier: 'vector-index', kind: 'gist', detail: 'embedding gist of 3 entries, bounded by the embedder', bound: 0.02 }],
  probe: { recovered: 0.01, threshold: 0.15, matches: [] },
  certificate: {
    payload: { erasureId: 'ers_classA0000000000000001', class: 'A', final: true, steps: [{ name: 'destroy', at: '2026-11-30T12:00:03.000Z' }] },
    signature: 'c2lnbmF0dXJlLW9mLWNsYXNzLUE',
    publicKey: 'cHVibGljLWtleS1vZi1sZXRoZQ',
    algorithm: 'Ed25519',
  },
  certificateState: 'final',
  graph: { nodes: [], edges: [] },
};

/** Two entries of the erased subject and two of others feed a summary that feeds a digest; a fact drawn from E1 alone is removed. */
const diamondNodes: GraphNode[] = [
  { id: E1, type: 'entry', erasedSubject: true },
  { id: E2, type: 'entry', erasedSubject: true },
  { id: E3, type: 'entry', erasedSubject: false },
  { id: E4, type: 'entry', erasedSubject: false },
  { id: SUMMARY, type: 'artifact', kind: 'summary', erasedSubject: false, outcome: 'regenerated' },
  { id: DIGEST, type: 'artifact', kind: 'digest', erasedSubject: false, outcome: 'regenerated' },
  { id: FACT, type: 'artifact', kind: 'fact', erasedSubject: false, outcome: 'removed' },
];
const diamondEdges: GraphEdge[] = [
  { from: E1, to: SUMMARY },
  { from: E2, to: SUMMARY },
  { from: E3, to: SUMMARY },
  { from: E4, to: SUMMARY },
  { from: SUMMARY, to: DIGEST },
  { from: E1, to: FACT },
];

const classB: ErasureView = {
  ...classA,
  erasureId: 'ers_classB0000000000000001',
  class: 'B',
  probe: { recovered: 0.04, threshold: 0.15, matches: [{ id: E3, tier: 'log', score: 0.42 }] },
  residuals: [
    { tier: 'key-table', kind: 'wrapped-dek', detail: '2 wrapped copies in KEK epoch 7', bound: 2, until: '2026-12-31T00:00:00.000Z' },
    { tier: 'log', kind: 'cross-subject', detail: `content found in ${E3}`, bound: 1 },
  ],
  certificateState: 'provisional',
  graph: { nodes: diamondNodes, edges: diamondEdges },
};

const classC: ErasureView = {
  ...classA,
  erasureId: 'ers_classC0000000000000001',
  status: 'incomplete',
  class: 'C',
  finishedAt: '2026-11-30T12:00:09.000Z',
  steps: steps().map((s) => (s.name === 'certify' ? { ...s, detail: 'no unlearning bound stated: incomplete' } : s)),
  probe: {
    recovered: 0.31,
    threshold: 0.15,
    matches: [
      { id: 'entry_leftover000000000001', tier: 'vector-index', score: 0.88 },
      { id: 'art_leftover0000000000001', tier: 'artifacts', score: 0.61 },
    ],
  },
  residuals: [
    { tier: 'model-weights', kind: 'parametric', detail: 'subject in training corpus exp_corpus01 (fine-tune 2026-10)', bound: 'unbounded' },
    { tier: 'backups', kind: 'wrapped-dek', detail: 'backup bak_0001 holds a wrapped copy', bound: 1, until: '2027-01-15T00:00:00.000Z' },
  ],
  certificate: undefined,
  certificateState: 'provisional',
  graph: {
    nodes: [
      { id: E1, type: 'entry', erasedSubject: true },
      { id: SUMMARY, type: 'artifact', kind: 'summary', erasedSubject: false, outcome: 'removed' },
    ],
    edges: [{ from: E1, to: SUMMARY }],
  },
};

const HOSTILE = '<script>alert(1)</script>';
const ATTR = '"onload=alert(2) x="';
const IMG = `<img src="https://evil.example/x.png" onerror="alert(3)">`;

const hostile: ErasureView = {
  erasureId: `ers_${HOSTILE}`,
  status: 'failed',
  scope: 'subject',
  class: 'B',
  subjectHash: `${ATTR}${HOSTILE}`,
  legalBasis: IMG,
  createdAt: `${HOSTILE}`,
  steps: [{ name: 'destroy', status: 'failed', detail: `${HOSTILE}${IMG}`, startedAt: ATTR }],
  residuals: [{ tier: HOSTILE, kind: ATTR, detail: IMG, bound: `${HOSTILE}`, until: ATTR }],
  probe: { recovered: Number.NaN, threshold: 0.15, matches: [{ id: `${ATTR}${HOSTILE}`, tier: 'log', score: 1 }] },
  certificate: { payload: { note: HOSTILE, nested: { attr: ATTR, img: IMG } }, signature: HOSTILE, publicKey: ATTR, algorithm: 'Ed25519' },
  certificateState: 'provisional',
  graph: {
    nodes: [
      { id: `entry_${HOSTILE}`, type: 'entry', erasedSubject: true },
      { id: `art_${ATTR}`, type: 'artifact', kind: HOSTILE, erasedSubject: false, outcome: 'regenerated' },
    ],
    edges: [{ from: `entry_${HOSTILE}`, to: `art_${ATTR}` }],
  },
};

function unescapeHtml(s: string): string {
  return s.replace(/&(amp|lt|gt|quot|#39);/g, (_m, e: string) => ({ amp: '&', lt: '<', gt: '>', quot: '"', '#39': "'" })[e]!);
}

interface Rect {
  id: string;
  style: string;
  x: number;
  y: number;
  width: number;
  height: number;
}

interface Segmented {
  from: string;
  to: string;
  points: { x: number; y: number }[];
}

function parseGraph(html: string): { width: number; height: number; nodes: Rect[]; edges: Segmented[] } {
  const svg = /<svg id="provenance-graph"[^>]*\bviewBox="0 0 ([\d.]+) ([\d.]+)"[^>]*>([\s\S]*?)<\/svg>/.exec(html);
  if (!svg) throw new Error('no svg#provenance-graph with a 0 0 W H viewBox');
  const body = svg[3]!;
  const nodes = [
    ...body.matchAll(
      /<g class="node" data-id="([^"]*)"[^>]*data-style="([^"]*)">[\s\S]*?<rect x="(-?[\d.]+)" y="(-?[\d.]+)" width="([\d.]+)" height="([\d.]+)"/g,
    ),
  ].map((m) => ({ id: unescapeHtml(m[1]!), style: m[2]!, x: +m[3]!, y: +m[4]!, width: +m[5]!, height: +m[6]! }));
  const edges = [...body.matchAll(/<path class="edge" data-from="([^"]*)" data-to="([^"]*)" d="([^"]*)"/g)].map((m) => ({
    from: unescapeHtml(m[1]!),
    to: unescapeHtml(m[2]!),
    points: [...m[3]!.matchAll(/(-?[\d.]+),(-?[\d.]+)/g)].map((p) => ({ x: +p[1]!, y: +p[2]! })),
  }));
  return { width: +svg[1]!, height: +svg[2]!, nodes, edges };
}

function overlaps(a: Rect, b: Rect): boolean {
  return a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height;
}

function near(p: { x: number; y: number }, r: Rect, slack = 1.5): boolean {
  return p.x >= r.x - slack && p.x <= r.x + r.width + slack && p.y >= r.y - slack && p.y <= r.y + r.height + slack;
}

/** Every node and edge drawn once, inside the viewBox, nodes apart, edges running from their source's box to their target's. */
function expectSoundGraph(html: string, nodes: readonly GraphNode[], edges: readonly GraphEdge[]): ReturnType<typeof parseGraph> {
  const g = parseGraph(html);
  expect(g.width).toBeGreaterThan(0);
  expect(g.height).toBeGreaterThan(0);
  expect(g.nodes.map((n) => n.id).sort()).toEqual(nodes.map((n) => n.id).sort());
  expect(g.edges.map((e) => `${e.from}->${e.to}`).sort()).toEqual(edges.map((e) => `${e.from}->${e.to}`).sort());
  for (const n of g.nodes) {
    expect(n.width).toBeGreaterThan(0);
    expect(n.height).toBeGreaterThan(0);
    expect(n.x).toBeGreaterThanOrEqual(0);
    expect(n.y).toBeGreaterThanOrEqual(0);
    expect(n.x + n.width).toBeLessThanOrEqual(g.width);
    expect(n.y + n.height).toBeLessThanOrEqual(g.height);
  }
  for (let i = 0; i < g.nodes.length; i++) {
    for (let j = i + 1; j < g.nodes.length; j++) {
      if (overlaps(g.nodes[i]!, g.nodes[j]!)) throw new Error(`nodes ${g.nodes[i]!.id} and ${g.nodes[j]!.id} overlap`);
    }
  }
  const byId = new Map(g.nodes.map((n) => [n.id, n]));
  for (const e of g.edges) {
    expect(e.points.length).toBeGreaterThanOrEqual(2);
    for (const p of e.points) {
      expect(p.x).toBeGreaterThanOrEqual(0);
      expect(p.y).toBeGreaterThanOrEqual(0);
      expect(p.x).toBeLessThanOrEqual(g.width);
      expect(p.y).toBeLessThanOrEqual(g.height);
    }
    expect(near(e.points[0]!, byId.get(e.from)!), `edge ${e.from}->${e.to} starts at its source`).toBe(true);
    expect(near(e.points.at(-1)!, byId.get(e.to)!), `edge ${e.from}->${e.to} ends at its target`).toBe(true);
  }
  return g;
}

describe('escapeHtml', () => {
  it('turns hostile markup and attribute breakouts into text', () => {
    expect(escapeHtml('<script>alert(1)</script>')).toBe('&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(escapeHtml('"onload=')).toBe('&quot;onload=');
    expect(escapeHtml("' onmouseover='x")).toBe('&#39; onmouseover=&#39;x');
    expect(escapeHtml('&lt;')).toBe('&amp;lt;');
    expect(escapeHtml('plain entry_Ab12 0.15')).toBe('plain entry_Ab12 0.15');
  });

  it('leaves no markup character behind and loses nothing, for any string', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), (s) => {
        const out = escapeHtml(s);
        expect(out).not.toMatch(/[<>"']/);
        expect(unescapeHtml(out)).toBe(s);
      }),
    );
  });
});

describe('shortId', () => {
  it('keeps the type prefix and four characters', () => {
    expect(shortId(E1)).toBe('entry_Ab12…');
    expect(shortId('art_summary000000000000001')).toBe('art_summ…');
    expect(shortId('entry_short')).toBe('entry_short');
    expect(shortId('nounderscorebutlong000000')).toBe('noundersco…');
  });
});

describe('renderReport', () => {
  it('is one self-contained HTML5 document that loads nothing', () => {
    for (const view of [classA, classB, classC]) {
      const html = renderReport(view, { generatedAt });
      expect(html.startsWith('<!DOCTYPE html>')).toBe(true);
      expect(html.trimEnd().endsWith('</html>')).toBe(true);
      expect(html.match(/<html[\s>]/g)).toHaveLength(1);
      expect(html).not.toMatch(/https?:\/\//);
      expect(html).not.toMatch(/\b(src|xlink:href|action|poster|srcset)\s*=/i);
      // links only within the page (the contents and the glossary)
      for (const m of html.matchAll(/\bhref\s*=\s*"([^"]*)"/gi)) expect(m[1]).toMatch(/^#[a-z-]+$/);
      expect(html).not.toMatch(/<(script|link|iframe|object|embed|img|base)\b/i);
      expect(html).not.toMatch(/@import|url\((?!#)/i);
      expect(html).toContain("default-src 'none'");
    }
  });

  it('is the same text for the same view and time', () => {
    expect(renderReport(classB, { generatedAt })).toBe(renderReport(classB, { generatedAt }));
    expect(renderReport(classB, { generatedAt })).toContain('2026-12-01 09:00:00 UTC');
  });

  it('class A: status, class, every step, the residual, the final certificate, and no graph', () => {
    const html = renderReport(classA, { generatedAt });
    expect(html).toContain('<title>Erasure report ers_classA0000000000000001</title>');
    expect(html).toMatch(/data-status="completed"[^>]*>completed</);
    expect(html).toContain('Class A · row-only');
    expect(html).toContain('No derived artifact depends on');
    for (const s of classA.steps) {
      expect(html).toContain(`<tr data-step="${s.name}">`);
      expect(html).toContain(s.detail!);
    }
    expect(html).toContain('2026-11-30 12:00:03 UTC');
    expect(html).toContain('9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08');
    expect(html).toContain('GDPR Art. 17(1)(b): consent withdrawn');
    expect(html).toContain('embedding gist of 3 entries, bounded by the embedder');
    expect(html).toMatch(/data-state="final"/);
    expect(html).toContain('c2lnbmF0dXJlLW9mLWNsYXNzLUE');
    expect(html).toContain('cHVibGljLWtleS1vZi1sZXRoZQ');
    expect(html).toContain(escapeHtml(JSON.stringify(classA.certificate, null, 2)));
    expect(html).toContain('No derived artifacts were affected (class A)');
    expect(html).not.toContain('<svg');
    expect(html).toContain('None: no readable record matched');
  });

  it('class B: the diamond is drawn whole, the erased entries and the removed artifact styled apart', () => {
    const html = renderReport(classB, { generatedAt });
    expect(html).toContain('Class B · cascading');
    expect(html).toContain('regenerated from surviving sources');
    const g = expectSoundGraph(html, diamondNodes, diamondEdges);
    const style = new Map(g.nodes.map((n) => [n.id, n.style]));
    expect(style.get(E1)).toBe('entry-erased');
    expect(style.get(E2)).toBe('entry-erased');
    expect(style.get(E3)).toBe('entry');
    expect(style.get(SUMMARY)).toBe('artifact-regenerated');
    expect(style.get(DIGEST)).toBe('artifact-regenerated');
    expect(style.get(FACT)).toBe('artifact-removed');
    for (const k of Object.keys(NODE_STYLES) as (keyof typeof NODE_STYLES)[]) expect(html).toContain(escapeHtml(NODE_STYLES[k].label));
    // Sources left of what is derived from them.
    const x = new Map(g.nodes.map((n) => [n.id, n.x]));
    for (const e of diamondEdges) expect(x.get(e.from)!).toBeLessThan(x.get(e.to)!);
    // Short labels, full ids in titles.
    expect(html).toContain('>entry_Ab12…</text>');
    expect(html).toMatch(new RegExp(`<title>${E1} — the erased subject</title>`));
    expect(html).toContain(`<title>${FACT} (fact) — removed</title>`);
    expect(html).toContain('4 entries (2 of the erased subject) and 3 artifacts: 2 regenerated, 1 removed, 0 unchanged.');
    // Edges out of the erased subject's entries are red, with a red arrowhead.
    expect(html).toMatch(new RegExp(`data-from="${E1}" data-to="${SUMMARY}"[^>]*marker-end="url\\(#arrow-erased\\)"`));
    expect(html).toMatch(new RegExp(`data-from="${E3}" data-to="${SUMMARY}"[^>]*marker-end="url\\(#arrow\\)"`));
    // Probe match and residuals.
    expect(html).toContain(`<td><code title="${E3}">${E3}</code></td>`);
    expect(html).toContain('0.42');
    expect(html).toContain('2 wrapped copies in KEK epoch 7');
    expect(html).toContain(`content found in ${E3}`);
    expect(html).toContain('2026-12-31 00:00:00 UTC');
    expect(html).toMatch(/data-state="provisional"/);
    expect(html).not.toContain('data-note="truncated"');
  });

  it('class C incomplete: the parametric residual is shown as unbounded and the probe above its threshold', () => {
    const html = renderReport(classC, { generatedAt });
    expect(html).toMatch(/data-status="incomplete"[^>]*>incomplete</);
    expect(html).toContain('Class C · parametric');
    expect(html).toContain('registered training corpus');
    for (const r of classC.residuals) {
      expect(html).toContain(`<td>${r.tier}</td>`);
      expect(html).toContain(`<code>${r.kind}</code>`);
      expect(html).toContain(r.detail);
    }
    expect(html).toContain('<strong class="unbounded" title="no bound can be stated">unbounded</strong>');
    expect(html).toContain('2027-01-15 00:00:00 UTC');
    expect(html).toContain('no end date');
    expect(html).toContain('<strong class="num" id="probe-recovered">0.31</strong> (31.0%)');
    expect(html).toContain('<strong class="num" id="probe-threshold">0.15</strong> (15.0%)');
    expect(html).toContain('Above the threshold');
    expect(html).toContain('width:31%');
    expect(html).toContain('left:15%');
    for (const m of classC.probe.matches) {
      expect(html).toContain(`<code title="${m.id}">${m.id}</code>`);
      expect(html).toContain(`<td>${m.tier}</td>`);
      expect(html).toContain(`>${m.score}</td>`);
    }
    expect(html).toContain('no unlearning bound stated: incomplete');
    expect(html).toContain('No certificate has been signed');
    expectSoundGraph(html, classC.graph.nodes, classC.graph.edges);
  });

  it('colours each status and says what it means', () => {
    const seen = new Set<string>();
    for (const status of ['completed', 'incomplete', 'failed', 'pending', 'running'] as const) {
      const html = renderReport({ ...classA, status }, { generatedAt });
      const badge = new RegExp(`<span class="badge status" data-status="${status}" style="background:(#[0-9a-f]{6})`).exec(html);
      expect(badge, status).not.toBeNull();
      seen.add(badge![1]!);
      expect(html).toMatch(/<p class="explain" id="status-meaning">[^<]+<\/p>/);
    }
    expect(seen.size).toBe(5);
    expect(renderReport({ ...classA, status: 'pending', class: undefined, steps: [] }, { generatedAt })).toContain('not yet classified');
  });

  it('escapes every string from the view: ids, details, hashes, payload, graph', () => {
    const html = renderReport(hostile, { generatedAt });
    expect(html).not.toMatch(/<script/i);
    expect(html).not.toMatch(/<img/i);
    expect(html).not.toContain('"onload=');
    expect(html).not.toMatch(/\s(onerror|onload)\s*=\s*["']/i);
    expect(html).not.toMatch(/\bsrc\s*=\s*["']/i);
    expect(html).not.toMatch(/\bhref\s*=\s*["'](?!#[a-z-]+["'])/i);
    expect(html).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(html).toContain('&quot;onload=alert(2) x=&quot;');
    expect(html).toContain('&lt;img src=&quot;https://evil.example/x.png&quot; onerror=&quot;alert(3)&quot;&gt;');
    // The certificate is JSON first, then escaped: its quotes are the escaped JSON's.
    expect(html).toContain(escapeHtml(JSON.stringify(hostile.certificate, null, 2)));
    // Hostile ids still make a sound graph, and attributes hold them whole.
    expectSoundGraph(html, hostile.graph.nodes, hostile.graph.edges);
    expect(html).toContain(`data-id="${escapeHtml(`art_${ATTR}`)}"`);
    expect(html).toContain('NaN');
  });

  it('draws at most MAX_GRAPH_NODES nodes and says how many were left out', () => {
    const nodes: GraphNode[] = [];
    const edges: GraphEdge[] = [];
    for (let i = 0; i < 500; i++) {
      nodes.push({ id: `entry_${String(i).padStart(22, '0')}`, type: 'entry', erasedSubject: i % 7 === 0 });
    }
    for (let i = 0; i < 500; i++) {
      const id = `art_${String(i).padStart(22, '0')}`;
      nodes.push({ id, type: 'artifact', kind: 'summary', erasedSubject: false, outcome: i % 3 === 0 ? 'removed' : 'regenerated' });
      edges.push({ from: `entry_${String(i).padStart(22, '0')}`, to: id });
    }
    // Interleave so the first 300 hold entries and the artifacts derived from them.
    const ordered = nodes
      .slice(0, 150)
      .flatMap((n, i) => [n, nodes[500 + i]!])
      .concat(nodes.slice(150, 500), nodes.slice(650));
    const html = renderReport({ ...classB, graph: { nodes: ordered, edges } }, { generatedAt });
    const drawn = ordered.slice(0, MAX_GRAPH_NODES);
    const drawnIds = new Set(drawn.map((n) => n.id));
    expectSoundGraph(
      html,
      drawn,
      edges.filter((e) => drawnIds.has(e.from) && drawnIds.has(e.to)),
    );
    expect(html).toContain('Only the first 300 nodes are drawn; 700 nodes were left out');
  });

  it('says so when the captured graph was already cut, and drops loops, duplicates and unknown ends', () => {
    const html = renderReport(
      {
        ...classB,
        graph: {
          nodes: [...diamondNodes, diamondNodes[0]!],
          edges: [...diamondEdges, diamondEdges[0]!, { from: SUMMARY, to: SUMMARY }, { from: 'entry_gone', to: SUMMARY }],
          truncated: true,
        },
      },
      { generatedAt },
    );
    expectSoundGraph(html, diamondNodes, diamondEdges);
    expect(html).toContain('The graph was cut at its node limit when it was captured');
    expect(html).not.toContain('left out');
  });
});
