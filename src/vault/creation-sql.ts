/** The creation statement's SQL pieces: the subjects' live keys (one index lookup each), the refusals' relation with no guard, and the rows they answer parsed back. */
import { type SQL, sql } from 'drizzle-orm';
import type { LiveKeyRow } from './creation-types.js';

/**
 * The live key rows of the subjects in `input` (a relation with a bytea `subject_hash`):
 * one index lookup per subject (the lateral subquery with its limit — subject_hash is
 * unique among heads — keeps the planner off a scan of subject_keys, whatever it guesses of the
 * input's size).
 */
export function existingAmong(input: SQL): SQL {
  return sql`select sk.subject_hash, sk.key_id, sk.state, sk.created_at, sk.epoch, sk.wrapped_dek
               from ${input} i cross join lateral (select * from subject_keys k where k.subject_hash = i.subject_hash and k.head limit 1) sk`;
}

/** existingAmong as plain columns named as RawExisting. */
export function existingRows(input: SQL): SQL {
  return sql`select encode(subject_hash, 'hex') as h, key_id as k, state as s, created_at as c, epoch as e, encode(wrapped_dek, 'hex') as w
               from (${existingAmong(input)}) sk`;
}

export const existingJson = sql`select json_agg(json_build_object('h', encode(subject_hash, 'hex'), 'k', key_id, 's', state, 'c', created_at, 'e', epoch, 'w', encode(wrapped_dek, 'hex'))) from existing`;

export const refusedJson = sql`select json_agg(json_build_object('h', encode(subject_hash, 'hex'), 'g', g, 'c', code)) from refused`;

export interface RawExisting {
  readonly h: string;
  readonly k: string;
  readonly s: 'active' | 'fenced';
  readonly c: string | Date;
  readonly e: number;
  readonly w: string;
}

export interface RawRefused {
  readonly h: string;
  readonly g: number;
  readonly c: string;
}

export function parseExisting(r: RawExisting): LiveKeyRow {
  return { keyId: r.k, state: r.s, createdAt: new Date(r.c), epoch: Number(r.e), wrappedDek: new Uint8Array(Buffer.from(r.w, 'hex')) };
}

/** Guards' refusals as the statement's `refused` relation when there is no guard: none. */
export const NO_REFUSALS: SQL = sql`select null::bytea as subject_hash, 0 as g, null::text as code where false`;
