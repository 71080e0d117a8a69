/**
 * Provenance through a real vault (PostgreSQL + the local object store): the closure
 * below an artifact (every node once, at its shortest depth), the subjects it
 * reaches, the artifacts that touch a subject (what an erasure must regenerate), and
 * the height limit on chains of artifacts of artifacts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'drizzle-orm';
import { MAX_HEIGHT } from '../../src/artifacts/provenance.js';
import type { ArtifactKind } from '../../src/db/schema.js';
import { queryRows } from '../../src/db/client.js';
import { openTestVault, type TestVault } from '../support/vault.js';

let tv: TestVault;
beforeAll(async () => {
  tv = await openTestVault();
});
afterAll(async () => {
  await tv?.close();
});

async function entry(subject: string, text = `something ${subject} said.`): Promise<string> {
  return (await tv.app.log.append(subject, { text }, 'writer')).entryId;
}

function write(sources: string[], kind: ArtifactKind = 'summary', text = 'a summary of its sources.') {
  return tv.app.artifacts.write({ kind, text, sources }, 'writer');
}

async function artifact(sources: string[], kind: ArtifactKind = 'summary'): Promise<string> {
  return (await write(sources, kind)).artifactId;
}

/** The subject as the vault names it in the database (keyed hash, hex). */
const hashOf = (subject: string) => Buffer.from(tv.app.keys.subjectHash(subject)).toString('hex');

const touching = async (subject: string) => Object.fromEntries((await tv.app.artifacts.touching(subject)).map((t) => [t.artifactId, t.depth]));

async function artifactRows(): Promise<number> {
  const [row] = await queryRows<{ n: number }>(tv.app.db.db, sql`select count(*)::int as n from artifacts`);
  return Number(row!.n);
}

describe('a diamond: two summaries sharing an entry, a digest over both', () => {
  let eA: string, eShared: string, eC: string, s1: string, s2: string, digest: string;
  let digestSubjects: number;

  beforeAll(async () => {
    eA = await entry('user:dia-a');
    eShared = await entry('user:dia-shared');
    eC = await entry('user:dia-c');
    s1 = await artifact([eA, eShared]);
    s2 = await artifact([eShared, eC]);
    const d = await write([s1, s2], 'digest');
    digest = d.artifactId;
    digestSubjects = d.subjects;
  });

  it("the digest's closure holds every node exactly once: the summaries at depth 1, the entries at depth 2", async () => {
    const { nodes } = await tv.app.artifacts.provenance(digest);
    expect(nodes).toHaveLength(5);
    expect(new Set(nodes.map((n) => n.id)).size).toBe(5);
    const byId = Object.fromEntries(nodes.map((n) => [n.id, { type: n.type, depth: n.depth }]));
    expect(byId).toEqual({
      [s1]: { type: 'artifact', depth: 1 },
      [s2]: { type: 'artifact', depth: 1 },
      [eA]: { type: 'entry', depth: 2 },
      [eShared]: { type: 'entry', depth: 2 },
      [eC]: { type: 'entry', depth: 2 },
    });
  });

  it('lists the closure nearest first', async () => {
    const { nodes } = await tv.app.artifacts.provenance(digest);
    const depths = nodes.map((n) => n.depth);
    expect(depths).toEqual([...depths].sort((a, b) => a - b));
  });

  it('the digest reaches the three subjects, and its write answered that count', async () => {
    const { subjects } = await tv.app.artifacts.provenance(digest);
    expect(subjects).toEqual([hashOf('user:dia-a'), hashOf('user:dia-shared'), hashOf('user:dia-c')].sort());
    expect(digestSubjects).toBe(3);
  });

  it('each summary reaches only its own two subjects', async () => {
    expect((await tv.app.artifacts.provenance(s1)).subjects).toEqual([hashOf('user:dia-a'), hashOf('user:dia-shared')].sort());
    expect((await tv.app.artifacts.provenance(s2)).subjects).toEqual([hashOf('user:dia-shared'), hashOf('user:dia-c')].sort());
  });

  it('the shared subject is touched by both summaries at depth 1 and by the digest once, at depth 2', async () => {
    const t = await tv.app.artifacts.touching('user:dia-shared');
    expect(t.filter((x) => x.artifactId === digest)).toHaveLength(1);
    expect(Object.fromEntries(t.map((x) => [x.artifactId, x.depth]))).toEqual({ [s1]: 1, [s2]: 1, [digest]: 2 });
  });

  it('a subject on one side of the diamond is touched by its summary and the digest, not by the other summary', async () => {
    expect(await touching('user:dia-a')).toEqual({ [s1]: 1, [digest]: 2 });
    expect(await touching('user:dia-c')).toEqual({ [s2]: 1, [digest]: 2 });
  });

  it('a node reachable both directly and through a summary is listed once, at the shorter depth', async () => {
    // cites the shared entry directly and again through s1
    const shortcut = await artifact([s1, eShared], 'digest');
    const { nodes } = await tv.app.artifacts.provenance(shortcut);
    expect(nodes.filter((n) => n.id === eShared)).toEqual([{ id: eShared, type: 'entry', depth: 1 }]);
    expect(nodes.find((n) => n.id === eA)).toEqual({ id: eA, type: 'entry', depth: 2 });
    expect(nodes).toHaveLength(3);
    expect((await touching('user:dia-shared'))[shortcut]).toBe(1);
    expect((await touching('user:dia-a'))[shortcut]).toBe(2);
  });
});

describe('a chain of six artifacts, each derived from the one below', () => {
  const CHAIN = 6;
  let root: string;
  const chain: string[] = [];

  beforeAll(async () => {
    root = await entry('user:chain');
    let below = root;
    for (let i = 0; i < CHAIN; i++) {
      below = await artifact([below]);
      chain.push(below);
    }
  });

  it('touching the subject gives every link at its depth, 1 to 6', async () => {
    const t = await tv.app.artifacts.touching('user:chain');
    expect(t).toEqual(chain.map((artifactId, i) => ({ artifactId, depth: i + 1 })));
  });

  it("the top's closure walks down the chain to the entry at depth 6, with one subject", async () => {
    const top = chain.at(-1)!;
    const { nodes, subjects } = await tv.app.artifacts.provenance(top);
    const expected = [
      ...chain
        .slice(0, -1)
        .reverse()
        .map((id, i) => ({ id, type: 'artifact', depth: i + 1 })),
      { id: root, type: 'entry', depth: CHAIN },
    ];
    expect(nodes).toEqual(expected);
    expect(subjects).toEqual([hashOf('user:chain')]);
  });

  it("the bottom link's closure is only the entry", async () => {
    expect(await tv.app.artifacts.provenance(chain[0]!)).toEqual({ nodes: [{ id: root, type: 'entry', depth: 1 }], subjects: [hashOf('user:chain')] });
  });

  it('a write over the top of the chain answers one subject', async () => {
    const again = await write([chain.at(-1)!]);
    expect(again.subjects).toBe(1);
  });
});

describe('an artifact with several hundred sources from many subjects', () => {
  const SUBJECTS = 60;
  const PER_SUBJECT = 6;
  const subjectName = (i: number) => `user:many-${i}`;
  let entries: string[] = [];
  let written: { artifactId: string; subjects: number };

  beforeAll(async () => {
    const perSubject = await Promise.all(
      Array.from({ length: SUBJECTS }, async (_, s) => {
        const ids: string[] = [];
        for (let j = 0; j < PER_SUBJECT; j++) ids.push(await entry(subjectName(s), `subject ${s} note ${j}.`));
        return ids;
      }),
    );
    entries = perSubject.flat();
    written = await write(entries, 'digest');
  });

  it('the write answers the exact number of distinct subjects', () => {
    expect(entries).toHaveLength(SUBJECTS * PER_SUBJECT);
    expect(written.subjects).toBe(SUBJECTS);
  });

  it('the closure holds every source once, at depth 1, and names every subject', async () => {
    const { nodes, subjects } = await tv.app.artifacts.provenance(written.artifactId);
    expect(nodes).toHaveLength(SUBJECTS * PER_SUBJECT);
    expect(new Set(nodes.map((n) => n.id))).toEqual(new Set(entries));
    expect(nodes.every((n) => n.type === 'entry' && n.depth === 1)).toBe(true);
    expect(subjects).toEqual(Array.from({ length: SUBJECTS }, (_, i) => hashOf(subjectName(i))).sort());
  });

  it('a summary of that digest and one more subject counts one more', async () => {
    const extra = await entry('user:many-extra');
    expect((await write([written.artifactId, extra])).subjects).toBe(SUBJECTS + 1);
  });

  it('every one of the subjects is touched by the digest at depth 1', async () => {
    for (const s of [0, 17, SUBJECTS - 1]) {
      expect((await touching(subjectName(s)))[written.artifactId]).toBe(1);
    }
  });

  it('naming a source twice counts it once', async () => {
    const dup = await write([entries[0]!, entries[0]!, entries[1]!]);
    const { nodes } = await tv.app.artifacts.provenance(dup.artifactId);
    expect(nodes.map((n) => n.id).sort()).toEqual([entries[0]!, entries[1]!].sort());
    expect(dup.subjects).toBe(1);
  });
});

describe('a subject that touches nothing', () => {
  it('a subject with entries but no artifact over them touches no artifact', async () => {
    await entry('user:lonely');
    await entry('user:lonely');
    expect(await tv.app.artifacts.touching('user:lonely')).toEqual([]);
  });

  it('a subject the vault has never seen touches no artifact', async () => {
    expect(await tv.app.artifacts.touching('user:never-seen')).toEqual([]);
  });
});

describe('mixed subjects: only some artifacts touch the subject being erased', () => {
  let onlyGone: string, onlyKept: string, both: string, aboveKept: string, aboveBoth: string;

  beforeAll(async () => {
    const gone = await entry('user:mixed-gone');
    const kept = await entry('user:mixed-kept');
    const kept2 = await entry('user:mixed-kept');
    onlyGone = await artifact([gone]);
    onlyKept = await artifact([kept, kept2]);
    both = await artifact([gone, kept]);
    aboveKept = await artifact([onlyKept], 'digest');
    aboveBoth = await artifact([both, onlyKept], 'digest');
  });

  it('the erased subject is touched by exactly the artifacts whose closure holds its entry', async () => {
    expect(await touching('user:mixed-gone')).toEqual({ [onlyGone]: 1, [both]: 1, [aboveBoth]: 2 });
  });

  it('the other subject is touched by its own artifacts, and not by the one holding only the erased subject', async () => {
    expect(await touching('user:mixed-kept')).toEqual({ [onlyKept]: 1, [both]: 1, [aboveKept]: 2, [aboveBoth]: 2 });
  });

  it('subject sets follow the closure: two for the artifacts over both, one for the others', async () => {
    const gone = hashOf('user:mixed-gone');
    const kept = hashOf('user:mixed-kept');
    expect((await tv.app.artifacts.provenance(onlyGone)).subjects).toEqual([gone]);
    expect((await tv.app.artifacts.provenance(onlyKept)).subjects).toEqual([kept]);
    expect((await tv.app.artifacts.provenance(aboveKept)).subjects).toEqual([kept]);
    expect((await tv.app.artifacts.provenance(both)).subjects).toEqual([gone, kept].sort());
    expect((await tv.app.artifacts.provenance(aboveBoth)).subjects).toEqual([gone, kept].sort());
  });
});

describe(`the height limit (MAX_HEIGHT = ${MAX_HEIGHT})`, () => {
  let root: string;
  const chain: string[] = [];

  beforeAll(async () => {
    root = await entry('user:tall');
    let below = root;
    for (let i = 0; i < MAX_HEIGHT; i++) {
      below = await artifact([below]);
      chain.push(below);
    }
  });

  it(`a chain exactly ${MAX_HEIGHT} artifacts tall is accepted, and its closure reaches the entry at depth ${MAX_HEIGHT}`, async () => {
    expect(chain).toHaveLength(MAX_HEIGHT);
    const { nodes, subjects } = await tv.app.artifacts.provenance(chain.at(-1)!);
    expect(nodes).toHaveLength(MAX_HEIGHT);
    expect(nodes.at(-1)).toEqual({ id: root, type: 'entry', depth: MAX_HEIGHT });
    expect(subjects).toEqual([hashOf('user:tall')]);
    const t = await tv.app.artifacts.touching('user:tall');
    expect(t).toHaveLength(MAX_HEIGHT);
    expect(t.at(-1)).toEqual({ artifactId: chain.at(-1), depth: MAX_HEIGHT });
  });

  it('one more level is refused with validation_failed, and nothing is written', async () => {
    const before = await artifactRows();
    await expect(write([chain.at(-1)!])).rejects.toMatchObject({ code: 'validation_failed' });
    expect(await artifactRows()).toBe(before);
  });

  it('it is refused also when the tall artifact is cited next to an entry', async () => {
    await expect(write([root, chain.at(-1)!])).rejects.toMatchObject({ code: 'validation_failed' });
  });

  it('citing the second-highest link is still accepted (height counts the longest path, not the sources)', async () => {
    await expect(write([chain.at(-2)!, root])).resolves.toMatchObject({ version: 1, subjects: 1 });
  });
});
