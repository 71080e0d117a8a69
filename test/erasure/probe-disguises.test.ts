/**
 * Disguised copies (issue 29, M3), end to end on PostgreSQL and a real MinIO: a copy of
 * the erased text that looks the same to a reader — a zero-width space inside every
 * word, Cyrillic look-alike letters, soft hyphens — or that writes a number with other
 * separators is named by the probe, and the erasure stays incomplete. The disguise may
 * be on either side: in the surviving copy or in the erased record itself.
 */
import { randomBytes, randomInt } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insideEveryWord, lookAlikes, REPLACED_LATIN, softHyphens } from '../../fixtures/probe-eval/disguises.js';
import { minioEnv, openTestApp, type TestApp } from '../support/vault.js';

const tag = () => randomBytes(5).toString('hex');

const zeroWidth = (text: string) => text.replace(/(\p{L})(?=\p{L})/gu, (_m, l: string, at: number) => (at % 3 === 0 ? `${l}\u200b` : l));

/** A phone number's digits: country code, area, and two groups. */
const phone = () => ['44', String(randomInt(20, 99)), String(randomInt(1000, 9999)), String(randomInt(1000, 9999))];

describe('disguised copies are named by the probe (PostgreSQL + MinIO)', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await openTestApp({ extraEnv: minioEnv('lethe-disguise'), app: { erasureWorker: false } });
    // other subjects' everyday notes: the store the weights are measured in
    const people = ['Maya', 'Tom', 'Ines', 'Raj', 'Lena', 'Omar'];
    for (let i = 0; i < 24; i++) {
      await append(`user:bg-${i}-${tag()}`, `${people[i % people.length]} said the team meeting moved to room ${100 + i} this week.`);
      await append(`user:bg-${i}-${tag()}`, `Phone: call the front desk about parcel ${randomInt(10, 99)} before noon.`);
    }
  }, 60_000);

  afterAll(async () => {
    await t?.close();
  });

  const append = async (subject: string, text: string) => (await t.app.log.append(subject, { text }, 'writer')).entryId;
  const erase = async (subject: string) => {
    const { erasureId } = await t.app.erasures.request({ subject }, 'eraser');
    return t.app.erasures.settle(erasureId);
  };
  const secret = () => `Walter keeps the vault combination ${randomInt(1000, 9999)}-${tag()} written inside his grandmother's cookbook.`;

  /** Erases a subject holding `erased`; another subject holds `copy`: the probe must name the copy. */
  async function expectNamed(erased: string, copy: string) {
    expect(copy).not.toBe(erased);
    const W = `user:w-${tag()}`;
    await append(W, erased);
    const copyId = await append(`user:copy-${tag()}`, copy);
    const view = await erase(W);
    expect(view.status).toBe('incomplete');
    expect(view.probe.matches.map((m) => m.id)).toContain(copyId);
    expect(view.probe.recovered).toBeGreaterThan(view.probe.threshold);
  }

  it('a copy with a zero-width space inside every word', async () => {
    const text = secret();
    const copy = insideEveryWord(text);
    expect(copy.replace(/\u200b/g, '')).toBe(text);
    await expectNamed(text, copy);
  });

  it('a copy with zero-width joiners, word joiners and bidi controls scattered through it', async () => {
    const text = secret();
    await expectNamed(text, zeroWidth(text).replace(/ /g, ' \u2060').replace(/^/, '\u202d').replace(/c/g, 'c\u200d'));
  });

  it('a copy written with Cyrillic look-alike letters', async () => {
    const text = secret();
    const copy = lookAlikes(text);
    expect(copy).not.toMatch(REPLACED_LATIN);
    await expectNamed(text, copy);
  });

  it('a copy with soft hyphens inside every word', async () => {
    const text = secret();
    await expectNamed(text, softHyphens(text));
  });

  it('an erased record written in disguise, its copy in plain letters', async () => {
    const text = secret();
    await expectNamed(lookAlikes(insideEveryWord(text, '\u00ad')), text);
  });

  it('a phone number with its spaces removed', async () => {
    const n = phone();
    await expectNamed(`Phone: +${n.join(' ')}`, `Phone: ${n.join('')}`);
  });

  it('a phone number written with dashes instead of nothing', async () => {
    const n = phone();
    await expectNamed(`Phone: ${n.join('')}`, `Phone: ${n.join('-')}`);
  });

  it('a phone number written with dots, its copy with none', async () => {
    const n = phone();
    await expectNamed(`Phone: ${n.join('.')}`, `Phone: ${n.join('')}`);
  });
});
