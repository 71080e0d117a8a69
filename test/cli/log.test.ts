/** `lethe log fsck | compact | rekey` as child processes against a real PostgreSQL and store. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../support/process.js';
import { openTestVault, type TestVault } from '../support/vault.js';

describe('lethe log', () => {
  let tv: TestVault;
  beforeAll(async () => {
    tv = await openTestVault();
    for (let i = 0; i < 3; i++) await tv.app.log.append('user:f1', { text: `user:f1 ${i}` }, 'writer');
  });
  afterAll(async () => {
    await tv?.close();
  });

  it('runs fsck and compact, re-keys a subject without an entry, and refuses a bad grace period or an unknown subject', async () => {
    const env = { ...tv.env };
    const ok = await runCli(['log', 'fsck', '--deep'], env);
    expect(ok.code).toBe(0);
    expect(JSON.parse(ok.stdout)).toMatchObject({ ok: true });
    const bad = await runCli(['log', 'fsck', '--grace-seconds', 'soon'], env);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--grace-seconds');
    const c = await runCli(['log', 'compact'], env);
    expect(c.code).toBe(0);
    expect(JSON.parse(c.stdout)).toMatchObject({ segmentsExamined: 0 });
    const [first] = await tv.app.log.list('user:f1');
    const r = await runCli(['log', 'rekey', 'user:f1', '--exclude', first!.entryId], env);
    // the same path as DELETE /v1/entries/{id}: a records-scope erasure, run to its end, certified — and its
    // probe finds the forgotten text's near copies in the entries that stay ('user:f1 1', 'user:f1 2'): incomplete, exit 3
    expect(r.code, r.stderr).toBe(3);
    const forgot = JSON.parse(r.stdout) as { status: string; scope: string; entryIds: string[]; residuals: Array<{ kind: string; detail: string }> };
    expect(forgot).toMatchObject({ status: 'incomplete', scope: 'records', entryIds: [first!.entryId] });
    expect(forgot.residuals.some((x) => x.kind === 'wrapped-dek' && /lives on under a new key/.test(x.detail))).toBe(true);
    await expect(tv.app.log.get(first!.entryId)).rejects.toMatchObject({ code: 'entry_forgotten' });
    expect((await tv.app.log.list('user:f1')).map((e) => e.text)).toEqual(['user:f1 1', 'user:f1 2']);
    const whole = await runCli(['log', 'rekey', 'user:f1'], env);
    expect(whole.code, whole.stderr).toBe(0);
    expect(JSON.parse(whole.stdout)).toMatchObject({ rewritten: 2, removed: 0, destruction: 'destroyed' });
    const malformed = await runCli(['log', 'rekey', 'user:f1', '--exclude', 'entry_nope'], env);
    expect(malformed.code).toBe(2);
    expect(malformed.stderr).toContain('--exclude');
    const unknown = await runCli(['log', 'rekey', 'user:nobody'], env);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('not_found');
  }, 90_000);
});
