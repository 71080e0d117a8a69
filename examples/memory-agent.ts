/**
 * A small LangGraph.js agent with long-term memory in a store — the agent of
 * `agent-memory.ts`, also driven by the tests. Its "model" is a deterministic stand-in
 * (no network, no weights): "remember …" stores the fact as a memory of the user;
 * anything else is answered from the memories recalled for it.
 *
 * Memories live under the namespace [user, 'memories'] — the user id as a namespace
 * label (`encodeSubjectLabel`: ids such as `user:42` or an e-mail hold `:` and `.`, which
 * LangGraph refuses in labels) — so with `LetheStore({ subjectLabel: 0 })` each user is
 * a lethe subject: erasing the user erases every memory the agent kept.
 */
import { createHash } from 'node:crypto';
import { Annotation, type BaseStore, END, type LangGraphRunnableConfig, START, StateGraph } from '@langchain/langgraph';
import { encodeSubjectLabel } from '../src/client/langgraph.js';

export const AgentState = Annotation.Root({
  user: Annotation<string>(),
  message: Annotation<string>(),
  /** The memories recalled for this message, best first. */
  recalled: Annotation<string[]>(),
  reply: Annotation<string>(),
});

type State = typeof AgentState.State;

/** The namespace of a user's memories: the user id (a lethe subject id) as its first label. */
export const memories = (user: string): string[] => [encodeSubjectLabel(user), 'memories'];

/** A memory's key: the same fact is the same memory. */
export const memoryKey = (fact: string): string => `memory-${createHash('sha256').update(fact.trim().toLowerCase()).digest('hex').slice(0, 16)}`;

const REMEMBER = /^remember(?: that)?[:,]?\s+(.+)$/is;

function storeOf(config: LangGraphRunnableConfig): BaseStore {
  if (!config.store) throw new Error('the agent needs a store: compile({ store })');
  return config.store;
}

/** The stand-in for a model: deterministic, answers only from what it is given. */
function model(message: string, recalled: readonly string[]): { remember?: string; reply: string } {
  const fact = REMEMBER.exec(message.trim())?.[1];
  if (fact) return { remember: fact.trim(), reply: `Noted: ${fact.trim()}` };
  if (recalled.length === 0) return { reply: "I don't remember anything about you." };
  return { reply: `From what you told me: ${recalled.join('; ')}` };
}

/** The agent graph: recall (search the user's memories), then respond (and store a new memory). */
export function buildMemoryAgent(store: BaseStore) {
  return new StateGraph(AgentState)
    .addNode('recall', async (state: State, config: LangGraphRunnableConfig) => {
      if (REMEMBER.test(state.message.trim())) return { recalled: [] };
      const found = await storeOf(config).search(memories(state.user), { query: state.message, limit: 3 });
      return { recalled: found.map((item) => String(item.value.text)) };
    })
    .addNode('respond', async (state: State, config: LangGraphRunnableConfig) => {
      const answer = model(state.message, state.recalled ?? []);
      if (answer.remember)
        await storeOf(config).put(memories(state.user), memoryKey(answer.remember), { text: answer.remember, saidAt: new Date().toISOString() });
      return { reply: answer.reply };
    })
    .addEdge(START, 'recall')
    .addEdge('recall', 'respond')
    .addEdge('respond', END)
    .compile({ store });
}

export type MemoryAgent = ReturnType<typeof buildMemoryAgent>;

/** One turn: the user says `message`, the agent replies. */
export async function ask(agent: MemoryAgent, user: string, message: string): Promise<string> {
  const out = await agent.invoke({ user, message });
  return out.reply;
}
