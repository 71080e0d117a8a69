/**
 * The checks behind the bad-input middleware, on their own: the depth scan of raw
 * JSON text (strings and escapes do not count, nothing recurses) and the walk that
 * finds NUL or an unpaired surrogate in a value or a key.
 */
import { describe, expect, it } from 'vitest';
import { badCharacter, findBadString, jsonDepthExceeds } from '../../src/http/bad-input.js';

describe('jsonDepthExceeds', () => {
  it('counts arrays and objects, exactly at the limit and one past it', () => {
    expect(jsonDepthExceeds('1', 0)).toBe(false);
    expect(jsonDepthExceeds('[]', 0)).toBe(true);
    expect(jsonDepthExceeds('{"a":[1,{"b":2}]}', 3)).toBe(false);
    expect(jsonDepthExceeds('{"a":[1,{"b":2}]}', 2)).toBe(true);
    expect(jsonDepthExceeds('[[],[],[]]', 2)).toBe(false);
  });

  it('ignores brackets inside strings, escaped quotes and escaped backslashes included', () => {
    expect(jsonDepthExceeds(JSON.stringify({ a: '[[[[{{{{' }), 1)).toBe(false);
    expect(jsonDepthExceeds(JSON.stringify({ a: 'say "[[[["' }), 1)).toBe(false);
    expect(jsonDepthExceeds(JSON.stringify({ a: 'ends in a backslash \\', b: '[[[' }), 1)).toBe(false);
    expect(jsonDepthExceeds(JSON.stringify(['\\"', [[1]]]), 2)).toBe(true);
  });

  it('answers for a million levels without a stack', () => {
    expect(jsonDepthExceeds('['.repeat(1_000_000) + ']'.repeat(1_000_000), 32)).toBe(true);
  });
});

describe('badCharacter and findBadString', () => {
  it('refuses NUL and each kind of unpaired surrogate; passes pairs and everything else', () => {
    expect(badCharacter('a\u0000')).toMatch(/NUL/);
    expect(badCharacter('\uD83D')).toMatch(/surrogate/);
    expect(badCharacter('x\uDE00')).toMatch(/surrogate/);
    expect(badCharacter('\uDE00\uD83D')).toMatch(/surrogate/);
    expect(badCharacter('😀 \u0001 \uFFFF \u{10FFFF}')).toBeUndefined();
  });

  it('names the path of the first bad value or the object holding a bad key', () => {
    expect(findBadString({ a: [1, { b: 'ok' }, 'x\u0000'] }, 'body')).toEqual({ field: 'body.a.2', problem: expect.stringMatching(/NUL/) });
    expect(findBadString({ a: { ['k\uD800']: 1 } }, 'body')).toEqual({ field: 'body.a', problem: expect.stringMatching(/^a key .*surrogate/) });
    expect(findBadString({ a: ['😀'], b: null, c: 1.5, d: true }, 'body')).toBeUndefined();
  });

  it('walks a deep value without recursion', () => {
    let deep: unknown = 'bottom\u0000';
    for (let i = 0; i < 100_000; i++) deep = [deep];
    expect(findBadString(deep, 'body')?.field).toBe(`body${'.0'.repeat(100_000)}`);
  });
});
