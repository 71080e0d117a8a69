/** The comparison form (src/vectors/fold.ts): disguises a reader cannot see fold to the plain text. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { tokenize } from '../../src/vectors/embedder.js';
import { comparisonForm, unmask } from '../../src/vectors/fold.js';
import { randomBytes } from '../../src/crypto/index.js';
import { ShingleHasher } from '../../src/vectors/shingles.js';

const plain = "Walter keeps the vault combination 7741 inside his grandmother's cookbook.";

describe('comparisonForm', () => {
  it('drops default-ignorable code points: zero-width space and joiners, soft hyphen, word joiner, variation selector, bidi controls, BOM', () => {
    const disguised = "Wal\u200bter ke\u00adeps the va\u200dult com\u2060bination 77\u200c41 in\ufe0fside his \u202egrandmother\u202c's cook\ufeffbook.";
    expect(comparisonForm(disguised)).toBe(comparisonForm(plain));
  });

  it('folds Cyrillic and Greek look-alikes to the Latin letters they imitate, and NFKC forms (fullwidth, mathematical) to plain ones', () => {
    expect(tokenize('Wаltеr kееps thе vаult соmbіnаtіоn')).toEqual(tokenize('Walter keeps the vault combination'));
    expect(tokenize('ΤΗΕ ΚΕΥ ΒΟΧ')).toEqual(['the', 'key', 'box']);
    expect(tokenize('ｃｏｏｋｂｏｏｋ 𝐜𝐨𝐨𝐤𝐛𝐨𝐨𝐤 ⅽооkbооk')).toEqual(['cookbook', 'cookbook', 'cookbook']);
  });

  it('keeps ASCII a fixed point: m, l, I, 0 and 1 are not folded to rn, l, O as the raw skeleton does', () => {
    expect(comparisonForm('Mom filled 10 boxes in 2001, I think')).toBe('mom filled 10 boxes in 2001, i think');
    fc.assert(
      fc.property(
        fc.string({ unit: fc.constantFrom(...'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ!?,;: \'"') }),
        (s) => comparisonForm(s) === s.toLowerCase(),
      ),
    );
  });

  it('joins a number whatever its separators: spaces, dashes, dots, brackets, or none', () => {
    const forms = [
      '+44 20 7946 0958',
      '442079460958',
      '44-20-7946-0958',
      '44.20.7946.0958',
      '+44 (20) 7946 0958',
      '44\u201320\u20137946\u20130958',
      '４４ ２０ ７９４６ ０９５８',
    ];
    for (const f of forms) expect(tokenize(`call ${f} now`), f).toEqual(['call', '442079460958', 'now']);
    // a number beside words stays apart from them; a group that is part of a word is not a number's group
    expect(tokenize('room 12, floor 3')).toEqual(['room', '12', 'floor', '3']);
    expect(tokenize('user:f1 0, A4 20, at 10 30pm')).toEqual(['user', 'f1', '0', 'a4', '20', 'at', '10', '30pm']);
  });

  it('gives a disguised copy the same keyed shingles as the plain text', () => {
    const hasher = new ShingleHasher(randomBytes(32));
    const disguised = [...plain]
      .map((c) => ({ a: 'а', e: 'е', o: 'о', c: 'с', i: 'і' })[c] ?? c)
      .join('')
      .replace(/(\w)(\w)/g, '$1\u00ad$2');
    expect(hasher.of(disguised)).toEqual(hasher.of(plain));
    hasher.destroy();
  });

  it('unmask keeps case and accents, and undoes only the disguises (what an external embedding model is sent)', () => {
    expect(unmask('Café Wаltеr\u200b 42')).toBe('Café Walter 42');
    expect(unmask(plain)).toBe(plain);
  });
});
