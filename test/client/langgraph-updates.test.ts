/**
 * The LangGraph store updating memories as LangGraph's own stores do, against a vault
 * served over real HTTP on PostgreSQL: a re-put is one supersession (the successor
 * stored and the old version forgotten together) with a writer token alone; its erasure
 * completes (the successor is not counted as a copy); and parallel graph nodes writing
 * one key end with one live value, one of those written, and no error.
 */
import { Annotation, END, type LangGraphRunnableConfig, START, StateGraph } from '@langchain/langgraph';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Lethe } from '../../src/client/index.js';
import { encodeSubjectLabel, LetheStore } from '../../src/client/langgraph.js';
import { queryRows } from '../../src/db/client.js';
import { TOKENS } from '../support/vault.js';
import { type ServedVault, serveTestVault } from './served.js';

let v: ServedVault;
let store: LetheStore;

beforeAll(async () => {
  v = await serveTestVault();
  // a writer token alone: updates and deletes need no eraser
  store = new LetheStore({ lethe: new Lethe({ baseUrl: v.baseUrl, tokens: { writer: TOKENS.writer } }), subjectLabel: 1 });
}, 180_000);
afterAll(async () => {
  await v?.close();
});

const tag = () => Math.random().toString(36).slice(2, 8);

/** The subject's live entries holding `key` (one per live version of the item). */
async function liveVersions(subject: string): Promise<number> {
  const [row] = await queryRows<{ n: string }>(
    v.t.app.db.db,
    sql`select count(*) as n from log_entries where subject_hash = ${v.t.app.keys.subjectHash(subject)} and forgotten_by is null`,
  );
  return Number(row!.n);
}

describe('updates through the LangGraph store', () => {
  it('20 sequential updates of one item with near-identical values: each a supersession, no erasure incomplete, one live version', {
    timeout: 600_000,
  }, async () => {
    const subject = `user:lg-upd-${tag()}`;
    const ns = ['memories', encodeSubjectLabel(subject)];
    for (let i = 0; i < 20; i++) await store.put(ns, 'profile', { text: `Ondine Varga keeps a pet ferret named Biscuit, revision ${i}z${tag()}` });
    expect((await store.get(ns, 'profile'))?.value.text).toMatch(/revision 19z/);
    expect(await liveVersions(subject)).toBe(1);
    const erasures = await queryRows<{ erasure_id: string; successor_id: string | null }>(
      v.t.app.db.db,
      sql`select erasure_id, successor_id from erasures where subject_hash = ${v.t.app.keys.subjectHash(subject)}`,
    );
    expect(erasures).toHaveLength(19);
    expect(erasures.every((e) => e.successor_id !== null)).toBe(true);
    // 19 erasures of one subject under CI load: their probes wait for the index in turn (one took over 240 s once)
    const views = await Promise.all(erasures.map((e) => v.t.app.erasures.settle(e.erasure_id, 540_000)));
    expect(views.map((x) => x.status)).toEqual(erasures.map(() => 'completed'));
  });

  it('51 parallel graph nodes writing one key, 20 runs: no error, the final value is one of those written, one live version', {
    timeout: 600_000,
  }, async () => {
    const State = Annotation.Root({ run: Annotation<number>() });
    const subject = `user:lg-par-${tag()}`;
    const ns = ['memories', encodeSubjectLabel(subject)];
    const NODES = 51;
    let graph = new StateGraph(State) as unknown as StateGraph<typeof State.spec, unknown, unknown, string>;
    for (let i = 0; i < NODES; i++) {
      graph = graph.addNode(`n${i}`, async (state: typeof State.State, config: LangGraphRunnableConfig) => {
        await config.store!.put(ns, 'mood', { text: `mood of run ${state.run} from node ${i}` });
        return {};
      }) as typeof graph;
      graph = graph.addEdge(START, `n${i}`).addEdge(`n${i}`, END) as typeof graph;
    }
    const app = graph.compile({ store });
    for (let run = 0; run < 20; run++) {
      await app.invoke({ run });
      const value = (await store.get(ns, 'mood'))?.value.text as string;
      expect(value).toMatch(new RegExp(`^mood of run ${run} from node \\d+$`));
      expect(await liveVersions(subject)).toBe(1);
    }
  });
});
