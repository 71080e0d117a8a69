/**
 * A subject's keys: one head (appends, leases, sequence numbers) and shards — heads
 * that filled up, and the pieces a re-key split off. Each key is a subject DEK under
 * the KEK epoch like any other; a forget re-keys only the key holding the entry, so
 * its cost is a shard's entries, not the subject's (src/log/rekey.ts).
 *
 * Rolling: once a head took more than `shardEntries` sequence numbers (a reservation
 * found it full) it becomes a shard — it stays active: appends in flight and writers
 * holding its lease still register under it — and a new head takes over, in one
 * transaction that the creation guards can refuse (an erasure of the subject open: no
 * new key).
 */
import { and, asc, desc, eq, sql } from 'drizzle-orm';
import { type Database, preparedPer } from '../db/client.js';
import { randomBytes, zeroize } from '../crypto/index.js';
import { subjectKeys } from '../db/schema.js';
import { newId } from '../ids.js';
import type { KeyContext, SubjectKeyRef } from './key-types.js';
import { notify } from './events.js';
import { hashHex } from './subjects.js';
import { wrapUnderActive } from './wrapping.js';

/** Every live key of the subject, its head first. */
export async function keysOf(c: KeyContext, subjectHash: Uint8Array): Promise<SubjectKeyRef[]> {
  return c.d.db
    .select({ keyId: subjectKeys.keyId, state: subjectKeys.state, head: subjectKeys.head })
    .from(subjectKeys)
    .where(eq(subjectKeys.subjectHash, subjectHash))
    .orderBy(desc(subjectKeys.head), asc(subjectKeys.keyId));
}

const keysOfSubjectsQuery = preparedPer((db) => prepareKeysOfSubjects(db));

/** keysOfSubjects' query, prepared (parsed and planned once per connection): the subjects as a JSON array of hex hashes. */
function prepareKeysOfSubjects(db: Database) {
  return db
    .select({ subjectHash: subjectKeys.subjectHash, keyId: subjectKeys.keyId, state: subjectKeys.state, head: subjectKeys.head })
    .from(subjectKeys)
    .where(sql`${subjectKeys.subjectHash} = any(array(select decode(h, 'hex') from json_array_elements_text(${sql.placeholder('hashes')}::json) as s(h)))`)
    .orderBy(desc(subjectKeys.head), asc(subjectKeys.keyId))
    .prepare('keys-of-subjects');
}

/** keysOf for many subjects in one query: by the hex of each keyed hash that has live keys (the others are absent). */
export async function keysOfSubjects(c: KeyContext, subjectHashes: readonly Uint8Array[]): Promise<Map<string, SubjectKeyRef[]>> {
  const out = new Map<string, SubjectKeyRef[]>();
  if (subjectHashes.length === 0) return out;
  const rows = await keysOfSubjectsQuery(c.d.db).execute({ hashes: JSON.stringify(subjectHashes.map(hashHex)) });
  for (const { subjectHash, ...key } of rows) {
    const hex = hashHex(subjectHash);
    out.set(hex, [...(out.get(hex) ?? []), key]);
  }
  return out;
}

/**
 * Rolls the head `keyId` into a shard and makes a new head, if it is still the
 * subject's active head with more than `shardEntries` sequence numbers taken since it
 * became head. The new head's id, or undefined when there was nothing to roll.
 */
export async function rollHead(c: KeyContext, keyId: string, shardEntries: number): Promise<string | undefined> {
  const dek = randomBytes(32);
  try {
    return await c.d.db.transaction(async (tx) => {
      // no key update: appends under the head (FOR KEY SHARE on its row) go on meanwhile
      const [row] = await tx.select().from(subjectKeys).where(eq(subjectKeys.keyId, keyId)).for('no key update');
      if (!row || !row.head || row.state !== 'active' || row.nextSeq - row.baseSeq <= shardEntries) return undefined;
      if (await c.refusal(tx, row.subjectHash)) return undefined;
      const newKeyId = newId('key');
      const { epoch, wrappedDek } = await wrapUnderActive(tx, c.d.provider, newKeyId, dek, 'subject');
      const now = c.now();
      await tx
        .update(subjectKeys)
        .set({ head: false, updatedAt: now })
        .where(and(eq(subjectKeys.keyId, keyId), eq(subjectKeys.head, true)));
      await tx.insert(subjectKeys).values({
        keyId: newKeyId,
        subjectHash: row.subjectHash,
        state: 'active',
        epoch,
        wrappedDek,
        createdAt: now,
        updatedAt: now,
        nextSeq: row.nextSeq,
        baseSeq: row.nextSeq,
        head: true,
      });
      await c.d.audit.append(tx, [{ actor: 'vault', action: 'key.create', keyId: newKeyId, subjectHash: row.subjectHash, epoch, detail: { rolls: keyId } }]);
      // every replica drops the old head from its cache of the subject's writing key: the next lease or append finds the new one
      await notify(tx, { t: 'key', keyId });
      return newKeyId;
    });
  } finally {
    zeroize(dek);
    c.dropCached(keyId);
  }
}
