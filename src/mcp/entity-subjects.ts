/**
 * A knowledge-graph entity's name as a lethe subject, and back: `kg:` + the name's UTF-8
 * bytes, each byte outside A-Z a-z 0-9 . _ : @ - written `+HH` (upper-case hex; `+` itself
 * is `+2B`), so the mapping is one-to-one and every subject it makes is a valid subject id
 * (src/ids.ts) when it fits in 200 characters. An empty name, one not in Unicode's NFC (two
 * spellings of one name would be two entities) or ill-formed, or one whose subject would not
 * fit, has no subject.
 */
import { LetheError } from '../errors.js';
import { SUBJECT_ID_PATTERN } from '../ids.js';

/** What every entity subject starts with. */
export const ENTITY_SUBJECT_PREFIX = 'kg:';
/** A subject id's longest (src/ids.ts). */
const MAX_SUBJECT_CHARS = 200;
const KEPT = /^[A-Za-z0-9._:@-]$/;

/** No lone surrogate (String.prototype.isWellFormed, which Node 20's ES2023 typings lack). */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const wellFormed = (name: string) => !LONE_SURROGATE.test(name);

/** The subject of the entity named `name`, or undefined when it has none (empty, or longer than a subject may be). */
export function entitySubjectOrUndefined(name: string): string | undefined {
  // one spelling per name: a name in another Unicode form (or with a lone surrogate) would be another subject
  if (name.length === 0 || !wellFormed(name) || name.normalize('NFC') !== name) return undefined;
  let out = ENTITY_SUBJECT_PREFIX;
  for (const byte of new TextEncoder().encode(name)) {
    const c = String.fromCharCode(byte);
    out += byte < 0x80 && KEPT.test(c) ? c : `+${byte.toString(16).toUpperCase().padStart(2, '0')}`;
    if (out.length > MAX_SUBJECT_CHARS) return undefined;
  }
  return SUBJECT_ID_PATTERN.test(out) ? out : undefined;
}

/** The subject of the entity named `name`; `argument` names where it came from in a refusal (`validation_failed`). */
export function entitySubject(name: string, argument: string): string {
  const subject = entitySubjectOrUndefined(name);
  if (subject !== undefined) return subject;
  throw new LetheError(
    'validation_failed',
    name.length === 0
      ? `${argument}: an entity name must not be empty`
      : !wellFormed(name) || name.normalize('NFC') !== name
        ? `${argument}: the entity name must be well-formed Unicode in NFC (its composed form), so that one name is one entity`
        : `${argument}: the entity name is too long (as a subject, kg: and its UTF-8 bytes with each one outside A-Z a-z 0-9 . _ : @ - written +HH, it must fit in ${MAX_SUBJECT_CHARS} characters)`,
  );
}

/** The name an entity subject stands for, or undefined when `subject` is not one. */
export function entityName(subject: string): string | undefined {
  if (!subject.startsWith(ENTITY_SUBJECT_PREFIX) || !SUBJECT_ID_PATTERN.test(subject)) return undefined;
  const bytes: number[] = [];
  const body = subject.slice(ENTITY_SUBJECT_PREFIX.length);
  for (let i = 0; i < body.length; i++) {
    const c = body[i]!;
    if (c === '+') {
      const hex = body.slice(i + 1, i + 3);
      if (!/^[0-9A-F]{2}$/.test(hex)) return undefined;
      bytes.push(Number.parseInt(hex, 16));
      i += 2;
    } else bytes.push(c.charCodeAt(0));
  }
  if (bytes.length === 0) return undefined;
  try {
    const name = new TextDecoder('utf-8', { fatal: true }).decode(new Uint8Array(bytes));
    // only the one spelling the encoding makes (an escaped byte that needed none is another subject)
    return entitySubjectOrUndefined(name) === subject ? name : undefined;
  } catch {
    return undefined;
  }
}
