/** What a search (`lethe.search`, `entries.searchItems`) is asked: its scope, ranking, time range and page. */
/** What `entries.searchItems` keeps, and which page. */
export interface ItemSearchOptions {
  readonly query?: string;
  readonly namespaces?: ReadonlyArray<readonly string[]>;
  readonly metadata?: Record<string, unknown>;
  readonly limit?: number;
  readonly offset?: number;
}

/** How a search ranks: cosine and BM25 fused (hybrid, the default), or one of them. */
export type SearchMode = 'hybrid' | 'vector' | 'lexical';
/** A search's k (default 10), ranking and time range. */
export interface SearchOptions {
  readonly k?: number;
  readonly mode?: SearchMode;
  readonly since?: string;
  readonly until?: string;
  readonly timeField?: string;
}
/** Whose records a search may return: exactly one of the three. */
export type SearchScope = { readonly subject: string } | { readonly subjects: readonly string[] } | { readonly allSubjects: true };
