/**
 * The one key-destruction event: recorded only inside KeyDestructions.transaction,
 * published once after commit on the replica that destroyed the key, heard by the
 * others over NOTIFY, and never published for a destruction that rolled back.
 */
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../src/app/open.js';
import { destructionLedger, embeddings } from '../../src/db/schema.js';
import { isLetheError } from '../../src/errors.js';
import { openTestVault, type TestVault } from '../support/vault.js';

let tv: TestVault;
let replica: App;

beforeAll(async () => {
  tv = await openTestVault();
  replica = await tv.reopen();
});
afterAll(async () => {
  await tv?.close();
});

/** Every publication the app's destruction event makes while `fn` runs. */
async function published(app: App, fn: () => Promise<unknown>): Promise<Array<{ keyIds: readonly string[]; origin: string }>> {
  const seen: Array<{ keyIds: readonly string[]; origin: string }> = [];
  const off = app.destructions.subscribe((keyIds, origin) => seen.push({ keyIds, origin }));
  try {
    await fn();
    return seen;
  } finally {
    off();
  }
}

async function until(check: () => boolean, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('the key destruction event', () => {
  it('a destroyed subject key is published once, locally, after its ledger row committed, with its embeddings gone in the same transaction', async () => {
    const { keyId } = await tv.app.log.append('user:d1', { text: 'kept until the key goes' }, 'writer');
    expect(await tv.app.db.db.select().from(embeddings).where(eq(embeddings.keyId, keyId))).toHaveLength(1);
    let ledgerAtPublish: number | undefined;
    const seen: Array<{ keyIds: readonly string[]; origin: string }> = [];
    const off = tv.app.destructions.subscribe((keyIds, origin) => {
      seen.push({ keyIds, origin });
      // published after commit: another connection already sees the ledger row
      void tv.app.db.db
        .select()
        .from(destructionLedger)
        .where(eq(destructionLedger.keyId, keyId))
        .then((rows) => (ledgerAtPublish = rows.length));
    });
    try {
      await tv.app.keys.destroyKey(keyId, { reason: 'test', actor: 'admin' });
      await tv.app.keys.destroyKey(keyId, { reason: 'again', actor: 'admin' }); // idempotent: nothing new to publish
    } finally {
      off();
    }
    expect(seen).toEqual([{ keyIds: [keyId], origin: 'local' }]);
    await until(() => ledgerAtPublish !== undefined);
    expect(ledgerAtPublish).toBe(1);
    expect(await tv.app.db.db.select().from(embeddings).where(eq(embeddings.keyId, keyId))).toEqual([]);
  });

  it('another replica publishes it when it hears the key is gone, and drops its vectors', async () => {
    const { keyId, entryId } = await tv.app.log.append('user:d2', { text: 'a vector another replica loads' }, 'writer');
    await until(() => replica.vectors.index.keyOf(entryId) === keyId);
    const heard: Array<{ keyIds: readonly string[]; origin: string }> = [];
    const off = replica.destructions.subscribe((keyIds, origin) => heard.push({ keyIds, origin }));
    try {
      await tv.app.keys.destroyKey(keyId, { reason: 'test', actor: 'admin' });
      await until(() => heard.length > 0);
    } finally {
      off();
    }
    expect(heard).toEqual([{ keyIds: [keyId], origin: 'replica' }]);
    expect(replica.vectors.index.keyOf(entryId)).toBeUndefined();
  });

  it('destroying a key another replica already destroyed publishes it here when this replica has not heard of it yet', async () => {
    const { keyId, entryId } = await tv.app.log.append('user:d5', { text: 'a vector a deaf replica holds' }, 'writer');
    // a replica that hears nothing (its notifications lost): it loads the vector at start-up
    const deaf = await tv.reopen({ listen: false, searchIndex: true });
    expect(deaf.vectors.index.keyOf(entryId)).toBe(keyId);
    await tv.app.keys.destroyKey(keyId, { reason: 'elsewhere', actor: 'admin' });
    const seen = await published(deaf, async () => {
      const again = await deaf.keys.destroyKey(keyId, { reason: 'here', actor: 'eraser' });
      expect(again.destroyedNow).toBe(false);
    });
    expect(seen).toEqual([{ keyIds: [keyId], origin: 'local' }]);
    expect(deaf.vectors.index.keyOf(entryId)).toBeUndefined();
    // and only once: a third call finds it published
    expect(await published(deaf, () => deaf.keys.destroyKey(keyId, { reason: 'again', actor: 'eraser' }))).toEqual([]);
  });

  it('a fence is heard by other replicas but is not a destruction', async () => {
    const { keyId } = await tv.app.log.append('user:d3', { text: 'fenced, not destroyed' }, 'writer');
    const seen = await published(replica, async () => {
      await tv.app.keys.fenceKey(keyId, 'eraser');
      // the notification arrives and is checked; give it time to (wrongly) publish
      await new Promise((r) => setTimeout(r, 300));
    });
    expect(seen).toEqual([]);
    await tv.app.keys.unfenceKey(keyId, 'eraser');
  });

  it('recording a destruction outside KeyDestructions.transaction throws and writes nothing', async () => {
    const keyId = 'key_notinatransaction0000';
    const error = await tv.app.db.db
      .transaction((tx) =>
        tv.app.destructions.record(
          tx,
          { keyId, keyKind: 'subject', subjectHash: null, wrappedEpoch: 1, reason: 'test', destroyedAt: new Date(), leasedUntil: null },
          { actor: 'test', action: 'key.destroy', keyId },
        ),
      )
      .catch((e: unknown) => e);
    expect(isLetheError(error, 'internal')).toBe(true);
    expect(await tv.app.db.db.select().from(destructionLedger).where(eq(destructionLedger.keyId, keyId))).toEqual([]);
  });

  it('a destruction whose transaction rolls back is not published', async () => {
    const { keyId } = await tv.app.log.append('user:d4', { text: 'survives a failed re-key' }, 'writer');
    const seen = await published(tv.app, async () => {
      const error = await tv.app.keys
        .replaceKey(keyId, {
          reason: 'test',
          actor: 'admin',
          newKeyId: 'key_replacementthatfails0',
          newDek: new Uint8Array(32).fill(7),
          migrate: async () => {
            throw new Error('the migration failed');
          },
        })
        .catch((e: unknown) => e);
      expect((error as Error).message).toBe('the migration failed');
    });
    expect(seen).toEqual([]);
    expect((await tv.app.keys.states([keyId])).get(keyId)).toBe('active');
  });
});
