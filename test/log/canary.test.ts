/** The local store: a canary appended through the service is in no plain bytes at rest. */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { filesContaining } from '../support/files.js';
import { openTestApp, type TestApp, tempDir } from '../support/vault.js';

describe('at rest on the local store', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await openTestApp();
  });
  afterAll(async () => {
    await t?.close();
  });

  it('a canary string is not in the object files, the keyring, or a pg_dump, and reads back through lethe', async () => {
    const canary = `CANARY-${randomBytes(8).toString('hex')}`;
    const res = await t.call('POST', '/v1/subjects/user:canary@example.com/entries', {
      body: { text: `remember ${canary}`, kind: 'note', metadata: { where: canary } },
    });
    expect(res.status).toBe(201);
    const dump = path.join(tempDir(), 'dump.sql');
    execFileSync('pg_dump', ['--format=plain', `--file=${dump}`, t.db!.url]);
    const sqlText = readFileSync(dump, 'utf8');
    expect(sqlText).not.toContain(canary);
    expect(sqlText).not.toContain('canary@example.com');
    const onDisk = filesContaining(t.dataDir, canary);
    expect(onDisk.filesRead).toBeGreaterThanOrEqual(2); // the segment and the epoch KEK at least
    // the live bucket holds the one segment (the backup folder beside it holds the ledger chain's genesis and head)
    expect(filesContaining(path.join(t.dataDir, 'objects', t.config.bucket), 'x').filesRead).toBe(1);
    expect(onDisk.hits).toEqual([]);
    const { entries } = (await (await t.call('GET', '/v1/subjects/user:canary@example.com/entries')).json()) as { entries: Array<{ text: string }> };
    expect(entries[0]!.text).toBe(`remember ${canary}`);
  });
});
