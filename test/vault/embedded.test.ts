/** The vault on the embedded default: PGlite in LETHE_DATA_DIR with the local keyring. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/index.js';
import { createLogger } from '../../src/observability/logger.js';
import { openApp } from '../../src/app/open.js';
import { openTestVault, type TestVault } from '../support/vault.js';

describe('the vault on PGlite', () => {
  let tv: TestVault;
  beforeAll(async () => {
    tv = await openTestVault({ embedded: true });
  }, 120_000);
  afterAll(async () => {
    await tv?.close();
  });

  it('runs the key lifecycle: lease, rotate, destroy, validity, audit', async () => {
    expect(tv.app.db.kind).toBe('pglite');
    const a = await tv.app.keys.lease('user:a', 'writer');
    const b = await tv.app.keys.lease('user:b', 'writer');
    const rotation = await tv.app.epochs.rotate('admin');
    expect(rotation).toMatchObject({ epoch: 2, rewrapped: 2, retired: [1] });
    const again = await tv.app.keys.dekFor(a.keyId);
    expect(Buffer.from(again.dek)).toEqual(Buffer.from(a.dek));
    await tv.app.keys.destroyKey(b.keyId, { reason: 'embedded test', actor: 'admin' });
    // acknowledged once the ledger chain in the local backup folder holds it
    expect((await tv.app.backups.awaitDurable([b.keyId], 30_000)).pending).toEqual([]);
    expect(await tv.app.keys.validity([a.keyId, b.keyId, 'key_nope'])).toEqual({
      [a.keyId]: 'active',
      [b.keyId]: 'destroyed',
      key_nope: 'unknown',
    });
    expect(await tv.app.audit.verify(tv.app.db.db)).toMatchObject({ ok: true });
  });

  it('appends and reads the episodic log on the local filesystem store', async () => {
    expect(tv.app.objects.kind).toBe('fs');
    const a = await tv.app.log.append('user:log', { text: 'first' }, 'writer');
    await tv.app.log.append('user:log', { text: 'second', kind: 'note' }, 'writer');
    expect((await tv.app.log.list('user:log')).map((e) => [e.seq, e.text, e.kind])).toEqual([
      [1, 'first', null],
      [2, 'second', 'note'],
    ]);
    expect((await tv.app.log.get(a.entryId)).text).toBe('first');
  });

  it('a second process cannot open the same embedded database while the first holds it', async () => {
    const err = await openApp(loadConfig(tv.env), { logger: createLogger('silent') }).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'unavailable' });
    expect((err as Error).message).toMatch(/in use by process \d+/);
  });
});
