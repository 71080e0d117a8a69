/**
 * The training-exposure registry: which entries and artifacts went into a
 * fine-tuning or distillation corpus. Weights trained on a record cannot be
 * crypto-shredded; an erasure of a subject whose content is in a registered corpus is
 * class C and says so. The subjects a corpus held are resolved at registration
 * (entries directly, artifacts through their closure as it stood then) and kept by
 * keyed hash, so a later regeneration does not hide that an earlier version was used.
 */
import { sql } from 'drizzle-orm';
import { type Database, queryRows } from '../db/client.js';
import { trainingExposures } from '../db/schema.js';
import { LetheError } from '../errors.js';
import { isId, newId } from '../ids.js';
import type { AuditLog } from '../vault/audit.js';
import { closureSubjects } from './provenance.js';

export const MAX_EXPOSURE_IDS = 100_000;

export interface ExposureInput {
  readonly corpus: string;
  readonly model?: string | undefined;
  readonly ids: readonly string[];
}

export interface Exposure {
  readonly exposureId: string;
  readonly corpus: string;
  readonly model: string | null;
  readonly createdAt: Date;
}

export class TrainingExposures {
  readonly #db: Database;
  readonly #audit: AuditLog;

  constructor(deps: { db: Database; audit: AuditLog }) {
    this.#db = deps.db;
    this.#audit = deps.audit;
  }

  async register(input: ExposureInput, actor: string): Promise<{ exposureId: string; records: number; subjects: number }> {
    const ids = [...new Set(input.ids)];
    if (ids.length === 0) throw new LetheError('validation_failed', 'ids: name at least one entry or artifact');
    if (ids.length > MAX_EXPOSURE_IDS) throw new LetheError('validation_failed', `ids: at most ${MAX_EXPOSURE_IDS}`);
    const malformed = ids.filter((id) => !isId('entry', id) && !isId('art', id));
    if (malformed.length > 0) throw new LetheError('unknown_source', `ids: ${malformed.length} id(s) are neither entry nor artifact ids`);
    const exposureId = newId('exp');
    const idsJson = JSON.stringify(ids);
    return this.#db.transaction(async (tx) => {
      // Erased records are accepted: a corpus built before an erasure still holds them.
      const entries = await queryRows<{ entry_id: string; subject: string }>(
        tx,
        sql`select entry_id, encode(subject_hash, 'hex') as subject from log_entries
             where entry_id in (select json_array_elements_text(${idsJson}::json))`,
      );
      const arts = await queryRows<{ artifact_id: string; version: number }>(
        tx,
        sql`select artifact_id, version from artifacts where artifact_id in (select json_array_elements_text(${idsJson}::json))`,
      );
      const unknown = ids.length - entries.length - arts.length;
      if (unknown > 0) throw new LetheError('unknown_source', `ids: ${unknown} record(s) do not exist`);
      const subjects = new Set(entries.map((e) => e.subject));
      for (const s of (
        await closureSubjects(
          tx,
          arts.map((a) => a.artifact_id),
        )
      ).subjects)
        subjects.add(s);
      await tx.insert(trainingExposures).values({ exposureId, corpus: input.corpus, model: input.model ?? null, createdAt: new Date() });
      const records = [
        ...entries.map((e) => ({ record_id: e.entry_id, record_type: 'entry', version: null })),
        ...arts.map((a) => ({ record_id: a.artifact_id, record_type: 'artifact', version: a.version })),
      ];
      await tx.execute(sql`insert into training_exposure_records (exposure_id, record_id, record_type, version)
        select ${exposureId}, record_id, record_type, version
          from json_to_recordset(${JSON.stringify(records)}::json) as v(record_id text, record_type text, version integer)`);
      await tx.execute(sql`insert into training_exposure_subjects (subject_hash, exposure_id)
        select decode(s, 'hex'), ${exposureId} from json_array_elements_text(${JSON.stringify([...subjects])}::json) as v(s)`);
      await this.#audit.append(tx, [
        {
          actor,
          action: 'training.exposure',
          detail: { exposureId, corpus: input.corpus, model: input.model ?? null, records: records.length, subjects: subjects.size },
        },
      ]);
      return { exposureId, records: records.length, subjects: subjects.size };
    });
  }

  /** The registered corpora that hold any of these records (the class C test of forgetting entries). */
  async forRecords(recordIds: readonly string[]): Promise<Exposure[]> {
    if (recordIds.length === 0) return [];
    const rows = await queryRows<{ exposure_id: string; corpus: string; model: string | null; created_at: Date | string }>(
      this.#db,
      sql`select distinct e.exposure_id, e.corpus, e.model, e.created_at
            from training_exposure_records r join training_exposures e on e.exposure_id = r.exposure_id
           where r.record_id in (select json_array_elements_text(${JSON.stringify([...new Set(recordIds)])}::json))
           order by e.created_at, e.exposure_id`,
    );
    return rows.map((r) => ({ exposureId: r.exposure_id, corpus: r.corpus, model: r.model, createdAt: new Date(r.created_at) }));
  }

  /** The registered corpora that hold content of the subject (the class C test). */
  async forSubjectHash(subjectHash: Uint8Array): Promise<Exposure[]> {
    const rows = await queryRows<{ exposure_id: string; corpus: string; model: string | null; created_at: Date | string }>(
      this.#db,
      sql`select e.exposure_id, e.corpus, e.model, e.created_at
            from training_exposure_subjects s join training_exposures e on e.exposure_id = s.exposure_id
           where s.subject_hash = decode(${Buffer.from(subjectHash).toString('hex')}, 'hex')
           order by e.created_at, e.exposure_id`,
    );
    return rows.map((r) => ({ exposureId: r.exposure_id, corpus: r.corpus, model: r.model, createdAt: new Date(r.created_at) }));
  }
}
