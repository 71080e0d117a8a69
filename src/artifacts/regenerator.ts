/**
 * The regenerator port: writes an artifact's next version from its surviving
 * sources. It is never shown the previous version's text — that text may carry the
 * erased content the regeneration exists to remove.
 *
 * The built-in extractive regenerator is deterministic and needs nothing installed:
 * it keeps each surviving source's first sentences, in source order, without
 * repeats, each source within an equal share of the artifact size limit (a first
 * sentence longer than its share is cut at a character boundary). What it keeps is exactly what the sources
 * say; it never paraphrases, so it cannot launder erased content it was not given.
 */
import type { ArtifactKind } from '../db/schema.js';
import { LetheError } from '../errors.js';

export const MAX_ARTIFACT_TEXT_BYTES = 64 * 1024;

export interface RegenerationSource {
  readonly id: string;
  readonly type: 'entry' | 'artifact';
  readonly text: string;
}

export interface RegenerationInput {
  readonly artifactId: string;
  readonly kind: ArtifactKind;
  readonly sources: readonly RegenerationSource[];
}

export interface Regenerator {
  /** Recorded as the new version's generator. */
  readonly name: string;
  regenerate(input: RegenerationInput): Promise<string>;
}

export function sentences(text: string): string[] {
  return text
    .split(/(?<=[.!?])\s+|\n+/u)
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
}

export class ExtractiveRegenerator implements Regenerator {
  readonly name: string;
  readonly #perSource: number;

  constructor(options: { sentencesPerSource?: number } = {}) {
    this.#perSource = options.sentencesPerSource ?? 4;
    if (!Number.isInteger(this.#perSource) || this.#perSource < 1) throw new LetheError('validation_failed', 'sentencesPerSource must be a positive integer');
    this.name = `lethe-extractive-v1-${this.#perSource}`;
  }

  async regenerate(input: RegenerationInput): Promise<string> {
    const seen = new Set<string>();
    const kept: string[] = [];
    let bytes = 0;
    // every source gets a fair share of the size limit, so one huge source cannot crowd out the rest
    const share = Math.floor(MAX_ARTIFACT_TEXT_BYTES / Math.max(1, input.sources.length));
    for (const source of input.sources) {
      let taken = 0;
      let used = 0;
      for (const sentence of sentences(source.text)) {
        if (taken >= this.#perSource) break;
        const norm = sentence.toLowerCase().replace(/\s+/g, ' ');
        if (seen.has(norm)) continue;
        const separator = kept.length > 0 ? 1 : 0;
        // separators count against the whole limit, not against a source's share
        const room = Math.min(share - used, MAX_ARTIFACT_TEXT_BYTES - bytes - separator);
        if (room <= 0) break;
        let text = sentence;
        if (Buffer.byteLength(text, 'utf8') > room) {
          if (taken > 0) break; // the source already contributed; stop at a sentence boundary
          text = truncateUtf8(text, room); // its first sentence alone is too long: keep what fits
          if (text.length === 0) break;
        }
        const size = Buffer.byteLength(text, 'utf8');
        seen.add(norm);
        kept.push(text);
        bytes += size + separator;
        used += size;
        taken++;
      }
    }
    return kept.join(' ');
  }
}

/** The longest prefix of `text` that is at most `maxBytes` of UTF-8, cut between characters. */
function truncateUtf8(text: string, maxBytes: number): string {
  let out = Buffer.from(text, 'utf8').subarray(0, maxBytes).toString('utf8');
  while (out.endsWith('\uFFFD') && !text.startsWith(out)) out = out.slice(0, -1);
  return out.trimEnd();
}

export interface ChatRegeneratorOptions {
  /** Base URL; the adapter appends /v1/chat/completions. */
  readonly url: string;
  readonly model: string;
  readonly apiKey?: string | undefined;
  readonly timeoutMs?: number;
  readonly fetch?: typeof fetch;
}

/**
 * Adapter for an OpenAI-compatible chat-completions endpoint. The sources leave the
 * process: point it only at an endpoint the operator trusts with subject content.
 */
export class ChatRegenerator implements Regenerator {
  readonly name: string;
  readonly #o: ChatRegeneratorOptions;

  constructor(options: ChatRegeneratorOptions) {
    this.#o = options;
    this.name = `openai-chat:${options.model}`;
  }

  async regenerate(input: RegenerationInput): Promise<string> {
    const doFetch = this.#o.fetch ?? fetch;
    const listing = input.sources.map((s, i) => `[${i + 1}] (${s.type} ${s.id})\n${s.text}`).join('\n\n');
    let response: Response;
    try {
      response = await doFetch(`${this.#o.url.replace(/\/+$/, '')}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(this.#o.apiKey ? { authorization: `Bearer ${this.#o.apiKey}` } : {}) },
        body: JSON.stringify({
          model: this.#o.model,
          temperature: 0,
          messages: [
            {
              role: 'system',
              content:
                `You write the ${input.kind} of an AI agent's memory from the numbered sources you are given. ` +
                'Use only facts stated in the sources; add nothing, infer nothing about anyone not in them. Answer with the text only.',
            },
            { role: 'user', content: listing },
          ],
        }),
        signal: AbortSignal.timeout(this.#o.timeoutMs ?? 120_000),
      });
    } catch (e) {
      throw new LetheError('unavailable', 'the regeneration endpoint did not answer', { cause: e });
    }
    if (!response.ok) throw new LetheError('unavailable', `the regeneration endpoint answered ${response.status}`);
    const body = (await response.json().catch(() => undefined)) as { choices?: Array<{ message?: { content?: unknown } }> } | undefined;
    const text = body?.choices?.[0]?.message?.content;
    if (typeof text !== 'string' || text.trim().length === 0) throw new LetheError('unavailable', 'the regeneration endpoint answered no text');
    if (Buffer.byteLength(text, 'utf8') > MAX_ARTIFACT_TEXT_BYTES)
      throw new LetheError('unavailable', 'the regeneration endpoint answered more than the artifact size limit');
    return text.trim();
  }
}
