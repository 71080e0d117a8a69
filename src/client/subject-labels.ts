/**
 * Subject ids as LangGraph namespace labels (the LangGraph store, langgraph.ts): a
 * documented, reversible encoding. LangGraph refuses `.` and `:` in labels, and subject
 * ids such as `user:42` or `ana@example.com` hold them.
 */
import { InvalidNamespaceError } from '@langchain/langgraph-checkpoint';
import { LetheError } from '../errors.js';

/** The characters a subject id may hold that a namespace label may not (LangGraph refuses `.` and `:`), with `/`, `%` and NUL: percent-encoded. */
const LABEL_ESCAPES: Readonly<Record<string, string>> = { '%': '%25', '.': '%2E', ':': '%3A', '/': '%2F', '\0': '%00' };
const LABEL_UNESCAPES: Readonly<Record<string, string>> = Object.fromEntries(Object.entries(LABEL_ESCAPES).map(([c, e]) => [e, c]));

/**
 * A subject id as a namespace label: `%` `.` `:` `/` (and NUL) percent-encoded
 * (`%25 %2E %3A %2F %00`), every other character as it is — `user:42` → `user%3A42`,
 * `ana@example.com` → `ana@example%2Ecom`. Reversible: `decodeSubjectLabel` answers the
 * subject id again.
 */
export function encodeSubjectLabel(subject: string): string {
  if (subject === '') throw new LetheError('validation_failed', 'a subject id is not empty');
  return subject.replace(/[%.:/\0]/g, (c) => LABEL_ESCAPES[c]!);
}

/** The subject id a namespace label holds (`encodeSubjectLabel`'s inverse); a label it could not have written is refused. */
export function decodeSubjectLabel(label: string): string {
  const subject = label.replace(/%[0-9A-Fa-f]{2}/g, (e) => LABEL_UNESCAPES[e.toUpperCase()] ?? e);
  if (subject === '' || encodeSubjectLabel(subject) !== label) {
    throw new InvalidNamespaceError(
      `the namespace label ${JSON.stringify(label)} is not a subject label: write it with encodeSubjectLabel (% . : / as %25 %2E %3A %2F)`,
    );
  }
  return subject;
}
