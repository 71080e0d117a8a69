/**
 * Read fences. Every read of entries or artifacts hands back a token naming the keys
 * that protected what it returned: the subject keys of the entries, the version key
 * of each artifact and the subject keys of every entry in its closure. A write that
 * presents the token is refused when any of those keys was destroyed since (409
 * source_erased) or is fenced by an erasure running now (409 erasure_in_progress) —
 * whether or not the new artifact cites what it read. That stops a consolidation job
 * that read before an erasure from writing the erased content back after it (the
 * write-ahead-log resurrection in the first seed), even with incomplete citations.
 *
 * Token: "rf1." base64url(JSON {at, k: [key ids]}) "." base64url(HMAC-SHA256 under a
 * root subkey, 16 bytes). Key ids are not secret; the MAC makes a token something
 * only this vault issues, so a client cannot hand-edit what its read covered.
 */
import { sql } from 'drizzle-orm';
import { constantTimeEqual, fromBase64Url, KeyedHasher, toBase64Url, utf8, zeroize } from '../crypto/index.js';
import { queryRows, type Transaction } from '../db/client.js';
import { LetheError } from '../errors.js';
import { idArrayLiteral } from '../ids.js';

const PREFIX = 'rf1';
const MAC_BYTES = 16;

export class ReadFences {
  readonly #mac: KeyedHasher;

  /** Consumes `key`: it is zeroed once keyed. */
  constructor(key: Uint8Array) {
    this.#mac = new KeyedHasher(key);
    zeroize(key);
  }

  issue(keyIds: Iterable<string>, at: Date = new Date()): string {
    const k = [...new Set(keyIds)].sort();
    const body = toBase64Url(utf8.encode(JSON.stringify({ at: at.getTime(), k })));
    return `${PREFIX}.${body}.${toBase64Url(this.#sign(body))}`;
  }

  /** The key ids a token covers; validation_failed for anything this vault did not issue. */
  parse(token: string, field = 'readFence'): string[] {
    const parts = token.split('.');
    const bad = () => new LetheError('validation_failed', `${field}: not a read fence issued by this vault`);
    if (parts.length !== 3 || parts[0] !== PREFIX) throw bad();
    const mac = fromBase64Url(parts[2]!);
    if (!mac || !constantTimeEqual(mac, this.#sign(parts[1]!))) throw bad();
    const body = fromBase64Url(parts[1]!);
    let parsed: { k?: unknown };
    try {
      parsed = JSON.parse(utf8.decode(body ?? new Uint8Array())) as { k?: unknown };
    } catch {
      throw bad();
    }
    if (!Array.isArray(parsed.k) || !parsed.k.every((x) => typeof x === 'string')) throw bad();
    return parsed.k as string[];
  }

  close(): void {
    this.#mac.destroy();
  }

  #sign(body: string): Uint8Array {
    return this.#mac.hash(utf8.encode(`${PREFIX}.${body}`)).subarray(0, MAC_BYTES);
  }
}

/**
 * Refuses, inside `tx`, when any of `keyIds` is destroyed or fenced; otherwise holds
 * FOR KEY SHARE on them until `tx` ends, so no destruction can commit in between.
 */
export async function assertKeysLive(tx: Transaction, keyIds: readonly string[], what: string): Promise<void> {
  if (keyIds.length === 0) return;
  const ids = idArrayLiteral(keyIds);
  const subjectRows = await queryRows<{ key_id: string; state: string }>(
    tx,
    sql`select key_id, state from subject_keys where key_id = any(${ids}::text[]) order by key_id for key share`,
  );
  const artifactRows = await queryRows<{ key_id: string }>(
    tx,
    sql`select key_id from artifact_keys where key_id = any(${ids}::text[]) order by key_id for key share`,
  );
  const live = new Set([...subjectRows.map((r) => r.key_id), ...artifactRows.map((r) => r.key_id)]);
  const missing = [...new Set(keyIds)].filter((k) => !live.has(k));
  if (missing.length > 0) {
    throw new LetheError(
      'source_erased',
      `${what}: ${missing.length} key(s) it covers were destroyed since (content was erased); read again and rebuild without it`,
    );
  }
  if (subjectRows.some((r) => r.state === 'fenced')) {
    throw new LetheError('erasure_in_progress', `${what}: a subject it covers is being erased; try again after the erasure`);
  }
}
