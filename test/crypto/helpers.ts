/**
 * Shared helpers for the crypto-core tests. Not a test file itself (vitest only
 * collects *.test.ts).
 */
import { expect } from 'vitest';
import type { ErrorCode } from '../../src/errors.js';
import { LetheError } from '../../src/errors.js';

/** Every code an envelope that fails to open is allowed to report. */
export const OPEN_FAILURE_CODES: readonly ErrorCode[] = ['envelope_malformed', 'envelope_unsupported', 'decrypt_failed', 'key_commitment_mismatch'];

export function hex(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('hex');
}

export function unhex(text: string): Uint8Array {
  if (!/^(?:[0-9a-f]{2})*$/i.test(text)) throw new Error(`not hex: ${text.slice(0, 40)}`);
  return new Uint8Array(Buffer.from(text, 'hex'));
}

export function ascii(text: string): Uint8Array {
  return new TextEncoder().encode(text);
}

export function concatBytes(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** `length` bytes counting up from `start` (mod 256): deterministic, distinct keys for tests. */
export function seq(length: number, start = 0): Uint8Array {
  return Uint8Array.from({ length }, (_, i) => (start + i) & 0xff);
}

/**
 * What `fn` threw, or undefined if it returned normally. Never lets the thrown
 * value escape, so callers can assert on its type.
 */
export function thrownBy(fn: () => unknown): { threw: true; error: unknown } | { threw: false } {
  try {
    fn();
  } catch (error) {
    return { threw: true, error };
  }
  return { threw: false };
}

/**
 * Asserts `fn` throws a LetheError whose code is one of `codes`, and returns it.
 * Any other outcome (no throw, a TypeError, a RangeError from a library...) fails.
 */
export function expectLetheError(fn: () => unknown, codes: ErrorCode | readonly ErrorCode[], label = ''): LetheError {
  const allowed = typeof codes === 'string' ? [codes] : codes;
  const outcome = thrownBy(fn);
  if (!outcome.threw) {
    expect.fail(`${label}expected a LetheError (${allowed.join('|')}) but the call returned normally`);
  }
  const { error } = outcome;
  if (!(error instanceof LetheError)) {
    expect.fail(`${label}expected a LetheError (${allowed.join('|')}) but got ${String(error)}`);
  }
  if (!allowed.includes(error.code)) {
    expect.fail(`${label}expected code ${allowed.join('|')} but got ${error.code}: ${error.message}`);
  }
  return error;
}

/**
 * Non-throwing check for property tests: true when `fn` throws a LetheError with
 * one of `codes`. Lets fast-check shrink instead of stopping at the first assert.
 */
export function throwsLetheError(fn: () => unknown, codes: readonly ErrorCode[] = OPEN_FAILURE_CODES): boolean {
  const outcome = thrownBy(fn);
  return outcome.threw && outcome.error instanceof LetheError && codes.includes(outcome.error.code);
}
