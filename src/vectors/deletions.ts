/** Sealed rows deleted inside another operation's transaction: a key's destruction, an artifact erased for want of sources. */
import { eq, sql } from 'drizzle-orm';
import type { Transaction } from '../db/client.js';
import { embeddings } from '../db/schema.js';
import { idArrayLiteral } from '../ids.js';

/**
 * Inside a key destruction's transaction (registered with KeyDestructions.within):
 * the sealed embeddings died with their key; their rows go so nothing tries to open them.
 */
export async function deleteSealedUnder(tx: Transaction, keyIds: readonly string[]): Promise<void> {
  await tx.execute(sql`delete from embeddings where key_id = any(${idArrayLiteral(keyIds)}::text[])`);
}

/** Removes one record's sealed embedding inside `tx` (an artifact erased for want of sources). */
export async function deleteRecord(tx: Transaction, recordId: string): Promise<void> {
  await tx.delete(embeddings).where(eq(embeddings.recordId, recordId));
}
