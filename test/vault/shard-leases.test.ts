/**
 * Index shard leases on real PostgreSQL (src/vault/shards.ts): replicas split the
 * shards by their live heartbeat rows, a lease not renewed is taken by another replica
 * under a higher fence, the replica that lost it can no longer act under the old one,
 * and replicas configured with another count are refused while a shard is held.
 */
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type Db, openDb } from '../../src/db/client.js';
import { isLetheError } from '../../src/errors.js';
import { placeOfArtifact, placeOfSubject, ShardLeases, shardOf } from '../../src/vault/shards.js';
import { createTestDatabase, type TestDatabase } from '../support/pg.js';

let db: TestDatabase;
let handle: Db;

beforeAll(async () => {
  db = await createTestDatabase();
  handle = await openDb({ databaseUrl: db.url, poolSize: 4 });
  await handle.migrate();
});
afterAll(async () => {
  await handle?.close();
  await db?.drop();
});
beforeEach(async () => {
  await handle.db.execute(sql`delete from index_shards`);
  await handle.db.execute(sql`delete from index_shard_members`);
});

/** A replica that has come (its first tick makes it a member; the others count it from their next). */
const join = (r: ShardLeases) => r.tick();
const leases = (id: string, shards = 6, leaseMs = 10_000) =>
  new ShardLeases(handle.db, { shards, replicaId: id, url: `http://${id}.invalid`, urlMac: `mac-${id}`, leaseMs });
const owners = async () =>
  (await handle.db.execute(sql`select shard, owner from index_shards order by shard`)) as unknown as Array<{ shard: number; owner: string | null }>;

describe('ShardLeases', () => {
  it('a lone replica takes every shard; with three live replicas each ends with two, every shard held once', async () => {
    const [a, b, c] = ['a', 'b', 'c'].map((id) => leases(id));
    await a!.init();
    // the first tick joins and takes nothing; alone, the next takes every shard
    expect((await a!.tick()).gained.size).toBe(0);
    expect([...(await a!.tick()).gained.keys()]).toEqual([0, 1, 2, 3, 4, 5]);
    await join(b!);
    await join(c!);
    // a lets go of more than its share, the others take what is free
    for (let round = 0; round < 3; round++) for (const r of [a!, b!, c!]) await r.tick();
    expect([a!, b!, c!].map((r) => r.held().size)).toEqual([2, 2, 2]);
    const rows = await owners();
    expect(rows.map((r) => r.owner).sort()).toEqual(['a', 'a', 'b', 'b', 'c', 'c']);
    const held = [a!, b!, c!].flatMap((r) => [...r.held().keys()]).sort();
    expect(held).toEqual([0, 1, 2, 3, 4, 5]);
    // once split, ticks move nothing: no fence changes
    const fences = await handle.db.execute(sql`select shard, fence from index_shards order by shard`);
    for (let round = 0; round < 3; round++) for (const r of [c!, b!, a!]) await r.tick();
    expect(await handle.db.execute(sql`select shard, fence from index_shards order by shard`)).toEqual(fences);
  });

  it('four shards over three replicas: the newcomer gets its share from replicas at theirs, and then nothing moves', async () => {
    const [a, b, c] = ['a', 'b', 'c'].map((id) => leases(id, 4));
    await a!.init();
    await join(a!);
    await join(b!);
    for (const r of [a!, b!]) await r.tick();
    expect([a!.held().size, b!.held().size]).toEqual([2, 2]);
    await join(c!);
    for (let round = 0; round < 3; round++) for (const r of [a!, b!, c!]) await r.tick();
    expect([a!, b!, c!].map((r) => r.held().size).sort()).toEqual([1, 1, 2]);
    const fences = await handle.db.execute(sql`select shard, owner, fence from index_shards order by shard`);
    for (let round = 0; round < 3; round++) for (const r of [a!, b!, c!]) await r.tick();
    expect(await handle.db.execute(sql`select shard, owner, fence from index_shards order by shard`)).toEqual(fences);
  });

  it('a replica that stops renewing loses its shards to the others under a higher fence; its old fence no longer acts', async () => {
    const a = leases('a', 4, 1000);
    const b = leases('b', 4, 1000);
    await a.init();
    await join(a);
    await join(b);
    await a.tick();
    await b.tick();
    const aHeld = new Map(a.held());
    expect(aHeld.size).toBe(2);
    expect(b.held().size).toBe(2);
    const [shard, fence] = [...aHeld][0]!;
    expect(await a.markReady(shard, fence)).toBe(true);
    // a stops (a crash: no release); b's share grows once a is no live member (here its row goes at once)
    await handle.db.execute(sql`delete from index_shard_members where replica_id = 'a'`);
    // b renews on, a does not: after a's lease runs out, b takes its shards
    const gained = new Map<number, number>();
    for (let i = 0; i < 5; i++) {
      await new Promise((r) => setTimeout(r, 300));
      for (const [s, f] of (await b.tick()).gained) gained.set(s, f);
    }
    expect([...gained.keys()].sort()).toEqual([...aHeld.keys()].sort());
    expect(gained.get(shard)).toBe(fence + 1);
    expect(b.held().size).toBe(4);
    // a's lease ran out by its own clock too: it acts for nothing, and its old fence is refused
    expect(a.held().size).toBe(0);
    expect(await a.markReady(shard, fence)).toBe(false);
    const [row] = (await handle.db.execute(sql`select owner, fence, state from index_shards where shard = ${shard}`)) as unknown as Array<{
      owner: string;
      fence: string;
      state: string;
    }>;
    expect(row).toMatchObject({ owner: 'b', state: 'rebuilding' });
    expect(Number(row!.fence)).toBe(fence + 1);
    // a comes back: it renews nothing of what it lost
    expect([...(await a.tick()).lost].sort()).toEqual([...aHeld.keys()].sort());
  });

  it('a clean release hands the shards back at once; rows() tells live owners from expired ones', async () => {
    const a = leases('a', 3);
    await a.init();
    await join(a);
    await a.tick();
    expect((await a.rows()).every((r) => r.live && r.owner === 'a' && r.url === 'http://a.invalid' && r.urlMac === 'mac-a')).toBe(true);
    await a.release();
    expect(a.held().size).toBe(0);
    expect((await a.rows()).every((r) => !r.live && r.owner === null)).toBe(true);
  });

  it('refuses another shard count while a live replica splits by another (or holds a shard past it), and reshapes the rows when none does', async () => {
    const six = leases('a', 6);
    await six.init();
    await join(six);
    await six.tick();
    const four = leases('b', 4);
    const refused = await four.init().catch((e: unknown) => e);
    expect(isLetheError(refused, 'conflict')).toBe(true);
    // a live member splitting by 6 stops a replica splitting by 4 from taking shards, and the one splitting by 6 from moving
    const heldBefore = [...six.held().keys()];
    expect(isLetheError((await four.tick()).refused, 'conflict')).toBe(true);
    expect(four.held().size).toBe(0);
    const still = await six.tick();
    expect(isLetheError(still.refused, 'conflict')).toBe(true);
    expect([...six.held().keys()]).toEqual(heldBefore);
    await six.release();
    await six.leave();
    await handle.db.execute(sql`delete from index_shard_members where replica_id = 'b'`);
    await four.init();
    expect((await four.rows()).map((r) => r.shard)).toEqual([0, 1, 2, 3]);
  });

  it("places: an entry's is its subject hash's first four bytes; an artifact's its id's SHA-256; both spread over the shards", () => {
    expect(placeOfSubject(Uint8Array.from([1, 2, 3, 4, 9]))).toBe(0x01020304);
    expect(placeOfSubject(Uint8Array.from([0xff, 0xff, 0xff, 0xff]))).toBe(0xffffffff);
    const counts = new Array(6).fill(0);
    for (let i = 0; i < 6000; i++) counts[shardOf(placeOfArtifact(`art_${i}`), 6)]++;
    for (const n of counts) expect(n).toBeGreaterThan(800);
  });
});
