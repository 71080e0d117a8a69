/**
 * A retired epoch counts as gone — and the certificates waiting on it may turn final —
 * only when the provider itself says its KEK is gone: not merely because the date it
 * gave has passed. Shown with a provider that has a deletion window (as AWS KMS does:
 * pending until a date, and cancellable until then), scripted here because local-kms
 * deletes a key only when its own clock passes the date (aws-kms-story.test.ts runs
 * the rest against local-kms).
 */
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { queryRows } from '../../src/db/client.js';
import type { DestructionState, KeyProvider } from '../../src/keyprovider/provider.js';
import { createMetrics } from '../../src/observability/metrics.js';
import { EpochService } from '../../src/vault/epochs.js';
import { openTestVault, type TestVault } from '../support/vault.js';

const DAY = 86_400_000;

/** The vault's provider, with destruction as a provider with a 7-day deletion window does it (scripted). */
function windowed(real: KeyProvider, clock: () => Date) {
  const states = new Map<number, DestructionState>();
  let destroys = 0;
  const provider: KeyProvider = {
    name: 'windowed',
    createEpoch: (e) => real.createEpoch(e),
    wrap: (...a) => real.wrap(...a),
    unwrap: (...a) => real.unwrap(...a),
    listEpochs: () => real.listEpochs(),
    forget: (e) => real.forget(e),
    signCertificate: (p) => real.signCertificate(p),
    listSigningKeys: () => real.listSigningKeys(),
    rotateSigningKey: () => real.rotateSigningKey(),
    deriveSystemKey: (l) => real.deriveSystemKey(l),
    close: async () => {},
    async destroyEpoch(epoch: number) {
      destroys++;
      states.set(epoch, { state: 'pending', goneAt: new Date(clock().getTime() + 7 * DAY) });
    },
    async destroyedAt(epoch: number) {
      const s = states.get(epoch);
      return s?.state === 'pending' ? s.goneAt : undefined;
    },
    async destructionState(epoch: number): Promise<DestructionState> {
      return states.get(epoch) ?? { state: 'present' };
    },
  };
  return { provider, states, destroys: () => destroys };
}

async function auditCount(tv: TestVault, action: string): Promise<number> {
  const [row] = await queryRows<{ n: string }>(tv.app.db.db, sql`select count(*) as n from audit_log where action = ${action}`);
  return Number(row!.n);
}

describe('a retired epoch is gone only when the provider says so', () => {
  let tv: TestVault;
  let now = Date.now();
  const clock = () => new Date(now);

  beforeAll(async () => {
    tv = await openTestVault({ embedded: true, app: { erasureWorker: false } });
  });
  afterAll(async () => {
    await tv?.close();
  });

  it("pending until its date; past the date still pending: re-dated, not gone; a cancelled deletion is destroyed again; gone only on the provider's word", async () => {
    const w = windowed(tv.app.provider, clock);
    const epochs = new EpochService({ db: tv.app.db.db, provider: w.provider, audit: tv.app.audit, metrics: createMetrics(), batchSize: 100, now: clock });
    const rotated = await epochs.rotate('test');
    expect(rotated.retired).toEqual([1]);
    const goneAt = (w.states.get(1) as { goneAt: Date }).goneAt;
    const [row] = await epochs.rows([1]);
    // retired, dated by the end of the window
    expect(row).toMatchObject({ state: 'retired' });
    expect(row!.retiredAt!.getTime()).toBe(goneAt.getTime());
    expect(await epochs.retiredEpochs()).toEqual([]);

    // the date passes, the provider still holds the key pending (its own clock, or a later date): not gone
    now = goneAt.getTime() + 1000;
    const later = new Date(now + DAY);
    w.states.set(1, { state: 'pending', goneAt: later });
    expect(await epochs.retiredEpochs()).toEqual([]);
    expect((await epochs.rows([1]))[0]!.retiredAt!.getTime()).toBe(later.getTime());
    expect(await auditCount(tv, 'kek.epoch.redate')).toBe(1);

    // an administrator cancels the deletion: the next pass finds the KEK present and destroys it again
    now = later.getTime() + 1000;
    w.states.set(1, { state: 'present' });
    const before = w.destroys();
    expect(await epochs.retiredEpochs()).toEqual([]);
    expect(w.destroys()).toBe(before + 1);
    expect(w.states.get(1)?.state).toBe('pending');
    expect(await auditCount(tv, 'kek.epoch.redestroy')).toBe(1);
    const third = (w.states.get(1) as { goneAt: Date }).goneAt;
    expect((await epochs.rows([1]))[0]!.retiredAt!.getTime()).toBe(third.getTime());

    // the provider deletes it: gone, and asked no more (gone stays gone)
    now = third.getTime() + 1000;
    w.states.set(1, { state: 'gone' });
    expect(await epochs.retiredEpochs()).toEqual([1]);
    w.states.set(1, { state: 'present' });
    expect(await epochs.retiredEpochs()).toEqual([1]);
  });
});
