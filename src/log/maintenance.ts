/**
 * Log maintenance: `fsck` (the object store and the index agree) and `compact`
 * (segments rewritten without the frames of destroyed keys). Neither is needed for
 * erasure — a destroyed key already makes its frames unreadable — and neither loses
 * anything acknowledged: an append is acknowledged only once indexed, and frames of
 * live keys are copied byte for byte (no decryption) before an old segment goes.
 */
import { sql } from 'drizzle-orm';
import { type Database, queryRows } from '../db/client.js';
import type { ObjectStore } from '../storage/store.js';
import { newSegmentKey } from '../ids.js';
import { encodeSegment, frameAt } from './segment.js';

export interface FsckReport {
  readonly ok: boolean;
  readonly segmentsStored: number;
  readonly segmentsIndexed: number;
  /** Stored but indexed by nothing: a writer that crashed between upload and index, or left over by a re-key. */
  readonly orphans: Array<{ segment: string; size: number; action: 'deleted' | 'kept: younger than the grace period' | 'reported' }>;
  /** Indexed but not stored: entries whose frames are lost. */
  readonly missing: Array<{ segment: string; entries: number }>;
  /** With deep: index rows whose place does not fit their segment. */
  readonly badFrames: Array<{ entryId: string; segment: string; problem: string }>;
}

/** The segment of an index row whose frame (of a destroyed key) was compacted away. */
export const COMPACTED = 'compacted';

interface IndexRow {
  entry_id: string;
  key_id: string;
  segment: string;
  frame_offset: number;
  frame_length: number;
  live: boolean;
}

export interface FsckOptions {
  /** Delete orphan segments older than the grace period. */
  readonly repair?: boolean;
  /** Orphans younger than this may belong to an append in flight (default 3600). */
  readonly graceSeconds?: number;
  /** Also read every segment and check each indexed frame fits it. */
  readonly deep?: boolean;
}

export async function fsck(deps: { db: Database; objects: ObjectStore }, options: FsckOptions = {}): Promise<FsckReport> {
  const grace = (options.graceSeconds ?? 3600) * 1000;
  const stored = new Map<string, { size: number; modifiedAt?: Date }>();
  for await (const o of deps.objects.list('log/')) stored.set(o.key, o);
  // Frames of destroyed keys are not losses: only entries under live keys must be stored.
  const counts = await queryRows<{ segment: string; n: string | number }>(
    deps.db,
    sql`select e.segment, count(*) as n from log_entries e
         where e.segment <> ${COMPACTED} and exists (select 1 from subject_keys k where k.key_id = e.key_id)
         group by e.segment`,
  );
  const referenced = new Set((await queryRows<{ segment: string }>(deps.db, sql`select distinct segment from log_entries`)).map((r) => r.segment));
  const indexed = new Map(counts.map((c) => [c.segment, Number(c.n)]));
  const orphans: FsckReport['orphans'] = [];
  for (const [segment, o] of stored) {
    if (referenced.has(segment)) continue;
    const young = !o.modifiedAt || Date.now() - o.modifiedAt.getTime() < grace;
    if (options.repair && !young) {
      await deps.objects.delete(segment);
      orphans.push({ segment, size: o.size, action: 'deleted' });
    } else orphans.push({ segment, size: o.size, action: options.repair ? 'kept: younger than the grace period' : 'reported' });
  }
  const missing = [...indexed].filter(([segment]) => !stored.has(segment)).map(([segment, entries]) => ({ segment, entries }));
  const badFrames: FsckReport['badFrames'] = [];
  if (options.deep) {
    for (const segment of indexed.keys()) {
      if (!stored.has(segment)) continue;
      const bytes = await deps.objects.get(segment);
      const rows = await queryRows<Pick<IndexRow, 'entry_id' | 'frame_offset' | 'frame_length'>>(
        deps.db,
        sql`select entry_id, frame_offset, frame_length from log_entries where segment = ${segment}`,
      );
      for (const r of rows) {
        try {
          frameAt(bytes, { offset: r.frame_offset, length: r.frame_length });
        } catch (e) {
          badFrames.push({ entryId: r.entry_id, segment, problem: (e as Error).message });
        }
      }
    }
  }
  return { ok: missing.length === 0 && badFrames.length === 0, segmentsStored: stored.size, segmentsIndexed: indexed.size, orphans, missing, badFrames };
}

export interface CompactReport {
  readonly segmentsExamined: number;
  readonly segmentsRemoved: number;
  readonly segmentsRewritten: number;
  readonly framesDropped: number;
}

/** Rewrites or removes every segment holding frames of destroyed keys. */
export async function compact(deps: { db: Database; objects: ObjectStore }): Promise<CompactReport> {
  const rows = await queryRows<IndexRow>(
    deps.db,
    sql`select e.entry_id, e.key_id, e.segment, e.frame_offset, e.frame_length, (k.key_id is not null) as live
          from log_entries e left join subject_keys k on k.key_id = e.key_id
         where e.segment in (select l.segment from log_entries l
                              where l.segment <> ${COMPACTED}
                                and not exists (select 1 from subject_keys s where s.key_id = l.key_id))
         order by e.segment, e.frame_offset`,
  );
  const bySegment = new Map<string, IndexRow[]>();
  for (const r of rows) bySegment.set(r.segment, [...(bySegment.get(r.segment) ?? []), r]);
  let removed = 0;
  let rewritten = 0;
  let dropped = 0;
  for (const [segment, frames] of bySegment) {
    const live = frames.filter((f) => f.live);
    dropped += frames.length - live.length;
    if (live.length > 0) {
      const bytes = await deps.objects.get(segment);
      const { bytes: next, places } = encodeSegment(live.map((f) => frameAt(bytes, { offset: f.frame_offset, length: f.frame_length }).slice()));
      const target = newSegmentKey();
      await deps.objects.put(target, next);
      const moved = JSON.stringify(live.map((f, i) => ({ entry_id: f.entry_id, offset: places[i]!.offset, length: places[i]!.length })));
      await deps.db.execute(sql`update log_entries as e
                                      set segment = ${target}, frame_offset = v.offset, frame_length = v.length
                                     from json_to_recordset(${moved}::json) as v(entry_id text, "offset" integer, length integer)
                                    where e.entry_id = v.entry_id and e.segment = ${segment}`);
      rewritten += 1;
    } else removed += 1;
    // Index rows of destroyed keys stay (they answer 410 key_destroyed) but no longer point at stored bytes.
    await deps.db.execute(sql`update log_entries set frame_offset = 0, frame_length = 0, segment = ${COMPACTED}
                                  where segment = ${segment} and not exists (select 1 from subject_keys k where k.key_id = log_entries.key_id)`);
    await deps.objects.delete(segment);
  }
  return { segmentsExamined: bySegment.size, segmentsRemoved: removed, segmentsRewritten: rewritten, framesDropped: dropped };
}
