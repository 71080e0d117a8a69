/**
 * Index rebuilds are single-flight and never bring back a key destroyed before they
 * finish: two overlapping rebuilds on a Vectors service that hears no destruction
 * event (a replica whose listener is down), with a key destroyed by another replica
 * while the first rebuild is decrypting — after it read that key's rows.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KeyService } from '../../src/vault/keys.js';
import { openTestVault, type TestVault } from '../support/vault.js';
import { vectorsOn } from '../support/vectors.js';

describe('overlapping rebuilds and a destruction in between', () => {
  let tv: TestVault;
  const written: Array<{ subject: string; entryId: string; keyId: string }> = [];
  const keyOf = (subject: string) => written.find((w) => w.subject === subject)!.keyId;
  const idsOf = (subject: string) => written.filter((w) => w.subject === subject).map((w) => w.entryId);

  beforeAll(async () => {
    tv = await openTestVault({ app: { listen: false } });
    for (const [subject, text] of [
      ['user:keep', 'Keeps bees on the roof of the library.'],
      ['user:gone', 'Was treated for a rare tropical fever last spring.'],
      ['user:gone', 'Takes a weekly tropical fever follow-up at the clinic.'],
      ['user:other', 'Builds wooden canoes in a shed by the lake.'],
    ] as const) {
      const { entryId, keyId } = await tv.app.log.append(subject, { text }, 'writer');
      written.push({ subject, entryId, keyId });
    }
  });
  afterAll(async () => {
    await tv?.close();
  });

  it('the first rebuild drops the key destroyed while it ran, the second (started after it) never loads it, and callers share one rebuild at a time', async () => {
    const goneKey = keyOf('user:gone');
    let destroyOnUnwrap: string | undefined = goneKey;
    const unwrapped: string[] = [];
    // the vault's key service, except that unwrapping user:gone's key has another replica destroy it right after (the rows are read, the DEK in hand)
    const real = tv.app.keys;
    const keys = new Proxy(real, {
      get(target, prop) {
        if (prop === 'dekFor') {
          return async (keyId: string) => {
            const dek = await target.dekFor(keyId);
            unwrapped.push(keyId);
            if (keyId === destroyOnUnwrap) {
              destroyOnUnwrap = undefined;
              await target.destroyKey(keyId, { reason: 'destroyed mid-rebuild', actor: 'admin' });
            }
            return dek;
          };
        }
        const value = Reflect.get(target, prop) as unknown;
        return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      },
    }) as KeyService;
    const vectors = await vectorsOn(tv, keys);
    const original = vectors.rebuild.bind(vectors);
    // one row per page: the destroyed key's second row is read after its destruction deleted it
    const first = original(1);
    expect(vectors.rebuilding).toBe(true);
    const second = original(1);
    const third = original(1);
    expect(third, 'callers arriving while one runs share the next rebuild').toBe(second);
    const firstResult = await first;
    // the first rebuild read and opened a row of user:gone before the key went: it must not be in what it swapped in
    expect(unwrapped).toContain(goneKey);
    expect(firstResult.loaded).toBe(4 - 1); // user:keep, user:other, and user:gone's first row (its second was already deleted)
    expect(vectors.index.idsOfKey(goneKey)).toEqual([]);
    for (const id of idsOf('user:gone')) expect(vectors.lexical.has(id), id).toBe(false);
    for (const id of [...idsOf('user:keep'), ...idsOf('user:other')]) expect(vectors.index.has(id), id).toBe(true);

    const secondResult = await second;
    expect(secondResult.loaded).toBe(2);
    expect(vectors.index.idsOfKey(goneKey)).toEqual([]);
    expect(vectors.index.size).toBe(2);
    expect(vectors.lexical.size).toBe(2);
    // a late publish of the destroyed key's record (a load that was decrypting it) is refused too
    vectors.publish([{ recordId: idsOf('user:gone')[0]!, recordType: 'entry', keyId: goneKey, vector: new Float32Array(vectors.index.dimensions).fill(0.1) }]);
    expect(vectors.index.idsOfKey(goneKey)).toEqual([]);
    await vectors.close();
  });
});
