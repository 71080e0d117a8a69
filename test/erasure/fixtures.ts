/**
 * Shared by the erasure tests that judge an erasure from outside: HTTP calls with the
 * role tokens (to a real service process or to an app over a vault), the class B
 * scenario of the seeds (A's entries with canaries, another subject's entries, a
 * summary of both, a digest above it), and the checks every such test makes.
 */
import { randomBytes } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { expect } from 'vitest';
import { type Db, queryRows } from '../../src/db/client.js';
import { createHttpApp } from '../../src/http/app.js';
import { TokenStore } from '../../src/http/auth.js';
import type { App } from '../../src/app/open.js';
import { expectProblem, ok } from '../support/http.js';
import { requestInit, type TestApp } from '../support/vault.js';

export const tag = (n = 5) => randomBytes(n).toString('hex');

/** One HTTP call with a role's token: the signature of TestApp.call. */
export type Call = TestApp['call'];

/** Calls a running service over the network. */
export function callService(baseUrl: string): Call {
  return (method, p, o = {}) => fetch(`${baseUrl}${p}`, requestInit(method, o));
}

/** Calls the HTTP API of an opened vault in process (app.request). */
export function callVault(vault: App): Call {
  const app = createHttpApp({ services: vault, tokens: TokenStore.fromPairs(vault.config.tokens) });
  return (method, p, o = {}) => Promise.resolve(app.request(p, requestInit(method, o)));
}

export interface ErasureReply {
  erasureId: string;
  status: string;
  class?: string;
  subjectHash: string;
  steps: Array<{ name: string; status: string; detail?: string }>;
  residuals: Array<{ tier: string; kind: string; detail: string; until?: string; bound: number | string }>;
  probe: { recovered: number; threshold: number; matches: Array<{ id: string; tier: string; score: number }> };
  certificate?: { payload: Record<string, unknown>; signature: string; publicKey: string };
  certificateState?: string;
}

/** Polls GET /v1/erasures/{id} until the erasure has finished (or the deadline passes, naming where it stood). */
export async function awaitErasure(call: Call, erasureId: string, timeoutMs = 60_000): Promise<ErasureReply> {
  const deadline = Date.now() + timeoutMs;
  let last: ErasureReply | undefined;
  for (;;) {
    last = await ok<ErasureReply>(call('GET', `/v1/erasures/${erasureId}`, { role: 'eraser' }), 200);
    if (last.status !== 'pending' && last.status !== 'running') return last;
    if (Date.now() > deadline) {
      throw new Error(`erasure ${erasureId} did not finish in ${timeoutMs} ms; steps: ${JSON.stringify(last.steps.map((s) => [s.name, s.status, s.detail]))}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

export interface ClassB {
  readonly A: string;
  readonly B: string;
  readonly C: string;
  /** A's private canaries: after the erasure no readable byte may hold them. */
  readonly aCanaries: readonly string[];
  readonly bCanary: string;
  readonly cCanary: string;
  readonly aEntries: readonly string[];
  readonly aKeyId: string;
  readonly b1: string;
  readonly c1: string;
  /** Summary of A's and B's entries. */
  readonly summary: string;
  /** Digest of the summary and C's entry. */
  readonly digest: string;
  /** Version keys of the summary and the digest before the erasure. */
  readonly versionKeys: readonly string[];
}

/** The seeds' class B scenario, written through the vault in process. */
export async function classB(vault: App, label: string): Promise<ClassB> {
  const t = tag();
  const A = `user:${label}-a-${t}`;
  const B = `user:${label}-b-${t}`;
  const C = `user:${label}-c-${t}`;
  const aCanaries = [`ACANARY${tag(6)}`, `ALOCKER${tag(6)}`];
  const bCanary = `BCANARY${tag(6)}`;
  const cCanary = `CCANARY${tag(6)}`;
  const a1 = await vault.log.append(A, { text: `Alice loves birdwatching in the marshes ${aCanaries[0]}.` }, 'writer');
  const a2 = await vault.log.append(A, { text: `Alice keeps her locker code ${aCanaries[1]} in a notebook.` }, 'writer');
  const b1 = await vault.log.append(B, { text: `Bob collects vintage synthesizers ${bCanary}.` }, 'writer');
  const c1 = await vault.log.append(C, { text: `Carol trains for the Berlin marathon ${cCanary}.` }, 'writer');
  const summary = await vault.artifacts.write(
    {
      kind: 'summary',
      text: `Interests: birdwatching ${aCanaries[0]}; locker ${aCanaries[1]}; synthesizers ${bCanary}.`,
      sources: [a1.entryId, a2.entryId, b1.entryId],
    },
    'writer',
  );
  const digest = await vault.artifacts.write(
    {
      kind: 'digest',
      text: `Topic digest: birdwatching ${aCanaries[0]}, synthesizers ${bCanary}, marathon ${cCanary}.`,
      sources: [summary.artifactId, c1.entryId],
    },
    'writer',
  );
  const versionKeys = (
    await queryRows<{ key_id: string }>(
      vault.db.db,
      sql`select key_id from artifacts where artifact_id in (${summary.artifactId}, ${digest.artifactId}) order by artifact_id`,
    )
  ).map((r) => r.key_id);
  return {
    A,
    B,
    C,
    aCanaries,
    bCanary,
    cCanary,
    aEntries: [a1.entryId, a2.entryId],
    aKeyId: a1.keyId,
    b1: b1.entryId,
    c1: c1.entryId,
    summary: summary.artifactId,
    digest: digest.artifactId,
    versionKeys,
  };
}

/** Every text search hands back for these queries (k = 50 each), over every subject's records (an admin's allSubjects search). */
export async function searchTexts(call: Call, queries: readonly string[]): Promise<string> {
  const out: string[] = [];
  for (const query of queries) {
    const { hits } = await ok<{ hits: Array<{ id: string; text: string }> }>(
      call('POST', '/v1/search', { role: 'admin', body: { query, k: 50, allSubjects: true } }),
      200,
    );
    out.push(...hits.map((h) => `${h.id} ${h.text}`));
  }
  return out.join('\n');
}

/**
 * What the API shows of a class B scenario after A's erasure: A's entries and log
 * answer key_destroyed / subject_erased, search finds none of A's canaries, and B's
 * and C's entries read back whole.
 */
export async function expectLogErasedOthersKept(call: Call, s: ClassB): Promise<void> {
  for (const id of s.aEntries) await expectProblem(call('GET', `/v1/entries/${id}`), 410, 'key_destroyed');
  await expectProblem(call('GET', `/v1/subjects/${encodeURIComponent(s.A)}/entries`), 410, 'subject_erased');
  expect((await ok<{ text: string }>(call('GET', `/v1/entries/${s.b1}`), 200)).text).toBe(`Bob collects vintage synthesizers ${s.bCanary}.`);
  expect((await ok<{ text: string }>(call('GET', `/v1/entries/${s.c1}`), 200)).text).toBe(`Carol trains for the Berlin marathon ${s.cCanary}.`);
  const found = await searchTexts(call, [...s.aCanaries, 'birdwatching in the marshes', 'locker code notebook', s.bCanary]);
  for (const canary of s.aCanaries) expect(found, `search still returns ${canary}`).not.toContain(canary);
  expect(found, 'search still finds B').toContain(s.b1);
}

/** After the cascade: both artifacts at version 2, none of A's canaries, B's and C's content kept. */
export async function expectArtifactsRegenerated(call: Call, s: ClassB): Promise<void> {
  const summary = await ok<{ version: number; text: string; sources: string[] }>(call('GET', `/v1/artifacts/${s.summary}`), 200);
  const digest = await ok<{ version: number; text: string; sources: string[] }>(call('GET', `/v1/artifacts/${s.digest}`), 200);
  for (const canary of s.aCanaries) {
    expect(summary.text, `summary v${summary.version}`).not.toContain(canary);
    expect(digest.text, `digest v${digest.version}`).not.toContain(canary);
  }
  expect([summary.version, digest.version]).toEqual([2, 2]);
  expect(summary.text).toContain(s.bCanary);
  expect(summary.sources).toEqual([s.b1]);
  expect(digest.text).toContain(s.bCanary);
  expect(digest.text).toContain(s.cCanary);
  expect([...digest.sources].sort()).toEqual([s.summary, s.c1].sort());
}

export interface TransitionRow {
  id: number;
  from_step: string | null;
  to_step: string | null;
  status: string;
  replica: string;
  detail: string | null;
}

export async function transitionsOf(db: Db, erasureId: string): Promise<TransitionRow[]> {
  return queryRows<TransitionRow>(
    db.db,
    sql`select id, from_step, to_step, status, replica, detail from erasure_transitions where erasure_id = ${erasureId} order by id`,
  );
}

/** How many rows of the audit log record `action` for `artifactId` (detail is canonical JSON). */
export async function auditCount(db: Db, action: string, match: { artifactId?: string; keyId?: string }): Promise<number> {
  const rows = await queryRows<{ key_id: string | null; detail: string }>(db.db, sql`select key_id, detail from audit_log where action = ${action}`);
  return rows.filter((r) => {
    if (match.keyId !== undefined && r.key_id !== match.keyId) return false;
    if (match.artifactId !== undefined && (JSON.parse(r.detail) as { artifactId?: string }).artifactId !== match.artifactId) return false;
    return true;
  }).length;
}
