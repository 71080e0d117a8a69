/**
 * The lexical (keyed shingle) index over its life, through real vaults on one
 * PostgreSQL database (two replicas hearing each other over LISTEN/NOTIFY): filled on
 * append on both replicas, sealed at rest beside each embedding (no shingle hash in
 * the clear), rebuilt by decrypting at start-up, emptied of a key's records when the
 * key is destroyed — and the probe's refusal to certify on an index that is not
 * caught up: it rebuilds and waits, and fails loudly when the index cannot cover what
 * is stored.
 */
import { type SQL, sql } from 'drizzle-orm';
import { PgDialect } from 'drizzle-orm/pg-core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { queryRows } from '../../src/db/client.js';
import type { App } from '../../src/app/open.js';
import { embeddingsOfEvent, sealEmbedding, upsertEmbeddings } from '../../src/vectors/embeddings.js';
import { MAX_INDEX_WAITS } from '../../src/erasure/steps/probe.js';
import { registerTexts } from '../support/registration.js';
import { openTestVault, type TestVault } from '../support/vault.js';

async function eventually(check: () => boolean, timeoutMs = 15_000): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 25));
  }
  return true;
}

/**
 * Record ids whose `embeddings` notification `app` has heard (its own writes come back
 * too), and a wait for one. Registered after the app's own handler, so by the time a
 * record is heard here the app's load of it, if it started one, is in
 * `app.vectors.loadsSettled()`.
 */
function heardEmbeddings(app: App): (recordId: string) => Promise<void> {
  const heard = new Set<string>();
  const waiting = new Map<string, () => void>();
  app.events.on('embeddings', (event) => {
    for (const [recordId] of embeddingsOfEvent(event)) {
      heard.add(recordId);
      waiting.get(recordId)?.();
    }
  });
  return (recordId) => (heard.has(recordId) ? Promise.resolve() : new Promise((resolve) => waiting.set(recordId, resolve)));
}

/** Little-endian float64 bytes of a shingle hash, as the sealed set would hold it in the clear. */
function bytesOf(h: number): Buffer {
  const b = Buffer.alloc(8);
  b.writeDoubleLE(h);
  return b;
}

describe('the lexical index on two replicas of one vault', () => {
  let tv: TestVault;
  let replica: App;
  const written: Array<{ subject: string; text: string; entryId: string; keyId: string }> = [];

  beforeAll(async () => {
    tv = await openTestVault({ app: { erasureWorker: false } });
    replica = await tv.reopen({ erasureWorker: false });
    for (const [subject, text] of [
      ['user:lex-a', 'Ingrid keeps her bicycle at the Vesterbro depot.'],
      ['user:lex-a', 'Ingrid is learning the cello on Tuesdays.'],
      ['user:lex-b', 'Paolo grows basil on a balcony in Trastevere.'],
    ] as const) {
      const { entryId, keyId } = await tv.app.log.append(subject, { text }, 'writer');
      written.push({ subject, text, entryId, keyId });
    }
  }, 60_000);
  afterAll(async () => {
    await replica?.close();
    await tv?.close();
  });

  it('an appended entry is in the lexical index at once here and soon on the other replica, under its key', async () => {
    for (const w of written) {
      expect(tv.app.vectors.lexical.keyOf(w.entryId)).toBe(w.keyId);
      // the entry's own rarest shingle finds it
      const { words } = tv.app.vectors.shinglesOf(w.text);
      expect(words.some((h) => tv.app.vectors.lexical.df(h) === 1)).toBe(true);
    }
    expect(await eventually(() => written.every((w) => replica.vectors.lexical.keyOf(w.entryId) === w.keyId))).toBe(true);
    const coverage = await replica.vectors.coverage();
    expect(coverage).toEqual({ indexed: coverage.stored, stored: coverage.stored, queued: 0, rebuilding: false });
  });

  it("shingle sets are sealed at rest: no stored row holds any of its text's shingle hashes in the clear", async () => {
    const rows = await queryRows<{ record_id: string; sealed: Uint8Array }>(tv.app.db.db, sql`select record_id, sealed from embeddings`);
    for (const w of written) {
      const row = rows.find((r) => r.record_id === w.entryId)!;
      const { words, pairs } = tv.app.vectors.shinglesOf(w.text);
      for (const h of [...words, ...pairs]) expect(Buffer.from(row.sealed).includes(bytesOf(h))).toBe(false);
    }
  });

  it("an append publishes its entry itself: its own notification loads nothing, while the other replica's appends to the subject are loaded", async () => {
    const heard = heardEmbeddings(tv.app);
    const dialect = new PgDialect();
    const reads = vi.spyOn(tv.app.db.db, 'execute');
    try {
      const subject = 'user:lex-own';
      const text = (who: string, i: number) => `${who} note ${i}: the boiler code is ${1000 + i}.`;
      const [mine, theirs] = await Promise.all([
        Promise.all(Array.from({ length: 12 }, (_, i) => tv.app.log.append(subject, { text: text('mine', i) }, 'writer'))),
        Promise.all(Array.from({ length: 12 }, (_, i) => replica.log.append(subject, { text: text('theirs', i) }, 'writer'))),
      ]);
      for (const a of [...mine, ...theirs]) await heard(a.entryId);
      await tv.app.vectors.loadsSettled();
      // the record ids this replica read back from their sealed rows (publish.ts load)
      const loaded = new Set(
        reads.mock.calls
          .map(([q]) => dialect.sqlToQuery(q as SQL))
          .filter((q) => q.sql.includes('from embeddings where record_id'))
          .flatMap((q) => q.params.map(String)),
      );
      expect(mine.filter((a) => loaded.has(a.entryId))).toEqual([]);
      // positive control: the other replica's entries, under the same key, were heard and loaded
      expect(theirs.filter((a) => !loaded.has(a.entryId))).toEqual([]);
      for (const a of [...mine, ...theirs]) expect(tv.app.vectors.lexical.has(a.entryId)).toBe(true);
    } finally {
      reads.mockRestore();
    }
  });

  it('a notification heard while a record is being committed here: skipped under the key committed, loaded when done if unpublished, loaded at once under another key', async () => {
    const { entryId, keyId } = await tv.app.log.append('user:lex-heard', { text: 'The ladder is behind the shed.' }, 'writer');
    const v = tv.app.vectors;
    // the commit's answer lost (or another replica's commit won): heard meanwhile, published by no one here, loaded once done
    v.unpublish([entryId]);
    await v.publishingRecords([{ recordId: entryId, keyId }], async () => {
      v.loadWritten([[entryId, keyId]]);
      await v.loadsSettled();
      expect(v.lexical.has(entryId)).toBe(false);
    });
    await v.loadsSettled();
    expect(v.lexical.keyOf(entryId)).toBe(keyId);
    // committed here under one key while the notification names another (a re-key moved it): loaded at once
    v.unpublish([entryId]);
    await v.publishingRecords([{ recordId: entryId, keyId: 'key_notthekeyitisunder00' }], async () => {
      v.loadWritten([[entryId, keyId]]);
      await v.loadsSettled();
      expect(v.lexical.keyOf(entryId)).toBe(keyId);
    });
  });

  it('a vault opened later rebuilds the lexical index by decrypting the sealed rows', async () => {
    const later = await tv.reopen({ erasureWorker: false });
    try {
      for (const w of written) expect(later.vectors.lexical.keyOf(w.entryId)).toBe(w.keyId);
      const coverage = await later.vectors.coverage();
      expect(coverage.indexed).toBe(coverage.stored);
    } finally {
      await later.close();
    }
  });

  it('a probe on a replica whose index missed a record does not certify without it: it reconciles the index against the stored rows first', async () => {
    const missed = written.find((w) => w.subject === 'user:lex-b')!;
    // a notification this replica never heard: the record is stored but not in its index
    replica.vectors.lexical.remove(missed.entryId);
    expect((await replica.vectors.coverage()).indexed).toBe((await replica.vectors.coverage()).stored - 1);
    const { erasureId } = await replica.erasures.request({ subject: 'user:lex-a' }, 'eraser');
    const view = await replica.erasures.settle(erasureId, 30_000);
    expect(view.status).toBe('completed');
    expect(replica.vectors.lexical.has(missed.entryId)).toBe(true);
    expect(view.probe.coverage).toEqual({ indexed: view.probe.coverage!.stored, stored: view.probe.coverage!.stored });
    expect(view.steps.find((s) => s.name === 'probe')!.detail).toMatch(/index coverage (\d+)\/\1/);
    // the erased subject's records left the index on both replicas
    const gone = written.filter((w) => w.subject === 'user:lex-a');
    expect(await eventually(() => gone.every((w) => !replica.vectors.lexical.has(w.entryId) && !tv.app.vectors.lexical.has(w.entryId)))).toBe(true);
  }, 60_000);

  it('reconcile loads what a missed notification left out and drops what a missed destruction left in', async () => {
    const kept = written.find((w) => w.subject === 'user:lex-b')!;
    tv.app.vectors.lexical.remove(kept.entryId);
    // a record whose row is gone (its key destroyed where this replica did not hear it)
    tv.app.vectors.publish([{ recordId: 'entry_ghostghostghostghost00', recordType: 'entry', keyId: 'key_gone', shingles: Float64Array.of(1, 2, 3) }]);
    const coverage = await tv.app.vectors.reconcile();
    expect(coverage).toMatchObject({ loaded: 1, dropped: 1 });
    expect(coverage.indexed).toBe(coverage.stored);
    expect(tv.app.vectors.lexical.has(kept.entryId)).toBe(true);
    expect(tv.app.vectors.lexical.has('entry_ghostghostghostghost00')).toBe(false);
  });

  it('a stored record the index can never hold (written before lexical indexing) fails the erasure loudly, naming the coverage', async () => {
    const heard = heardEmbeddings(tv.app);
    const { entryId, keyId } = await tv.app.log.append('user:lex-old', { text: 'An entry from an older lethe.' }, 'writer');
    // the append's own notification may come back before the append publishes the entry,
    // and the load it then starts reads the row as the append wrote it (with a shingle set):
    // it must have landed before the row is made older below, or it puts that set back
    await heard(entryId);
    await tv.app.vectors.loadsSettled();
    // its row as an older lethe sealed it: the vector alone, no shingle set
    const { dek } = await tv.app.keys.dekFor(keyId);
    const [vector] = await tv.app.vectors.embedder.embed(['An entry from an older lethe.']);
    const model = tv.app.vectors.embedder.model;
    await upsertEmbeddings(tv.app.db.db, [
      { recordId: entryId, recordType: 'entry', keyId, model, sealed: sealEmbedding(dek, { recordId: entryId, keyId, model }, vector!), foldVersion: 1 },
    ]);
    dek.fill(0);
    await tv.app.vectors.rebuild();
    expect(tv.app.vectors.lexical.has(entryId)).toBe(false);
    await tv.app.log.append('user:lex-c', { text: 'Someone to erase.' }, 'writer');
    const { erasureId } = await tv.app.erasures.request({ subject: 'user:lex-c' }, 'eraser');
    const view = await tv.app.erasures.settle(erasureId, (MAX_INDEX_WAITS + 10) * 1500);
    expect(view.status).toBe('failed');
    const probe = view.steps.find((s) => s.name === 'probe')!;
    expect(probe.status).toBe('failed');
    expect(probe.detail).toMatch(/covers \d+ of \d+ stored records after \d+ waits/);
    expect(view.certificate).toBeUndefined();
  }, 60_000);
});

describe('this replica committing records (an indexer batch, a re-key) while the other replica appends to the same subject', () => {
  let tv: TestVault;
  let other: App;
  beforeAll(async () => {
    tv = await openTestVault({ app: { erasureWorker: false, indexWorker: false } });
    other = await tv.reopen({ erasureWorker: false, indexWorker: false });
  }, 60_000);
  afterAll(async () => {
    await tv?.close();
  });

  it("loads the other replica's append heard during the batch's commit: only the batch's own records are skipped", async () => {
    const subject = 'user:lex-race';
    const registered = await registerTexts(tv.app, subject, ['The spare key is in the blue tin.', 'The gate code is 4471.']);
    const heard = heardEmbeddings(tv.app);
    let theirs: { entryId: string; keyId: string } | undefined;
    const db = tv.app.db.db;
    const transaction = db.transaction.bind(db);
    // the indexer's commit, held until the other replica's append to the subject was heard here
    const spy = vi.spyOn(db, 'transaction').mockImplementation(async (fn, config) => {
      if (!theirs && /indexer-batch/.test(new Error().stack ?? '')) {
        theirs = await other.log.append(subject, { text: 'The boat is moored at pier 9.' }, 'writer');
        await heard(theirs.entryId);
      }
      return transaction(fn, config);
    });
    try {
      expect((await tv.app.log.indexer.runOnce()).indexed).toBe(2);
    } finally {
      spy.mockRestore();
    }
    await tv.app.vectors.loadsSettled();
    // positive control: the append went in under the batch's key, inside its commit
    expect(theirs?.keyId).toBe(registered.keyId);
    expect(registered.ids.every((id) => tv.app.vectors.lexical.has(id))).toBe(true);
    expect(tv.app.vectors.lexical.has(theirs!.entryId)).toBe(true);
  });

  it("loads the other replica's append under a re-key's new key, heard between the switch and the re-key's publish", async () => {
    const subject = 'user:lex-rekey';
    const kept = await tv.app.log.append(subject, { text: 'The cellar key hangs by the stairs.' }, 'writer');
    const gone = await tv.app.log.append(subject, { text: 'Forget the old alarm code 7731.' }, 'writer');
    const heard = heardEmbeddings(tv.app);
    let theirs: { entryId: string; keyId: string } | undefined;
    const replaceKey = tv.app.keys.replaceKey.bind(tv.app.keys);
    // the switch committed, the other replica appends under the new key and is heard here before the re-key publishes
    const spy = vi.spyOn(tv.app.keys, 'replaceKey').mockImplementation(async (...args) => {
      const done = await replaceKey(...args);
      theirs = await other.log.append(subject, { text: 'The shed light is on a timer.' }, 'writer');
      await heard(theirs.entryId);
      return done;
    });
    try {
      await tv.app.log.rekeySubject(subject, { exclude: [gone.entryId], actor: 'admin', reason: 'lexical index test' });
    } finally {
      spy.mockRestore();
    }
    await tv.app.vectors.loadsSettled();
    // positive control: the append went in under the re-key's new key, which the kept entry moved to
    const newKey = tv.app.vectors.lexical.keyOf(kept.entryId);
    expect(newKey).toBeDefined();
    expect(newKey).not.toBe(kept.keyId);
    expect(theirs?.keyId).toBe(newKey);
    expect(tv.app.vectors.lexical.keyOf(theirs!.entryId)).toBe(newKey);
    expect(tv.app.vectors.lexical.has(gone.entryId)).toBe(false);
  });
});
