/** Making sure subjects have keys: one (PUT /v1/subjects/{subject}/key) or up to 10,000 at once (POST /v1/keys/batch), through the creation group commit. */
import { LetheError } from '../errors.js';
import { assertSubjectId } from '../ids.js';
import type { CreationOutcome } from './creation.js';
import { type BulkKeyResult, fencedRefusal, type KeyContext, MAX_BULK_SUBJECTS, type SubjectKeyInfo } from './key-types.js';
import { hashHex } from './subjects.js';

/** PUT /v1/subjects/{subject}/key: the subject's live key, created when there is none. */
export async function ensureKey(c: KeyContext, subject: string, actor: string): Promise<SubjectKeyInfo> {
  const subjectHash = c.d.hasher.hash(subject);
  if (c.d.cache.has(hashHex(subjectHash))) {
    // its DEK is cached here, so it has a key: look it up (concurrent look-ups share one statement)
    const found = await c.creator.lookup(subjectHash);
    if (found && 'refusal' in found) throw found.refusal;
    if (found) return { keyId: found.row.keyId, state: found.row.state, createdAt: found.row.createdAt, created: false };
  }
  // Otherwise straight to the creation group commit: its one statement answers a key the
  // subject has (`existing`) or a guard's refusal, so a new subject costs one statement
  // (shared with the batch) instead of a look-up and then the creation. An existing
  // subject not cached here costs a DEK wrapped for nothing (one provider call).
  const [outcome] = await c.creator.create([{ subjectHash, actor }], { keepDek: false });
  if (outcome!.kind === 'refused') throw outcome!.refusal;
  if (outcome!.kind === 'existing') return { keyId: outcome!.row.keyId, state: outcome!.row.state, createdAt: outcome!.row.createdAt, created: false };
  c.d.metrics.keysCreated.inc();
  return { keyId: outcome!.keyId, state: 'active', createdAt: outcome!.createdAt, created: true };
}

/**
 * POST /v1/keys/batch: a key for each subject that has none (for imports), in one
 * call — the subjects' live keys and refusals read in one query, the new keys'
 * DEKs wrapped, then committed by the creation group commit (a statement per
 * 2,000 keys, their `key.create` audit rows chained in it). Idempotent: a subject
 * with a live active key answers it (`existing`); one whose key is fenced, or that
 * a creation guard refuses (erased, or an erasure open), answers its refusal. No
 * DEK leaves: they are zeroed once committed, and not cached. Subjects must be
 * distinct, valid subject ids, 1 to MAX_BULK_SUBJECTS of them.
 */
export async function ensureKeys(c: KeyContext, subjects: readonly string[], actor: string): Promise<BulkKeyResult[]> {
  if (subjects.length === 0) throw new LetheError('validation_failed', 'subjects: at least one subject');
  if (subjects.length > MAX_BULK_SUBJECTS)
    throw new LetheError('payload_too_large', `subjects: at most ${MAX_BULK_SUBJECTS} subjects per request (got ${subjects.length})`);
  const seen = new Set<string>();
  subjects.forEach((subject, i) => {
    try {
      assertSubjectId(subject);
    } catch (e) {
      throw new LetheError('validation_failed', `subjects.${i}: ${(e as Error).message}`);
    }
    if (seen.has(subject)) throw new LetheError('validation_failed', `subjects.${i}: duplicate subject (each subject at most once per request)`);
    seen.add(subject);
  });
  const hashes = subjects.map((s) => c.d.hasher.hash(s));
  const known = await c.creator.survey(hashes);
  const toCreate = hashes.flatMap((subjectHash, i) => (known.has(hashHex(subjectHash)) ? [] : [{ i, subjectHash }]));
  const made = await c.creator.create(
    toCreate.map((x) => ({ subjectHash: x.subjectHash, actor })),
    { keepDek: false },
  );
  const outcomes = new Map<number, CreationOutcome>(toCreate.map((x, n) => [x.i, made[n]!]));
  c.d.metrics.keysCreated.inc(made.filter((o) => o.kind === 'created').length);
  return subjects.map((subject, i): BulkKeyResult => {
    const fromSurvey = known.get(hashHex(hashes[i]!));
    const outcome: CreationOutcome =
      outcomes.get(i) ??
      (fromSurvey && 'row' in fromSurvey
        ? { kind: 'existing', row: fromSurvey.row }
        : { kind: 'refused', refusal: (fromSurvey as { refusal: LetheError }).refusal });
    if (outcome.kind === 'refused') return { subject, status: 'refused', refusal: outcome.refusal };
    if (outcome.kind === 'created') return { subject, status: 'created', keyId: outcome.keyId, createdAt: outcome.createdAt };
    if (outcome.row.state === 'fenced') return { subject, status: 'refused', refusal: fencedRefusal() };
    return { subject, status: 'existing', keyId: outcome.row.keyId, createdAt: outcome.row.createdAt };
  });
}
