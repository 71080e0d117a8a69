/**
 * Mem0's `Memory` on lethe, configured as the example (session.ts) and its test use it:
 * embeddings from lethe's built-in embedder (LangChain's Embeddings shape, which Mem0's
 * 'langchain' embedder takes: no network, no model server), and a stand-in for the LLM
 * that refuses to be called — memories are added with `infer: false` (with `infer: true`
 * Mem0 asks a model to extract the memories from the messages).
 *
 * Mem0 reads MEM0_TELEMETRY when it is first imported: no-telemetry.ts sets it first.
 */
import './no-telemetry.js';
import * as mem0 from 'mem0ai/oss';
import type { Lethe } from '../../src/client/index.js';
import { createLetheMemory, type LetheMemoryOptions } from '../../src/client/mem0.js';
import { BuiltInEmbedder } from '../../src/vectors/builtin-embedder.js';

export { mem0 };

const builtIn = new BuiltInEmbedder();

/** Mem0's embedder config: lethe's built-in embedder. */
export const embedder = {
  provider: 'langchain',
  config: {
    model: {
      embedQuery: async (text: string) => Array.from((await builtIn.embed([text]))[0]!),
      embedDocuments: async (texts: string[]) => (await builtIn.embed(texts)).map((v) => Array.from(v)),
    },
  },
};

/** Mem0's LLM config: no model; asked only by what needs one. */
export const noModel = {
  provider: 'langchain',
  config: {
    model: {
      invoke: async () => {
        throw new Error('no model is configured: add with infer: false (fact extraction needs an LLM)');
      },
    },
  },
};

/** Mem0's Memory with lethe as its vector store (`llm`: Mem0's LLM config, for `infer: true`). */
export function openMemory(lethe: Lethe, options: Omit<LetheMemoryOptions, 'lethe' | 'config'> & { readonly llm?: Record<string, unknown> } = {}) {
  const { llm = noModel, ...rest } = options;
  return createLetheMemory(mem0, { lethe, dimension: builtIn.dimensions, ...rest, config: { embedder, llm } });
}
