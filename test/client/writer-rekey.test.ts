/**
 * The writer client across a re-key of a living subject, against a vault served over
 * real HTTP on PostgreSQL: forgetting one memory re-keys the subject (its old key is
 * destroyed, the subject lives on under a new one). A writer that leased the old key and
 * reserved sequence numbers under it must not fail the subject's next appends with
 * `key_destroyed`: the subject was not erased, it has a new key to seal under.
 */
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FsObjectStore, Lethe } from '../../src/client/index.js';
import { TOKENS } from '../support/vault.js';
import { type ServedVault, serveTestVault } from './served.js';

let v: ServedVault;
let lethe: Lethe;

beforeAll(async () => {
  // leases that outlive the test: the writer holds the old key's lease when the forget re-keys
  v = await serveTestVault({ extraEnv: { LETHE_LEASE_TTL_SECONDS: '600' } });
  lethe = new Lethe({ baseUrl: v.baseUrl, tokens: { writer: TOKENS.writer, eraser: TOKENS.eraser, admin: TOKENS.admin } });
}, 180_000);
afterAll(async () => {
  await v?.close();
});

describe("a writer across a forget of one of its subject's memories", () => {
  it('the next append after the re-key is stored under the new key, not refused key_destroyed', { timeout: 60_000 }, async () => {
    const writer = lethe.writer({ store: new FsObjectStore(path.join(v.t.dataDir, 'objects'), v.t.config.bucket), segmentMaxAgeMs: 10 });
    try {
      const subject = 'user:writer-rekey';
      const gone = await writer.append(subject, { text: "Quentin pawned his grandfather's pocket watch in Marseille" });
      const kept = await writer.append(subject, { text: 'Prefers aisle seats on overnight trains' });
      const { erasureId } = await lethe.forget(gone.entryId);
      expect((await lethe.erasures.wait(erasureId)).status).toBe('completed');
      const after = await writer.append(subject, { text: 'Started learning the cello this spring' });
      expect(after.keyId).not.toBe(gone.keyId);
      const ids = [];
      for await (const e of lethe.entries.list(subject)) ids.push(e.entryId);
      expect(ids).toEqual([kept.entryId, after.entryId]);
    } finally {
      await writer.close();
    }
  });
});
