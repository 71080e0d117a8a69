/**
 * Disguises a reader cannot see (issue 29, M3): what the probe's end-to-end tests and
 * its evaluation set (test/probe-eval) make copies with. Each leaves the text looking
 * the same, or a number reading the same, and changes its code points.
 */

/** Cyrillic letters a reader cannot tell from these Latin ones. */
const CYRILLIC: Readonly<Record<string, string>> = {
  a: 'а', c: 'с', e: 'е', i: 'і', j: 'ј', o: 'о', p: 'р', s: 'ѕ', x: 'х', y: 'у',
  A: 'А', B: 'В', C: 'С', E: 'Е', H: 'Н', I: 'І', J: 'Ј', K: 'К', M: 'М', O: 'О', P: 'Р', S: 'Ѕ', T: 'Т', X: 'Х', Y: 'Ү', W: 'Ԝ',
};

/** The Latin letters `lookAlikes` replaces (none of them is left in its output). */
export const REPLACED_LATIN = new RegExp(`[${Object.keys(CYRILLIC).join('')}]`);

/** `mark` after the first letter of every word of two or more letters (a zero-width space: U+200B). */
export function insideEveryWord(text: string, mark = '\u200b'): string {
  return text.replace(/(?<!\p{L})(\p{L})(?=\p{L})/gu, `$1${mark}`);
}

/** Latin letters replaced by their Cyrillic look-alikes. */
export function lookAlikes(text: string): string {
  return [...text].map((c) => CYRILLIC[c] ?? c).join('');
}

/** A soft hyphen (U+00AD) after every second letter of a word, where two more follow. */
export function softHyphens(text: string): string {
  return text.replace(/(\p{L}{2})(?=\p{L}{2})/gu, '$1\u00ad');
}

/** Ways of writing a number's digit groups: spaced with a plus, run together, dashed, dotted. */
export const NUMBER_FORMATS: ReadonlyArray<(groups: readonly string[]) => string> = [
  (g) => `+${g.join(' ')}`,
  (g) => g.join(''),
  (g) => g.join('-'),
  (g) => g.join('.'),
];
