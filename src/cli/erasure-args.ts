/**
 * What the erasure commands (erasure.ts, erasure-dismissals.ts, erasure-documents.ts)
 * share: their exit codes and the checks of their arguments, each an exit 2 naming what
 * was wrong before any request.
 */
import type { z } from 'zod';
import { DISMISSAL_ID_PATTERN, ERASURE_ID_PATTERN } from '../erasure/request.js';
import { idRule } from '../ids.js';
import { ExitError } from './shared.js';

/** `lethe erase` and `lethe erasure watch` exit codes. */
export const ERASE_EXIT = { completed: 0, lost: 1, input: 2, incomplete: 3, failed: 4 } as const;

export function checkErasureId(erasureId: string): string {
  if (!ERASURE_ID_PATTERN.test(erasureId)) throw new ExitError(`an erasure id is ${idRule('ers')}`, ERASE_EXIT.input);
  return erasureId;
}

export function checkDismissalId(dismissalId: string): string {
  if (!DISMISSAL_ID_PATTERN.test(dismissalId)) throw new ExitError(`a dismissal id is ${idRule('dsm')}`, ERASE_EXIT.input);
  return dismissalId;
}

/** A body checked by the service's own schema, or exit 2 naming the flag. */
export function checked<T>(schema: z.ZodType<T>, value: unknown, flag: string): T {
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw new ExitError(`${flag}: ${parsed.error.issues[0]?.message ?? 'not valid'}`, ERASE_EXIT.input);
  return parsed.data;
}
