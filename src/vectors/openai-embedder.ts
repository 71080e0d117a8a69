/**
 * Embedder adapter for an OpenAI-compatible `/v1/embeddings` endpoint (OpenAI, vLLM,
 * Ollama, llama.cpp server, text-embeddings-inference...). The text leaves the
 * process: point it only at an endpoint the operator trusts with subject content.
 */
import { LetheError } from '../errors.js';
import { type Embedder, normalize } from './embedder.js';
import { unmask } from './fold.js';

export interface OpenAiEmbedderOptions {
  /** Base URL, e.g. http://127.0.0.1:11434 (the adapter appends /v1/embeddings). */
  readonly url: string;
  readonly model: string;
  readonly apiKey?: string | undefined;
  /** The model's output dimensions (every answer is checked against it). */
  readonly dimensions: number;
  readonly timeoutMs?: number;
  readonly fetch?: typeof fetch;
}

export class OpenAiEmbedder implements Embedder {
  readonly model: string;
  readonly dimensions: number;
  readonly #o: OpenAiEmbedderOptions;

  constructor(options: OpenAiEmbedderOptions) {
    this.#o = options;
    this.model = `openai:${options.model}`;
    this.dimensions = options.dimensions;
  }

  async embed(texts: readonly string[]): Promise<Float32Array[]> {
    if (texts.length === 0) return [];
    const doFetch = this.#o.fetch ?? fetch;
    let response: Response;
    try {
      response = await doFetch(`${this.#o.url.replace(/\/+$/, '')}/v1/embeddings`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          ...(this.#o.apiKey ? { authorization: `Bearer ${this.#o.apiKey}` } : {}),
        },
        // disguises undone (fold.ts): a look-alike copy is embedded as the text it imitates
        body: JSON.stringify({ model: this.#o.model, input: texts.map(unmask) }),
        signal: AbortSignal.timeout(this.#o.timeoutMs ?? 30_000),
      });
    } catch (e) {
      throw new LetheError('unavailable', 'the embeddings endpoint did not answer', { cause: e });
    }
    // The body may echo the input: never put it in an error.
    if (!response.ok) throw new LetheError('unavailable', `the embeddings endpoint answered ${response.status}`);
    const body = (await response.json().catch(() => undefined)) as { data?: Array<{ index?: number; embedding?: unknown }> } | undefined;
    const data = body?.data;
    if (!Array.isArray(data) || data.length !== texts.length) {
      throw new LetheError('unavailable', 'the embeddings endpoint answered with the wrong number of vectors');
    }
    const out = new Array<Float32Array>(texts.length);
    data.forEach((item, i) => {
      if (typeof item !== 'object' || item === null) throw new LetheError('unavailable', 'the embeddings endpoint answered an item that is not an object');
      const at = item.index === undefined ? i : item.index;
      if (!Number.isInteger(at)) throw new LetheError('unavailable', 'the embeddings endpoint answered a bad index');
      const values = item.embedding;
      if (!Array.isArray(values) || values.length !== this.dimensions || !values.every((v) => typeof v === 'number' && Number.isFinite(v))) {
        throw new LetheError('unavailable', `the embeddings endpoint answered a vector that is not ${this.dimensions} finite numbers`);
      }
      if (at < 0 || at >= texts.length || out[at]) throw new LetheError('unavailable', 'the embeddings endpoint answered a bad index');
      out[at] = normalize(Float32Array.from(values as number[]));
    });
    if (out.some((v) => v === undefined) || out.length !== texts.length)
      throw new LetheError('unavailable', 'the embeddings endpoint left an input without a vector');
    return out;
  }
}
