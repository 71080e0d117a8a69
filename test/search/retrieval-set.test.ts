/**
 * The labelled retrieval set (test/search/retrieval) is what the issue asked for and
 * what bench/retrieval.ts scores: conversations between pairs of people, every
 * question's evidence turns present, each category represented.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

interface Conversation {
  id: string;
  speakers: string[];
  sessions: Array<{ date: string; turns: Array<{ id: string; speaker: string; text: string }> }>;
  questions: Array<{ id: string; question: string; category: string; evidence: string[] }>;
}
const { conversations } = JSON.parse(readFileSync(new URL('./retrieval/conversations.json', import.meta.url), 'utf8')) as { conversations: Conversation[] };

describe('the retrieval set', () => {
  it('has at least 20 multi-session conversations between pairs of people and 3,000 turns', () => {
    expect(conversations.length).toBeGreaterThanOrEqual(20);
    expect(conversations.reduce((n, c) => n + c.sessions.reduce((m, s) => m + s.turns.length, 0), 0)).toBeGreaterThanOrEqual(3000);
    for (const c of conversations) {
      expect(new Set(c.speakers).size).toBe(2);
      expect(c.sessions.length).toBeGreaterThan(1);
      const dates = c.sessions.map((s) => s.date);
      expect([...dates].sort()).toEqual(dates);
      for (const s of c.sessions) for (const t of s.turns) expect(c.speakers).toContain(t.speaker);
    }
    // no person in two conversations: each is a subject of its own in the bench
    const people = conversations.flatMap((c) => c.speakers);
    expect(new Set(people).size).toBe(people.length);
  });

  it('labels every question with evidence turns of its own conversation, in every category', () => {
    const categories = new Map<string, number>();
    const ids = new Set<string>();
    for (const c of conversations) {
      const turns = new Set(c.sessions.flatMap((s) => s.turns.map((t) => t.id)));
      for (const q of c.questions) {
        expect(ids.has(q.id)).toBe(false);
        ids.add(q.id);
        categories.set(q.category, (categories.get(q.category) ?? 0) + 1);
        if (q.category === 'none') expect(q.evidence).toEqual([]);
        else expect(q.evidence.length).toBeGreaterThan(q.category === 'multi' ? 1 : 0);
        for (const e of q.evidence) expect(turns.has(e), `${q.id}: ${e}`).toBe(true);
      }
    }
    expect([...categories.keys()].sort()).toEqual(['multi', 'none', 'paraphrase', 'single', 'temporal']);
    for (const n of categories.values()) expect(n).toBeGreaterThanOrEqual(20);
  });
});
