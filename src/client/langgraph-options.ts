/** How a LetheStore (langgraph.ts) is configured, and where it says an item lives. */
import type { Lethe } from './lethe.js';
import type { LetheWriter } from './writer.js';

export interface LetheStoreOptions {
  /** The client, with a writer token (appends, updates, reads, search, forgetting its own entries); an eraser token only to forget other tokens' entries. */
  readonly lethe: Lethe;
  /**
   * Which label of a namespace is the subject (0-based): `1` for `['memories', userLabel]`.
   * The label is decoded with `decodeSubjectLabel` (write it with `encodeSubjectLabel`).
   * Give this or `subjectOf`: the store refuses to start without one.
   */
  readonly subjectLabel?: number;
  /** The subject of a namespace; undefined when a prefix does not name one. Give this or `subjectLabel`. */
  readonly subjectOf?: (namespace: readonly string[]) => string | undefined;
  /**
   * What an item's entry texts (what search matches) are made of, as LangGraph index
   * paths (`"text"`, `"notes[*].content"`, `"$"` for the whole value as JSON): one
   * entry per path, scored on its own (an item answers its best field's score).
   * Default: every string in the value, in order, one per line, as one field. A put's
   * `index` overrides it; `index: false` stores the item unindexed (found by listing,
   * and after the scored items of a query, without a score).
   */
  readonly fields?: readonly string[];
  /** Append through this writer (it seals in this process) instead of the service. */
  readonly writer?: LetheWriter;
  /** Subjects prefix-less searches cover, and a `writer` store's `listNamespaces` (the ones this store touches are added as it goes). */
  readonly subjects?: Iterable<string>;
  /** The kind of the items' entries (default `langgraph-item`). */
  readonly kind?: string;
}

/** Where an item lives in lethe: its subject and the entries holding its current value (one per indexed field). */
export interface ItemLocation {
  readonly subject: string;
  /** The first of `entryIds`. */
  readonly entryId: string;
  readonly entryIds: readonly string[];
}
