/** `lethe reindex` as a child process against a real PostgreSQL and store: rows of an older comparison form computed again. */
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { queryRows } from '../../src/db/client.js';
import { FOLD_VERSION } from '../../src/vectors/fold.js';
import { runCli } from '../support/process.js';
import { openTestVault, type TestVault } from '../support/vault.js';

describe('lethe reindex', () => {
  let tv: TestVault;
  beforeAll(async () => {
    tv = await openTestVault({ app: { listen: false } });
  });
  afterAll(async () => {
    await tv?.close();
  });

  it('re-indexes the rows an older lethe sealed, prints what it did as JSON, and exits 0; a second run finds nothing', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await tv.app.log.append('user:r1', { text: `Phone: +44 20 7946 095${i}` }, 'writer')).entryId);
    // as an older lethe left them
    await tv.app.db.db.execute(sql`update embeddings set fold_version = 1`);
    const run = await runCli(['reindex'], { ...tv.env });
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toEqual({ reindexed: 3, left: 0 });
    const versions = await queryRows<{ v: number }>(tv.app.db.db, sql`select distinct fold_version as v from embeddings`);
    expect(versions).toEqual([{ v: FOLD_VERSION }]);
    const again = await runCli(['reindex'], { ...tv.env });
    expect(again.code, again.stderr).toBe(0);
    expect(JSON.parse(again.stdout)).toEqual({ reindexed: 0, left: 0 });
  }, 90_000);
});
