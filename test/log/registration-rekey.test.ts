/**
 * A writer's registration retried across a re-key, on PostgreSQL and a real MinIO: the
 * writer retries a registration whose answer it lost with the same segment, ids, places
 * and wrapped record keys (src/client/writer.ts). If the subject was re-keyed in between
 * (one of its memories forgotten), the entries it registered now sit under the subject's
 * new key with re-wrapped record keys — the same frames at the same places. The retry
 * must answer `registered` (they are stored), not 409 `conflict` (which tells the writer
 * nothing was registered); an entry id taken by another frame is still a conflict.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectProblem, ok } from '../support/http.js';
import { upload as uploadTexts } from '../support/registration.js';
import { minioEnv, openTestApp, type TestApp } from '../support/vault.js';

type Results = { results: Array<{ entryId: string; status: string }> };

describe('a registration retried across a re-key', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await openTestApp({ extraEnv: minioEnv('lethe-regrk') });
  });
  afterAll(async () => {
    await t?.close();
  });

  /** Seals `texts` as the writer does, uploads one segment, answers its registration body (test/support/registration.ts). */
  const upload = (subject: string, texts: readonly string[]) => uploadTexts(t.app, subject, texts);
  const register = (body: unknown) => t.call('POST', '/v1/segments', { body });

  it("answers registered again once a re-key moved the entries to the subject's new key; another frame under a taken id is still a conflict", async () => {
    const subject = `user:regrk-${randomBytes(4).toString('hex')}`;
    const body = await upload(subject, ['Ordered a sourdough starter from Lyon', 'Moved the dentist to Thursday', 'Finished reading Middlemarch']);
    expect((await ok<Results>(register(body), 201)).results.map((r) => r.status)).toEqual(['registered', 'registered', 'registered']);
    // one memory forgotten: the subject re-keyed without it, the others moved to its new key
    const forgotten = body.entries[1]!.entryId;
    const result = await t.app.log.rekeySubject(subject, { exclude: [forgotten], actor: 'test' });
    expect(result.removed).toBe(1);
    // the writer's retry of the registration whose answer it lost
    const again = await ok<Results>(register(body), 201);
    expect(again.results.map((r) => r.status)).toEqual(['registered', 'registered', 'registered']);
    expect((await t.app.log.list(subject)).map((e) => e.text)).toEqual(['Ordered a sourdough starter from Lyon', 'Finished reading Middlemarch']);
    // a frame elsewhere under a taken id is still refused
    const other = await upload(subject, ['something else entirely']);
    const hijack = { ...other, entries: [{ ...other.entries[0]!, entryId: body.entries[0]!.entryId }] };
    await expectProblem(register(hijack), 409, 'conflict');
  });
});
