/**
 * The episodic log through the service: the service encrypts each entry under its
 * subject's DEK, stores the frame in a segment object, and indexes it in PostgreSQL.
 * An append is acknowledged only after its segment is stored and its index row
 * committed; an object-store failure answers unavailable and indexes nothing.
 */
import { and, asc, eq, sql } from 'drizzle-orm';
import { zeroize } from '../crypto/index.js';
import { type Db, queryRows } from '../db/client.js';
import { logEntries } from '../db/schema.js';
import { LetheError, isLetheError } from '../errors.js';
import type { ObjectStore } from '../storage/store.js';
import { newId } from '../vault/ids.js';
import type { KeyService } from '../vault/keys.js';
import { type FramePayload, openFrame, sealFrame } from './frame.js';
import { encodeSegment, frameAt } from './segment.js';

export const MAX_ENTRY_TEXT_BYTES = 64 * 1024;

export interface AppendInput {
  readonly text: string;
  readonly kind?: string | undefined;
  readonly metadata?: Record<string, unknown> | undefined;
}

export interface Entry extends FramePayload {
  readonly entryId: string;
  readonly seq: number;
  readonly createdAt: Date;
}

export class LogService {
  readonly #db: Db;
  readonly #keys: KeyService;
  readonly #objects: ObjectStore;

  constructor(deps: { db: Db; keys: KeyService; objects: ObjectStore }) {
    this.#db = deps.db;
    this.#keys = deps.keys;
    this.#objects = deps.objects;
  }

  async append(subject: string, input: AppendInput, actor: string): Promise<{ entryId: string; keyId: string; seq: number }> {
    if (Buffer.byteLength(input.text, 'utf8') > MAX_ENTRY_TEXT_BYTES) {
      throw new LetheError('payload_too_large', `text is limited to ${MAX_ENTRY_TEXT_BYTES} bytes`);
    }
    const { keyId, dek, subjectHash } = await this.#keys.writingKey(subject, actor);
    try {
      const [reserved] = await queryRows<{ seq: number }>(
        this.#db.db,
        sql`update subject_keys set next_seq = next_seq + 1, updated_at = now()
             where key_id = ${keyId} and state = 'active' returning next_seq - 1 as seq`,
      );
      if (!reserved) throw new LetheError('erasure_in_progress', 'the subject is being erased; no new entries are accepted');
      const seq = Number(reserved.seq);
      const entryId = newId('entry');
      const frame = sealFrame(dek, { keyId, entryId, seq }, { text: input.text, kind: input.kind ?? null, metadata: input.metadata ?? null });
      const { bytes, places } = encodeSegment([frame]);
      const segment = `log/${newId('seg')}`;
      await this.#objects.put(segment, bytes);
      const place = places[0]!;
      const inserted = await queryRows<{ entry_id: string }>(
        this.#db.db,
        sql`insert into log_entries (entry_id, subject_hash, key_id, seq, segment, frame_offset, frame_length, created_at)
            select ${entryId}, decode(${Buffer.from(subjectHash).toString('hex')}, 'hex'), ${keyId}, ${seq}, ${segment},
                   ${place.offset}, ${place.length}, now()
             where exists (select 1 from subject_keys where key_id = ${keyId})
            returning entry_id`,
      );
      if (inserted.length === 0) {
        // destroyed between encryption and indexing: the stored frame is already unreadable
        throw new LetheError('erasure_in_progress', 'the subject key was destroyed during the append; nothing was recorded');
      }
      return { entryId, keyId, seq };
    } finally {
      zeroize(dek);
    }
  }

  /** The subject's readable entries (under its live key) in append order. */
  async list(subject: string): Promise<Entry[]> {
    const status = await this.#keys.subjectStatus(subject);
    if (!status.key) {
      if (status.erased) throw new LetheError('subject_erased', 'the subject was erased and has no new key');
      throw new LetheError('not_found', 'no such subject');
    }
    const rows = await this.#db.db
      .select()
      .from(logEntries)
      .where(eq(logEntries.keyId, status.key.keyId))
      .orderBy(asc(logEntries.seq));
    if (rows.length === 0) return [];
    const { dek } = await this.#keys.dekFor(status.key.keyId);
    try {
      const segments = new Map<string, Uint8Array>();
      const out: Entry[] = [];
      for (const row of rows) {
        let bytes = segments.get(row.segment);
        if (!bytes) {
          bytes = await this.#objects.get(row.segment);
          segments.set(row.segment, bytes);
        }
        out.push(this.#open(dek, row, bytes));
      }
      return out;
    } finally {
      zeroize(dek);
    }
  }

  async get(entryId: string): Promise<Entry> {
    const [row] = await this.#db.db.select().from(logEntries).where(and(eq(logEntries.entryId, entryId)));
    if (!row) throw new LetheError('not_found', 'no such entry');
    let dek: Uint8Array;
    try {
      ({ dek } = await this.#keys.dekFor(row.keyId));
    } catch (e) {
      if (isLetheError(e, 'not_found')) throw new LetheError('key_destroyed', 'the entry\'s key was destroyed');
      throw e;
    }
    try {
      return this.#open(dek, row, await this.#objects.get(row.segment));
    } finally {
      zeroize(dek);
    }
  }

  #open(dek: Uint8Array, row: typeof logEntries.$inferSelect, segment: Uint8Array): Entry {
    const envelope = frameAt(segment, { offset: row.frameOffset, length: row.frameLength });
    const payload = openFrame(dek, { keyId: row.keyId, entryId: row.entryId, seq: row.seq }, envelope);
    return { entryId: row.entryId, seq: row.seq, createdAt: row.createdAt, text: payload.text, kind: payload.kind, metadata: payload.metadata };
  }
}
