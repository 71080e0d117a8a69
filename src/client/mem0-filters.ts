/**
 * Mem0's metadata filters, applied to a memory's payload as Mem0's own in-memory store
 * applies them (MemoryVectorStore's filterVector): a plain value is equality ("*": any
 * value), an array a list of values, an object names operators (eq, ne, gt, gte, lt, lte,
 * in, nin, contains, icontains), `AND`/`$and` conditions all of which hold, `OR`/`$or`
 * alternatives, `NOT`/`$not` conditions none of which may hold. An unknown operator is an
 * error, never a filter silently ignored.
 */
import { LetheError } from '../errors.js';

export type Mem0Filters = Record<string, unknown>;

const OPERATORS = ['eq', 'ne', 'gt', 'gte', 'lt', 'lte', 'in', 'nin', 'contains', 'icontains'] as const;

function compare(a: unknown, b: unknown): number | undefined {
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  if (typeof a === 'string' && typeof b === 'string') return a < b ? -1 : a > b ? 1 : 0;
  return undefined;
}

function holds(value: unknown, operator: string, operand: unknown): boolean {
  const order = compare(value, operand);
  switch (operator) {
    case 'eq':
      return value === operand;
    case 'ne':
      return value !== operand;
    case 'gt':
      return order !== undefined && order > 0;
    case 'gte':
      return order !== undefined && order >= 0;
    case 'lt':
      return order !== undefined && order < 0;
    case 'lte':
      return order !== undefined && order <= 0;
    case 'in':
      return Array.isArray(operand) && operand.includes(value);
    case 'nin':
      return !Array.isArray(operand) || !operand.includes(value);
    case 'contains':
      return typeof value === 'string' && typeof operand === 'string' && value.includes(operand);
    case 'icontains':
      return typeof value === 'string' && typeof operand === 'string' && value.toLowerCase().includes(operand.toLowerCase());
    default:
      throw new LetheError('validation_failed', `unsupported Mem0 filter operator "${operator}" (one of ${OPERATORS.join(', ')})`);
  }
}

function condition(payload: Record<string, unknown>, key: string, wanted: unknown): boolean {
  const value = payload[key];
  if (wanted === '*') return true;
  if (Array.isArray(wanted)) return wanted.includes(value);
  if (wanted !== null && typeof wanted === 'object') return Object.entries(wanted).every(([op, operand]) => holds(value, op, operand));
  return value === wanted;
}

const LOGICAL: Record<string, 'AND' | 'OR' | 'NOT'> = { AND: 'AND', $and: 'AND', OR: 'OR', $or: 'OR', NOT: 'NOT', $not: 'NOT' };

/** Whether `payload` passes `filters` (undefined values are no condition). */
export function passesMem0Filters(payload: Record<string, unknown>, filters: Mem0Filters | undefined): boolean {
  for (const [key, wanted] of Object.entries(filters ?? {})) {
    if (wanted === undefined) continue;
    const logical = Object.hasOwn(LOGICAL, key) ? LOGICAL[key] : undefined;
    if (logical !== undefined) {
      if (!Array.isArray(wanted)) throw new LetheError('validation_failed', `the ${key} filter takes a list of filters`);
      const each = (wanted as Mem0Filters[]).map((f) => passesMem0Filters(payload, f));
      if (logical === 'AND' ? !each.every(Boolean) : logical === 'OR' ? !each.some(Boolean) : each.some(Boolean)) return false;
    } else if (!condition(payload, key, wanted)) return false;
  }
  return true;
}
