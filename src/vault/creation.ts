/**
 * Group commit for key creation. A new key's row and its `key.create` audit row must
 * commit together, and every audited change extends the one audit chain: one
 * transaction per key (lock the head, insert, append, commit) serialized every
 * creation on the head's lock for several round trips. Instead, creations that
 * arrive while a batch is committing wait for the next batch, and a batch is ONE
 * statement, like a lease batch (leases.ts):
 *
 * - a shared lock (FOR SHARE) on the epoch the batch's DEKs were wrapped under, which
 *   must still be the active one (a rotation cannot switch epochs under the batch);
 * - the subjects that already have a live key, and the subjects a creation guard
 *   refuses a key now (the guards' SQL form: `KeyCreationRefusals`);
 * - the audit rows chained onto the head this process expects (compare-and-set,
 *   `AuditLog.casTurn`), set only when the epoch is still active and no subject has
 *   a key or a refusal — and the key rows inserted only when the head moved.
 *
 * When the statement writes nothing it says why: subjects with a key answer it
 * (`existing`), refused subjects their refusal, a switched epoch has the batch's DEKs
 * wrapped again under the new one, a moved head is read again; the rest of the batch
 * tries again. A key inserted meanwhile by another replica for one of the batch's
 * subjects fails the statement on the unique index (nothing is written) and the next
 * attempt sees it. After a few attempts — or always, when a guard has no SQL form —
 * the batch takes the head's lock in a transaction instead, so it always finishes.
 *
 * DEKs are wrapped by each caller before its items join the queue (a provider that
 * fails fails that caller only), and zeroed here unless the caller keeps them.
 */
import { type SQL, sql } from 'drizzle-orm';
import { randomBytes, zeroize } from '../crypto/index.js';
import { type Database, queryPrepared, queryRows } from '../db/client.js';
import { errorCodes, isLetheError, LetheError } from '../errors.js';
import { newId } from '../ids.js';
import type { KeyProvider } from '../keyprovider/provider.js';
import type { AuditEvent, AuditLog } from './audit.js';
import { Batcher } from './batcher.js';
import { hashHex } from './subjects.js';
import { activeEpoch } from './wrapping.js';
import { existingAmong, existingJson, existingRows, parseExisting, type RawExisting, type RawRefused, refusedJson } from './creation-sql.js';
import type { CreationGuards, CreationOutcome, LiveKeyRow } from './creation-types.js';

/** A new head's first sequence number: past the subject's shards' (a head destroyed alone leaves them), else 1. */
const NEXT_SEQ = sql`coalesce((select max(s.next_seq) from subject_keys s where s.subject_hash = i.subject_hash), 1)`;

export { NO_REFUSALS } from './creation-sql.js';
export type { CreationGuards, CreationOutcome, LiveKeyRow } from './creation-types.js';

interface Item {
  readonly subjectHash: Uint8Array;
  readonly hex: string;
  readonly actor: string;
  readonly keyId: string;
  readonly dek: Uint8Array;
  readonly keepDek: boolean;
  epoch: number;
  wrappedDek: Uint8Array;
}

/** What one compare-and-set attempt of a batch found. */
type Attempt =
  | { readonly kind: 'created'; readonly at: Date }
  | { readonly kind: 'answered'; readonly outcomes: Map<Pending, CreationOutcome> }
  | { readonly kind: 'epoch' }
  | { readonly kind: 'raced' }
  | { readonly kind: 'moved' };

/** One creation in the group commit's queue (its identity answers it). */
interface Pending {
  readonly item: Item;
}

type Found = { row: LiveKeyRow } | { refusal: LetheError } | undefined;

/** Keys in one statement: a bulk creation of 10,000 goes in five, so leases and other batches take turns between them. */
const MAX_BATCH = 2000;
/** Compare-and-set attempts before a batch falls back to locking the audit head. */
const CAS_ATTEMPTS = 5;
/** Wraps in flight for one caller (an external provider answers each over the network). */
const WRAP_CONCURRENCY = 16;
/** Wraps between yields to the event loop. */
const YIELD_EVERY = 256;

export interface KeyCreatorDeps {
  readonly db: Database;
  readonly provider: KeyProvider;
  readonly audit: AuditLog;
  readonly guards: CreationGuards;
  readonly now: () => Date;
}

export class KeyCreator {
  readonly #d: KeyCreatorDeps;
  /** The group commit of creations (batcher.ts). */
  readonly #creations = new Batcher<Pending, CreationOutcome>((batch) => this.#commit(batch), MAX_BATCH);
  /** The epoch this process believes is active (read when unknown, again when a statement says it switched). */
  #epoch: number | undefined;
  /** Concurrent look-ups share one statement (batcher.ts). */
  readonly #lookups = new Batcher<{ readonly subjectHash: Uint8Array }, Found>(async (batch) => {
    const found = await this.survey(batch.map((l) => l.subjectHash));
    return new Map(batch.map((l) => [l, found.get(hashHex(l.subjectHash))]));
  }, MAX_BATCH);

  constructor(deps: KeyCreatorDeps) {
    this.#d = deps;
  }

  /**
   * Creates a key for each subject (one outcome each, in order): fresh DEKs wrapped
   * under the active epoch, then committed by the group commit. `keepDek`: the
   * created outcomes carry their DEK (the caller zeroes it); otherwise DEKs are zeroed
   * once committed. Items are wrapped and queued a statement's worth (MAX_BATCH) at a
   * time, so a bulk creation's first statement commits while the next part is wrapped.
   * A provider failure while wrapping fails the call: the parts queued before it still
   * commit (a retry answers them as existing).
   */
  async create(subjects: ReadonlyArray<{ subjectHash: Uint8Array; actor: string }>, options: { keepDek: boolean }): Promise<CreationOutcome[]> {
    if (subjects.length === 0) return [];
    const items: Item[] = subjects.map((s) => ({
      subjectHash: s.subjectHash,
      hex: hashHex(s.subjectHash),
      actor: s.actor,
      keyId: newId('key'),
      dek: randomBytes(32),
      keepDek: options.keepDek,
      epoch: 0,
      wrappedDek: new Uint8Array(0),
    }));
    // a statement's worth at a time: the first commits while the next is wrapped
    const outcomes: Array<Promise<CreationOutcome>> = [];
    for (let at = 0; at < items.length; at += MAX_BATCH) {
      const chunk = items.slice(at, at + MAX_BATCH);
      try {
        try {
          await this.#wrap(chunk, await this.#activeEpoch());
        } catch (e) {
          // the epoch this process believed active was retired and destroyed since: wrap under the one active now
          if (!isLetheError(e, 'epoch_unavailable')) throw e;
          await this.#wrap(chunk, await this.#activeEpoch());
        }
      } catch (e) {
        for (const item of items.slice(at)) zeroize(item.dek);
        // what was queued before still commits (a retry finds those keys): wait for it, then fail
        await Promise.allSettled(outcomes);
        throw e;
      }
      for (const item of chunk) {
        outcomes.push(
          this.#creations.submit({ item }).then(
            (outcome) => {
              // a DEK leaves only with its own key's creation, and only to a caller that keeps it
              if (outcome.kind !== 'created' || !item.keepDek) zeroize(item.dek);
              return outcome;
            },
            (error: unknown) => {
              zeroize(item.dek);
              throw error;
            },
          ),
        );
      }
    }
    return Promise.all(outcomes);
  }

  /**
   * The subjects' live keys and the refusals the guards answer now, in one query when
   * every guard has a SQL form (else one transaction): what a bulk creation answers
   * without wrapping a DEK. By the hex of each keyed hash; subjects with neither are absent.
   */
  async survey(subjectHashes: readonly Uint8Array[]): Promise<Map<string, { row: LiveKeyRow } | { refusal: LetheError }>> {
    const out = new Map<string, { row: LiveKeyRow } | { refusal: LetheError }>();
    if (subjectHashes.length === 0) return out;
    const input = sql`(select decode(h, 'hex') as subject_hash from json_array_elements_text(${JSON.stringify(subjectHashes.map(hashHex))}::json) as v(h))`;
    const among = this.#d.guards.among(sql`input`);
    if (among) {
      const [row] = await queryPrepared<{ existing: RawExisting[] | null; refused: RawRefused[] | null }>(
        this.#d.db,
        'lethe_key_survey',
        sql`with input as ${input},
                 existing as (${existingAmong(sql`input`)}),
                 refused as (${among})
            select (${existingJson}) as existing, (${refusedJson}) as refused`,
      );
      for (const r of row?.refused ?? []) if (!out.has(r.h)) out.set(r.h, { refusal: this.#d.guards.error(r.g, r.c) });
      for (const r of row?.existing ?? []) out.set(r.h, { row: parseExisting(r) }); // a live key wins: the guards run only for a subject without one
      return out;
    }
    await this.#d.db.transaction(async (tx) => {
      const existing = await queryRows<RawExisting>(tx, sql`with input as ${input} ${existingRows(sql`input`)}`);
      for (const r of existing) out.set(r.h, { row: parseExisting(r) });
      for (const h of subjectHashes) {
        if (out.has(hashHex(h))) continue;
        const refusal = await this.#d.guards.refusal(tx, h);
        if (refusal) out.set(hashHex(h), { refusal });
      }
    });
    return out;
  }

  /**
   * The subject's live key, or the refusal the guards answer for it now, or undefined
   * (a key would be created) — as `survey` answers, but concurrent look-ups share one
   * statement: those that arrive while one runs go together in the next.
   */
  lookup(subjectHash: Uint8Array): Promise<Found> {
    return this.#lookups.submit({ subjectHash });
  }

  async #activeEpoch(): Promise<number> {
    this.#epoch ??= await activeEpoch(this.#d.db);
    return this.#epoch;
  }

  /** Wraps each item's DEK under `epoch` (a few in flight). */
  async #wrap(items: readonly Item[], epoch: number): Promise<void> {
    let next = 0;
    const worker = async () => {
      while (next < items.length) {
        const item = items[next++]!;
        item.wrappedDek = await this.#d.provider.wrap(epoch, item.dek, item.keyId, 'subject');
        item.epoch = epoch;
        // an in-process provider never waits: let other requests (and the statements in flight) in now and then
        if (next % YIELD_EVERY === 0) await new Promise((r) => setImmediate(r));
      }
    };
    try {
      await Promise.all(Array.from({ length: Math.min(WRAP_CONCURRENCY, items.length) }, worker));
    } catch (e) {
      // the epoch this process believed active is gone (retired meanwhile): read it again next time
      if (isLetheError(e, 'epoch_unavailable')) this.#epoch = undefined;
      throw e;
    }
  }

  /** Commits a batch: one creation per subject (the first of its items), the others answered by its outcome. */
  async #commit(batch: readonly Pending[]): Promise<Map<Pending, CreationOutcome>> {
    const outcomes = new Map<Pending, CreationOutcome>();
    const leaders = new Map<string, Pending>();
    for (const p of batch) if (!leaders.has(p.item.hex)) leaders.set(p.item.hex, p);
    let pending = [...leaders.values()];
    const among = this.#d.guards.among(sql`input`);
    for (let attempt = 0; among && attempt < CAS_ATTEMPTS && pending.length > 0; attempt++) {
      const result = await this.#attempt(pending, among);
      if (result.kind === 'created') {
        for (const p of pending) outcomes.set(p, created(p.item, result.at));
        pending = [];
        break;
      }
      if (result.kind === 'answered') {
        for (const [p, outcome] of result.outcomes) outcomes.set(p, outcome);
        pending = pending.filter((p) => !result.outcomes.has(p));
      } else if (result.kind === 'epoch') {
        this.#epoch = undefined;
        const epoch = await this.#activeEpoch();
        await this.#wrap(
          pending.map((p) => p.item),
          epoch,
        );
      }
      // 'raced' (a key inserted meanwhile) and 'moved' (another writer's head): the next attempt looks again
    }
    if (pending.length > 0) for (const [p, outcome] of await this.#commitLocked(pending)) outcomes.set(p, outcome);
    // the others of a subject: the leader's key, as a creation that came second answers
    for (const p of batch) {
      if (outcomes.has(p)) continue;
      const lead = outcomes.get(leaders.get(p.item.hex)!)!;
      outcomes.set(p, lead.kind === 'created' ? { kind: 'existing', row: rowOf(leaders.get(p.item.hex)!.item, lead.createdAt) } : lead);
    }
    return outcomes;
  }

  /** One compare-and-set statement for `pending` (every item wrapped under the same epoch). */
  async #attempt(pending: readonly Pending[], among: SQL): Promise<Attempt> {
    const epoch = pending[0]!.item.epoch;
    if (pending.some((p) => p.item.epoch !== epoch)) return { kind: 'epoch' };
    const at = this.#d.now();
    const events = pending.map(
      ({ item }): AuditEvent => ({ actor: item.actor, action: 'key.create', keyId: item.keyId, subjectHash: item.subjectHash, epoch }),
    );
    const input = JSON.stringify(pending.map(({ item }) => ({ h: item.hex, k: item.keyId, w: Buffer.from(item.wrappedDek).toString('hex') })));
    try {
      return await this.#d.audit.casTurn<Attempt>(this.#d.db, async (tip) => {
        const r = await this.#d.audit.appendIfHead(this.#d.db, events, tip, {
          name: 'lethe_key_create_batch',
          lockFirst: sql`select epoch from epochs where epoch = ${epoch} and state = 'active' for share`,
          more: sql`
               input as (select decode(v.h, 'hex') as subject_hash, v.k as key_id, decode(v.w, 'hex') as wrapped_dek
                           from json_to_recordset(${input}::json) as v(h text, k text, w text)),
               existing as (${existingAmong(sql`input`)}),
               refused as (${among}),`,
          guard: sql`exists (select 1 from locked) and not exists (select 1 from existing) and not exists (select 1 from refused)`,
          after: sql`created as (
                 insert into subject_keys (key_id, subject_hash, state, epoch, wrapped_dek, created_at, updated_at, next_seq, base_seq)
                 select i.key_id, i.subject_hash, 'active', ${epoch}, i.wrapped_dek, ${at.toISOString()}::timestamptz, ${at.toISOString()}::timestamptz,
                        ${NEXT_SEQ}, ${NEXT_SEQ}
                   from input i where exists (select 1 from head)
                 returning 1)`,
          report: sql`(${existingJson}) as existing, (${refusedJson}) as refused`,
        });
        if (r.appended) return { value: { kind: 'created', at }, tip: r.tip };
        const existing = (r.row.existing ?? []) as RawExisting[];
        const refused = (r.row.refused ?? []) as RawRefused[];
        if (existing.length > 0 || refused.length > 0) {
          const byHex = new Map(pending.map((p) => [p.item.hex, p]));
          const outcomes = new Map<Pending, CreationOutcome>();
          // lowest guard first, as the guards run in order; a live key wins over a refusal
          for (const x of [...refused].sort((a, b) => b.g - a.g)) outcomes.set(byHex.get(x.h)!, { kind: 'refused', refusal: this.#d.guards.error(x.g, x.c) });
          for (const x of existing) outcomes.set(byHex.get(x.h)!, { kind: 'existing', row: parseExisting(x) });
          return { value: { kind: 'answered', outcomes }, tip };
        }
        if (((r.locked ?? []) as unknown[]).length === 0) return { value: { kind: 'epoch' }, tip };
        return { value: { kind: 'moved' }, tip: undefined };
      });
    } catch (e) {
      // another replica's key for one of the subjects committed after the statement's snapshot: nothing was written
      if ([...errorCodes(e)].includes('23505')) return { kind: 'raced' };
      throw e;
    }
  }

  /**
   * The batch in one transaction under the audit head's lock (and the active epoch's
   * shared lock): the subjects' live keys, the guards subject by subject, the inserts
   * and their audit rows. For guards without a SQL form, and after lost races.
   */
  async #commitLocked(pending: readonly Pending[]): Promise<Map<Pending, CreationOutcome>> {
    const outcomes = new Map<Pending, CreationOutcome>();
    const at = this.#d.now();
    await this.#d.db.transaction(async (tx) => {
      const [active] = await queryRows<{ epoch: number }>(tx, sql`select epoch from epochs where state = 'active' for share`);
      if (!active) throw new LetheError('unavailable', 'no active KEK epoch: run `lethe migrate` or start the service once');
      const stale = pending.filter((p) => p.item.epoch !== active.epoch);
      if (stale.length > 0) {
        this.#epoch = active.epoch;
        await this.#wrap(
          stale.map((p) => p.item),
          active.epoch,
        );
      }
      const input = sql`(select decode(h, 'hex') as subject_hash from json_array_elements_text(${JSON.stringify(pending.map((p) => p.item.hex))}::json) as v(h))`;
      const existing = await queryRows<RawExisting>(tx, sql`with input as ${input} ${existingRows(sql`input`)}`);
      const byHex = new Map(pending.map((p) => [p.item.hex, p]));
      for (const x of existing) outcomes.set(byHex.get(x.h)!, { kind: 'existing', row: parseExisting(x) });
      const toCreate: Pending[] = [];
      for (const p of pending) {
        if (outcomes.has(p)) continue;
        const refusal = await this.#d.guards.refusal(tx, p.item.subjectHash);
        if (refusal) outcomes.set(p, { kind: 'refused', refusal });
        else toCreate.push(p);
      }
      if (toCreate.length === 0) return;
      const values = JSON.stringify(toCreate.map(({ item }) => ({ h: item.hex, k: item.keyId, w: Buffer.from(item.wrappedDek).toString('hex') })));
      const inserted = await queryRows<{ key_id: string }>(
        tx,
        sql`insert into subject_keys (key_id, subject_hash, state, epoch, wrapped_dek, created_at, updated_at, next_seq, base_seq)
            select v.k, i.subject_hash, 'active', ${active.epoch}, decode(v.w, 'hex'), ${at.toISOString()}::timestamptz, ${at.toISOString()}::timestamptz,
                   ${NEXT_SEQ}, ${NEXT_SEQ}
              from json_to_recordset(${values}::json) as v(h text, k text, w text)
              cross join lateral (select decode(v.h, 'hex') as subject_hash) i
            on conflict (subject_hash) where head do nothing
            returning key_id`,
      );
      const made = new Set(inserted.map((r) => r.key_id));
      await this.#d.audit.append(
        tx,
        toCreate
          .filter((p) => made.has(p.item.keyId))
          .map(({ item }) => ({ actor: item.actor, action: 'key.create', keyId: item.keyId, subjectHash: item.subjectHash, epoch: active.epoch })),
      );
      for (const p of toCreate) if (made.has(p.item.keyId)) outcomes.set(p, created(p.item, at));
    });
    // a key another writer inserted meanwhile (the conflict): answer it
    const lost = pending.filter((p) => !outcomes.has(p));
    if (lost.length > 0) {
      const rows = await queryRows<RawExisting>(
        this.#d.db,
        sql`with input as (select decode(h, 'hex') as subject_hash from json_array_elements_text(${JSON.stringify(lost.map((p) => p.item.hex))}::json) as v(h))
            ${existingRows(sql`input`)}`,
      );
      const byHex = new Map(rows.map((r) => [r.h, r]));
      for (const p of lost) {
        const row = byHex.get(p.item.hex);
        if (!row) throw new LetheError('unavailable', 'the subject key changed during creation; try again');
        outcomes.set(p, { kind: 'existing', row: parseExisting(row) });
      }
    }
    return outcomes;
  }
}

function created(item: Item, at: Date): CreationOutcome {
  return item.keepDek ? { kind: 'created', keyId: item.keyId, createdAt: at, dek: item.dek } : { kind: 'created', keyId: item.keyId, createdAt: at };
}

function rowOf(item: Item, createdAt: Date): LiveKeyRow {
  return { keyId: item.keyId, state: 'active', createdAt, epoch: item.epoch, wrappedDek: item.wrappedDek };
}
