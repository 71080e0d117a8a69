/**
 * An erasure survives its service being killed in the middle of a step. For each
 * failpoint the real service runs as a child process with LETHE_FAILPOINT set, takes
 * a class B erasure and SIGKILLs itself at that point; the row is left mid-step; a
 * service started again without the failpoint takes the erasure over once the dead
 * claim lapses and finishes it — with every step done once, every affected artifact
 * regenerated once, the key destroyed once, and the backup taken before marking it.
 *
 * One database and one pair of buckets serve every case (each its own subjects).
 * Cases run one after another: a service with a failpoint claims any open erasure,
 * so two cases' services on one database would kill each other's erasures.
 */
import { sql } from 'drizzle-orm';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { queryRows } from '../../src/db/client.js';
import { FIRST_RUN, TRANSITIONS } from '../../src/erasure/machine.js';
import type { StepName } from '../../src/erasure/machine.js';
import { minioEnv } from '../backups/support.js';
import { ok } from '../support/http.js';
import { CLI, type RunningService, startService } from '../support/process.js';
import { openTestVault, type TestVault } from '../support/vault.js';
import {
  auditCount,
  awaitErasure,
  callService,
  type ClassB,
  classB,
  expectArtifactsRegenerated,
  expectLogErasedOthersKept,
  transitionsOf,
} from './fixtures.js';

interface Case {
  readonly failpoint: string;
  /** The step the row must still be at when the process is dead. */
  readonly step: StepName;
  /** What the store must show at the moment of death (proves the failpoint fired where it says). */
  readonly atDeath: (tv: TestVault, s: ClassB, erasureId: string, backupId: string) => Promise<void>;
}

const ledgerRows = async (tv: TestVault, keyId: string) =>
  Number((await queryRows<{ n: string }>(tv.app.db.db, sql`select count(*) as n from destruction_ledger where key_id = ${keyId}`))[0]!.n);
const versions = async (tv: TestVault, s: ClassB) =>
  (
    await queryRows<{ artifact_id: string; version: number }>(
      tv.app.db.db,
      sql`select artifact_id, version from artifacts where artifact_id in (${s.summary}, ${s.digest})`,
    )
  ).reduce<Record<string, number>>((m, r) => ({ ...m, [r.artifact_id === s.summary ? 'summary' : 'digest']: r.version }), {});
const keyState = async (tv: TestVault, s: ClassB, backupId: string) => (await tv.app.backups.manifest(backupId)).keys.find((k) => k.keyId === s.aKeyId)?.state;

const CASES: readonly Case[] = [
  {
    failpoint: 'fence',
    step: 'fence',
    atDeath: async (tv, s) => {
      const [k] = await queryRows<{ state: string }>(tv.app.db.db, sql`select state from subject_keys where key_id = ${s.aKeyId}`);
      expect(k?.state).toBe('fenced');
      expect(await ledgerRows(tv, s.aKeyId)).toBe(0);
    },
  },
  {
    failpoint: 'destroy-committed',
    step: 'destroy',
    atDeath: async (tv, s) => {
      // the destruction committed, its step did not
      expect(await ledgerRows(tv, s.aKeyId)).toBe(1);
      expect(await versions(tv, s)).toEqual({ summary: 1, digest: 1 });
    },
  },
  {
    failpoint: 'cascade-regenerated',
    step: 'cascade',
    atDeath: async (tv, s) => {
      // mid-cascade: the summary has its new version, the digest above it not yet
      expect(await versions(tv, s)).toEqual({ summary: 2, digest: 1 });
    },
  },
  {
    failpoint: 'propagate',
    step: 'propagate',
    atDeath: async (tv, s, _id, backupId) => {
      expect(await versions(tv, s)).toEqual({ summary: 2, digest: 2 });
      expect(await keyState(tv, s, backupId)).toBe('destroyed');
    },
  },
  {
    failpoint: 'probe-candidates',
    step: 'probe',
    atDeath: async (tv, s) => {
      expect(await versions(tv, s)).toEqual({ summary: 2, digest: 2 });
    },
  },
  {
    failpoint: 'certify',
    step: 'certify',
    atDeath: async (tv, _s, erasureId) => {
      const [row] = await queryRows<{ certificate: unknown; seal_key_id: string | null }>(
        tv.app.db.db,
        sql`select certificate, seal_key_id from erasures where erasure_id = ${erasureId}`,
      );
      expect(row?.certificate).toBeNull();
      expect(row?.seal_key_id).not.toBeNull();
    },
  },
];

describe('an erasure whose service is killed mid-step finishes after a restart', () => {
  let tv: TestVault;
  let env: Record<string, string>;
  const services: RunningService[] = [];

  beforeAll(async () => {
    const minio = minioEnv();
    tv = await openTestVault({ extraEnv: { ...minio.env, LETHE_LEASE_TTL_SECONDS: '1' }, app: { erasureWorker: false } });
    env = { ...tv.env, LETHE_ERASURE_CLAIM_SECONDS: '2', LETHE_ERASURE_POLL_MS: '100', LETHE_LEASE_TTL_SECONDS: '1' };
  });
  afterEach(async () => {
    for (const s of services.splice(0)) await s.stop();
  });
  afterAll(async () => {
    for (const s of services.splice(0)) await s.stop();
    await tv?.close();
  });

  const serve = async (extra: Record<string, string> = {}) => {
    const service = await startService(process.execPath, [...CLI, 'serve'], { ...env, ...extra });
    services.push(service);
    return service;
  };

  for (const c of CASES) {
    it(`killed at failpoint "${c.failpoint}": the row stays at ${c.step}; a restarted service completes it with each step, regeneration and destruction done once`, {
      timeout: 150_000,
    }, async () => {
      const s = await classB(tv.app, c.failpoint);
      const { backupId } = await tv.app.backups.run();
      expect((await tv.app.backups.manifest(backupId)).keys.find((k) => k.keyId === s.aKeyId)?.state).toBe('active');

      // 1. the service with the failpoint takes the erasure and kills itself
      const doomed = await serve({ LETHE_FAILPOINT: c.failpoint });
      const body = { subject: s.A, legalBasis: 'gdpr-art17', publicAttributes: ['Alice'] };
      const posted = await callService(doomed.url)('POST', '/v1/erasures', { role: 'eraser', body })
        .then((r) => ok<{ erasureId: string; status: string }>(r, 202))
        .catch(() => undefined); // the process may die before its answer leaves it
      const [row] = await queryRows<{ erasure_id: string }>(
        tv.app.db.db,
        sql`select erasure_id from erasures where subject_hash = decode(${Buffer.from(tv.app.keys.subjectHash(s.A)).toString('hex')}, 'hex')`,
      );
      expect(row, 'no erasure row for the subject').toBeDefined();
      const erasureId = row!.erasure_id;
      if (posted) expect(posted.erasureId).toBe(erasureId);
      const code = await Promise.race([doomed.exited, new Promise<'alive'>((r) => setTimeout(() => r('alive'), 60_000))]);
      expect(code, `the service did not die at ${c.failpoint}:\n${doomed.stderr().slice(-3000)}`).not.toBe('alive');
      expect(doomed.child.signalCode).toBe('SIGKILL');

      // 2. the row is left mid-step, claimed by the dead replica
      const [dead] = await queryRows<{ status: string; step: string | null; state: { steps: Record<string, { status: string }> }; finished_at: Date | null }>(
        tv.app.db.db,
        sql`select status, step, state, finished_at from erasures where erasure_id = ${erasureId}`,
      );
      expect(dead).toMatchObject({ status: 'running', step: c.step, finished_at: null });
      expect(dead!.state.steps[c.step]?.status).toBe('running');
      const before = await transitionsOf(tv.app.db, erasureId);
      expect(before.some((t) => t.from_step === c.step)).toBe(false);
      await c.atDeath(tv, s, erasureId, backupId);

      // 3. a service without the failpoint finishes it once the dead claim lapses
      const survivor = await serve();
      const call = callService(survivor.url);
      const view = await awaitErasure(call, erasureId, 90_000);
      expect(view.status, JSON.stringify(view.steps)).toBe('completed');
      expect(view.class).toBe('B');
      expect(view.steps.filter((st) => st.name !== 'redact').map((st) => [st.name, st.status])).toEqual(FIRST_RUN.map((n) => [n, 'done']));

      // each transition once, in order; the interrupted one committed by the survivor
      const rows = await transitionsOf(tv.app.db, erasureId);
      expect(rows.filter((t) => t.status === 'failed')).toEqual([]);
      const moves = rows.filter((t) => t.from_step !== t.to_step);
      expect(moves.map((t) => [t.from_step, t.to_step])).toEqual([[null, 'classify'], ...FIRST_RUN.map((st) => [st, TRANSITIONS[st]])]);
      // a step re-entering itself is only a wait — for leases, or (destroy) for the ledger's durability or
      // the other replicas' acknowledgement on a loaded machine — never a retry
      const waits = rows.filter((t) => t.from_step === t.to_step);
      expect(
        waits.every((t) => t.from_step === 'drain_leases' || (t.from_step === 'destroy' && /waiting/.test(t.detail ?? ''))),
        JSON.stringify(waits),
      ).toBe(true);
      const first = moves.find((t) => t.from_step === c.step)!;
      expect(first.replica).not.toBe(before.at(-1)!.replica);

      // every affected artifact regenerated once: version 2, one regeneration each in the audit log
      await expectArtifactsRegenerated(call, s);
      expect(await versions(tv, s)).toEqual({ summary: 2, digest: 2 });
      expect(await auditCount(tv.app.db, 'artifact.regenerate', { artifactId: s.summary })).toBe(1);
      expect(await auditCount(tv.app.db, 'artifact.regenerate', { artifactId: s.digest })).toBe(1);
      await expectLogErasedOthersKept(call, s);

      // the key destroyed once
      expect(await ledgerRows(tv, s.aKeyId)).toBe(1);
      expect(await auditCount(tv.app.db, 'key.destroy', { keyId: s.aKeyId })).toBe(1);
      for (const k of s.versionKeys) expect(await ledgerRows(tv, k)).toBe(1);

      // the backup taken before the erasure marks the key (and the old version keys) destroyed
      const manifest = await ok<{ version: number; keys: Array<{ keyId: string; state: string }>; overlay: { destroyed: number } }>(
        call('GET', `/v1/backups/${backupId}/manifest`, { role: 'backup' }),
        200,
      );
      // through the ledger chain: the manifest itself is never rewritten
      expect(manifest.version).toBe(1);
      expect(manifest.overlay.destroyed).toBe(1 + s.versionKeys.length);
      for (const k of [s.aKeyId, ...s.versionKeys]) expect(manifest.keys.find((m) => m.keyId === k)?.state, k).toBe('destroyed');
      expect(JSON.stringify(view)).not.toContain(s.A);
    });
  }
});
