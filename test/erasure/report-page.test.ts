/**
 * The report's first page, timeline and outcome history, from a view and transition
 * rows (no database): page one carries the request's context, dates in words and one
 * plain sentence per residual with no engine jargon; every residual kind that
 * residuals.ts records has a sentence of its own; the timeline is in time order even
 * when the steps are not (a redaction before the certify that followed it), and the
 * outcome history keeps an outcome a redaction superseded.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { buildTimeline, dateInWords, outcomeHistory, renderReport, residualSentence } from '../../src/erasure/report/index.js';
import type { ErasureTransition, ErasureView, Residual } from '../../src/erasure/view.js';

const generatedAt = new Date('2026-12-02T15:00:00.000Z');
/** Engine words a DPO should not meet on page one. */
const JARGON = /wrapped-dek|\bgist\b|\bKEK\b|\bDEK\b|\bepoch|shingle|embedding|dead tuple|\bWAL\b|cross-subject|parametric|replica-lag|\blease\b/i;

const EID = 'ers_report0000000000000001';
const transitions: ErasureTransition[] = [
  { id: 1, fromStep: null, toStep: 'classify', status: 'pending', at: '2026-12-02T14:46:50.000Z', detail: 'requested by eraser' },
  { id: 2, fromStep: 'classify', toStep: 'fingerprint', status: 'running', at: '2026-12-02T14:46:51.000Z', detail: 'class A' },
  { id: 3, fromStep: 'probe', toStep: 'certify', status: 'running', at: '2026-12-02T14:46:58.000Z', detail: '1 match' },
  { id: 4, fromStep: 'certify', toStep: null, status: 'incomplete', at: '2026-12-02T14:46:59.000Z', detail: 'recovered 0.4 > 0.15' },
  { id: 5, fromStep: null, toStep: 'redact', status: 'running', at: '2026-12-02T14:47:05.000Z', detail: 'redaction of 1 record(s) ordered by eraser' },
  { id: 6, fromStep: 'redact', toStep: 'propagate', status: 'running', at: '2026-12-02T14:47:08.000Z', detail: 're-keyed 1 subject' },
  { id: 7, fromStep: 'probe', toStep: 'certify', status: 'running', at: '2026-12-02T14:47:08.500Z', detail: 'no match' },
  { id: 8, fromStep: 'certify', toStep: null, status: 'completed', at: '2026-12-02T14:47:09.000Z', detail: 'recovered 0 <= 0.15' },
  {
    id: 9,
    fromStep: null,
    toStep: null,
    status: 'completed',
    at: '2026-12-20T08:00:00.000Z',
    detail: 'certificate final: every epoch that wrapped a destroyed key is retired',
  },
];

/** Every residual residuals.ts can record, in its words (jargon and all: the detail is the engine's). */
const residuals: Residual[] = [
  { tier: 'vector-index', kind: 'gist', detail: "The erased records' embeddings were deleted; their gist stays a property of the vector space.", bound: 0.02 },
  {
    tier: 'vector-index',
    kind: 'replica-lag',
    detail: 'Replica r2 had applied destructions up to #3 (this one is #4).',
    bound: 'until replica r2 applies destruction #4',
  },
  {
    tier: 'key-table',
    kind: 'wrapped-dek',
    detail: "Copies of the destroyed key k1, wrapped under epoch 1's KEK, may remain in dead tuples and WAL.",
    bound: 'until epoch 1 is retired (not scheduled)',
  },
  {
    tier: 'backups',
    kind: 'wrapped-dek',
    detail: "2 lethe backup(s) hold the destroyed key's wrapped copy; it unwraps only while epoch 1's KEK exists.",
    bound: 0,
    until: '2026-12-20T08:00:00.000Z',
  },
  {
    tier: 'caches',
    kind: 'lease',
    detail: 'Writers that leased the key before the fence could hold the DEK in memory.',
    until: '2026-12-02T14:52:00.000Z',
    bound: '2026-12-02T14:52:00.000Z',
  },
  { tier: 'log', kind: 'cross-subject', detail: 'Record entry_x still carries the erased content (score 0.4).', bound: 'unbounded until redacted' },
  { tier: 'artifacts', kind: 'cross-subject', detail: 'Record art_x still carries the erased content.', bound: 'unbounded until redacted' },
  { tier: 'vector-index', kind: 'cross-subject', detail: 'Record entry_y still carries the erased content.', bound: 'unbounded until redacted' },
  {
    tier: 'log',
    kind: 'dismissed-content',
    detail: 'Record entry_z stays readable: it scores 0.4 against the erased content, and a ruling dismissed it.',
    bound: 'unbounded until the record is redacted or the ruling revoked',
  },
  {
    tier: 'model-weights',
    kind: 'parametric',
    detail: "The subject's records were in 2 registered training exposure(s) and no unlearning bound was stated.",
    bound: 'unbounded',
  },
  {
    tier: 'model-weights',
    kind: 'parametric',
    detail: 'The subject\'s records were in 1 registered training exposure(s); the requester states unlearning by "SISA" with bound 0.1.',
    bound: 0.1,
  },
  { tier: 'erasure', kind: 'fingerprints', detail: "The probe fingerprints stay sealed under the erasure's key ak_1.", bound: 'until no probe match remains' },
  {
    tier: 'vector-index',
    kind: 'unindexed',
    detail: '3 entries registered by writers before the probe started were still waiting in the indexing queue.',
    bound: '3 unprobed entries, until probed',
  },
];

const view: ErasureView = {
  erasureId: EID,
  status: 'completed',
  scope: 'subject',
  class: 'A',
  subjectHash: '9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08',
  request: { reasonCategory: 'withdrawn-consent', legalBasis: 'GDPR Art. 17(1)(b)', controller: 'Acme Analytics GmbH', reference: 'DSR-2026-0042' },
  createdAt: '2026-12-02T14:46:50.000Z',
  finishedAt: '2026-12-02T14:47:09.000Z',
  // the steps as the view holds them: in the machine's order, each with its last run's times
  steps: [
    { name: 'classify', status: 'done', startedAt: '2026-12-02T14:46:50.100Z', finishedAt: '2026-12-02T14:46:51.000Z' },
    { name: 'certify', status: 'done', startedAt: '2026-12-02T14:47:08.600Z', finishedAt: '2026-12-02T14:47:09.000Z' },
    { name: 'redact', status: 'done', startedAt: '2026-12-02T14:47:05.100Z', finishedAt: '2026-12-02T14:47:08.000Z' },
  ],
  residuals,
  probe: { recovered: 0, threshold: 0.15, matches: [] },
  certificate: { payload: { erasureId: EID, issuedAt: '2026-12-20T08:00:00.000Z' }, signature: 'c2ln', publicKey: 'cHVi', algorithm: 'Ed25519' },
  certificateState: 'final',
  graph: { nodes: [], edges: [] },
};

function section(html: string, id: string): string {
  const m = new RegExp(`<section id="${id}">([\\s\\S]*?)</section>`).exec(html);
  if (!m) throw new Error(`no section #${id}`);
  return m[1]!;
}

function text(html: string): string {
  return html
    .replace(/<[^>]+>/g, ' ')
    .replace(/&#39;/g, "'")
    .replace(/&quot;/g, '"')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&')
    .replace(/\s+/g, ' ');
}

describe('dateInWords', () => {
  it('writes a time in words, in UTC', () => {
    expect(dateInWords('2026-12-02T14:47:08.000Z')).toBe('2 December 2026, 14:47 UTC');
    expect(dateInWords('2026-12-02T14:47:08.000Z', { seconds: true })).toBe('2 December 2026, 14:47:08 UTC');
    expect(dateInWords('2027-01-05T03:04:00+02:00')).toBe('5 January 2027, 01:04 UTC');
    expect(dateInWords('not a time')).toBeUndefined();
  });
});

describe('residualSentence', () => {
  it('has a sentence of its own for every residual kind residuals.ts records, one sentence, no jargon', () => {
    const source = readFileSync(new URL('../../src/erasure/residuals.ts', import.meta.url), 'utf8');
    const kinds = new Set([...source.matchAll(/kind: '([a-z-]+)'/g)].map((m) => m[1]!));
    expect(kinds.size).toBeGreaterThanOrEqual(7);
    const covered = new Set(residuals.map((r) => r.kind));
    for (const k of kinds) expect(covered.has(k), `the fixture covers kind ${k}`).toBe(true);
    const fallback = residualSentence({ tier: 'x', kind: 'no-such-kind', detail: '', bound: 0 });
    for (const r of residuals) {
      for (const scope of ['subject', 'records'] as const) {
        const s = residualSentence(r, { scope });
        expect(s, `${r.tier}/${r.kind}`).not.toBe(fallback);
        expect(s, `${r.tier}/${r.kind}: ${s}`).not.toMatch(JARGON);
        // one sentence: a capital or a figure first, one full stop, at the end
        expect(s, s).toMatch(/^[A-Z0-9][\s\S]*\.$/);
        expect(s.slice(0, -1), s).not.toMatch(/\.\s/);
      }
    }
  });

  it('says when a residual ends, in words', () => {
    expect(residualSentence(residuals[3]!)).toBe('2 backups hold a locked copy of the destroyed key; since 20 December 2026 it can no longer be unlocked.');
    expect(residualSentence(residuals[4]!)).toContain('until 2 December 2026, 14:52 UTC');
    expect(residualSentence(residuals[2]!)).toContain('not yet scheduled');
    expect(residualSentence(residuals[0]!)).toContain('2.0%');
  });
});

describe('the timeline and the outcome history', () => {
  it('lists every event in time order, whatever order the steps are in, with ties kept in row order', () => {
    // the rows as read (by id), shuffled: the timeline sorts them by time
    const shuffled = [
      transitions[7]!,
      transitions[2]!,
      transitions[0]!,
      transitions[5]!,
      transitions[8]!,
      transitions[1]!,
      transitions[4]!,
      transitions[6]!,
      transitions[3]!,
    ];
    const dismissed = {
      ...view.probe,
      dismissed: [{ id: 'entry_z', role: 'eraser', at: '2026-12-02T14:47:05.000Z', reason: 'a public fact', ruledScore: 0.3 }],
    };
    const timeline = buildTimeline({ probe: dismissed }, shuffled);
    expect(timeline).toHaveLength(transitions.length + 1);
    const times = timeline.map((e) => Date.parse(e.at));
    expect(times).toEqual([...times].sort((a, b) => a - b));
    // the redaction (14:47:08) comes before the certificate it led to (14:47:09)
    const redaction = timeline.findIndex((e) => e.what === 'Step redact done');
    const certified = timeline.findIndex((e) => e.status === 'completed' && e.kind === 'outcome');
    expect(redaction).toBeGreaterThanOrEqual(0);
    expect(redaction).toBeLessThan(certified);
    // same instant: the dismissal before the re-open it caused
    expect(timeline.map((e) => e.kind).slice(4, 6)).toEqual(['dismissal', 'reopened']);
  });

  it('keeps every outcome: incomplete, then the redaction, then completed, then the certificate made final', () => {
    const history = outcomeHistory(buildTimeline(view, transitions));
    expect(history.map((h) => [h.kind, h.status])).toEqual([
      ['outcome', 'incomplete'],
      ['reopened', 'running'],
      ['outcome', 'completed'],
      ['certificate-final', 'completed'],
    ]);
    expect(history.map((h) => h.at)).toEqual([transitions[3]!.at, transitions[4]!.at, transitions[7]!.at, transitions[8]!.at]);
  });
});

describe("the report's first page", () => {
  const html = renderReport(view, { generatedAt, transitions });
  const one = section(html, 'page-one');
  const words = text(one);

  it('states the request: the reason category in words, the legal basis, the controller and its reference', () => {
    expect(words).toContain('The person withdrew the consent the processing rested on');
    expect(words).toContain('GDPR Art. 17(1)(b)');
    expect(words).toContain('Acme Analytics GmbH');
    expect(words).toContain('DSR-2026-0042');
  });

  it('says what was erased by keyed hash, the outcome and its history, with dates in words', () => {
    expect(words).toContain(`keyed hash ${view.subjectHash}`);
    expect(words).toContain('Requested 2 December 2026, 14:46 UTC');
    expect(words).toContain('Completed, 2 December 2026, 14:47 UTC');
    const history = [...one.matchAll(/<li data-kind="([a-z-]+)"(?: data-status="([a-z]+)")?>/g)].map((m) => `${m[1]}:${m[2] ?? ''}`);
    expect(history).toEqual(['outcome:incomplete', 'reopened:running', 'outcome:completed', 'certificate-final:completed']);
    expect(words).toContain('Re-opened: redaction of 1 record(s) ordered by eraser');
    expect(words).toContain('Final. Signed on 20 December 2026, 08:00 UTC.');
    // dates in words only: no ISO date in the text a person reads (machine-readable ones stay in <time datetime>)
    expect(words).not.toMatch(/\d{4}-\d{2}-\d{2}/);
  });

  it('gives one plain sentence per residual and no engine jargon anywhere on the page', () => {
    const remains = /<ul id="remains">([\s\S]*?)<\/ul>/.exec(one)![1]!;
    const items = [...remains.matchAll(/<li>([\s\S]*?)<\/li>/g)].map((m) => text(m[1]!).trim());
    expect(items).toEqual(residuals.map((r) => residualSentence(r, { scope: 'subject' })));
    expect(words).not.toMatch(JARGON);
    // the engine's own words are still in the report: in the technical detail
    expect(text(section(html, 'residuals'))).toMatch(/wrapped-dek/);
  });

  it('puts the timeline in time order on the page, and the certificate JSON with how to verify it in the appendix', () => {
    const at = [...section(html, 'timeline').matchAll(/<tr data-kind="[a-z-]+" data-at="([^"]+)"/g)].map((m) => Date.parse(m[1]!));
    expect(at).toHaveLength(transitions.length);
    expect(at).toEqual([...at].sort((a, b) => a - b));
    const appendix = section(html, 'appendix');
    expect(appendix).toContain('lethe certificate verify certificate.json --url');
    expect(appendix).toContain('GET /v1/certificates/keys');
    expect(appendix).toContain('id="certificate-json"');
    expect(html.indexOf('id="appendix"')).toBeGreaterThan(html.indexOf('id="technical"'));
    expect(one).not.toContain('certificate-json');
  });

  it('without a request context says so, and names the entries count for a records-scope erasure', () => {
    const bare = section(renderReport({ ...view, request: undefined, scope: 'records', entryIds: ['entry_a', 'entry_b'] }, { generatedAt }), 'page-one');
    expect(text(bare)).toContain('The request gave no reason category, legal basis, controller or reference.');
    expect(text(bare)).toContain(`2 entries of the person with keyed hash ${view.subjectHash} were forgotten`);
  });

  it('with a legal basis and no other context, states the basis and never says there was none', () => {
    const page = text(section(renderReport({ ...view, request: undefined, legalBasis: 'gdpr-art17' }, { generatedAt }), 'page-one'));
    expect(page).toContain('Legal basis: gdpr-art17.');
    expect(page).toContain('The request gave no reason category, controller or reference.');
    expect(page).not.toMatch(/no[^.]*legal basis/);
  });

  it('a completion on a ruling never says "found nothing recoverable": it says a ruling kept records readable', () => {
    expect(text(section(html, 'page-one'))).toContain('found nothing recoverable');
    const ruled = text(section(renderReport({ ...view, readableByRuling: ['entry_z'] }, { generatedAt }), 'page-one'));
    expect(ruled).not.toContain('found nothing recoverable');
    expect(ruled).toContain(
      'Completed on a ruling: the data is erased, but the reconstruction check found 1 record that still carries the erased information and stays readable',
    );
  });

  it('prints on A4 with the timeline, the technical detail and the appendix each from a new page, and no navigation', () => {
    const css = /<style>([\s\S]*?)<\/style>/.exec(html)![1]!;
    expect(css).toMatch(/@page\{size:A4/);
    const print = /@media print\{([\s\S]*)\}\s*$/.exec(css)![1]!;
    expect(print).toMatch(/#appendix[^{]*\{break-before:page\}/);
    expect(print).toMatch(/#timeline,#technical/);
    expect(print).toMatch(/nav,\.toc\{display:none\}/);
  });
});
