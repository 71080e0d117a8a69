/**
 * Service appends sharing segments (src/log/segment-batch.ts), over the filesystem
 * store with its puts held at will: a lone frame is stored at once and alone; frames
 * handed in while a segment is stored share the next one, each at its own place; the
 * batch is bounded; a failed store fails its whole batch and the next batch goes on;
 * a segment may be deleted only once every frame in it was given up.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { randomBytes } from '../../src/crypto/index.js';
import { SegmentBatcher } from '../../src/log/segment-batch.js';
import { decodeSegment, frameAt } from '../../src/log/segment.js';
import { FsObjectStore } from '../../src/storage/fs.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** A filesystem store whose puts wait for `release()` while `hold` is set, and fail while `failing` is. */
function heldStore() {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'lethe-segbatch-'));
  dirs.push(dir);
  const fs = new FsObjectStore(dir, 'lethe');
  const state = { hold: false, failing: false, puts: [] as string[], releases: [] as Array<() => void> };
  const store = Object.create(fs) as FsObjectStore;
  store.put = async (key, body) => {
    state.puts.push(key);
    if (state.hold) await new Promise<void>((resolve) => state.releases.push(resolve));
    if (state.failing) throw new Error('the disk said no');
    await fs.put(key, body);
  };
  const releaseAll = () => {
    for (const r of state.releases.splice(0)) r();
  };
  return { fs, store, state, releaseAll };
}

const tick = () => new Promise((r) => setImmediate(r));

/** A batcher storing its first segment (one frame, `first`) with the store held: what is handed in now waits for the next. */
async function behindAHeldSegment() {
  const held = heldStore();
  const batcher = new SegmentBatcher(held.store);
  held.state.hold = true;
  const first = batcher.store(randomBytes(10));
  await tick();
  return { ...held, batcher, first };
}

describe('SegmentBatcher', () => {
  it('stores a lone frame at once, in a segment of its own', async () => {
    const { fs, store, state } = heldStore();
    const frame = randomBytes(100);
    const stored = await new SegmentBatcher(store).store(frame);
    expect(state.puts).toEqual([stored.segment]);
    const bytes = await fs.get(stored.segment);
    expect(decodeSegment(bytes)).toHaveLength(1);
    expect(frameAt(bytes, stored.place)).toEqual(frame);
    expect(stored.giveUp()).toBe(true);
  });

  it('puts the frames handed in while a segment is stored into the next one, each at its own place', async () => {
    const { fs, state, releaseAll, batcher, first } = await behindAHeldSegment();
    const frames = Array.from({ length: 5 }, (_, i) => randomBytes(20 + i));
    const rest = frames.map((f) => batcher.store(f));
    await tick();
    expect(state.puts).toHaveLength(1); // the five wait for the first segment
    state.hold = false;
    releaseAll();
    const [one, ...others] = await Promise.all([first, ...rest]);
    expect(state.puts).toHaveLength(2);
    expect(new Set(others.map((o) => o.segment))).toEqual(new Set([state.puts[1]]));
    expect(one!.segment).toBe(state.puts[0]);
    const bytes = await fs.get(others[0]!.segment);
    for (const [i, o] of others.entries()) expect(frameAt(bytes, o.place)).toEqual(frames[i]);
  });

  it('bounds a batch: 64 frames a segment at most', async () => {
    const { state, releaseAll, batcher, first } = await behindAHeldSegment();
    const rest = Array.from({ length: 100 }, () => batcher.store(randomBytes(30)));
    state.hold = false;
    releaseAll();
    const stored = await Promise.all(rest);
    await first;
    const sizes = [...new Set(stored.map((s) => s.segment))].map((seg) => stored.filter((s) => s.segment === seg).length);
    expect(sizes).toEqual([64, 36]);
  });

  it('fails every frame of a batch whose store failed, and stores the next batch', async () => {
    const { state, releaseAll, batcher, first } = await behindAHeldSegment();
    const doomed = [batcher.store(randomBytes(10)), batcher.store(randomBytes(11))];
    state.failing = true;
    releaseAll(); // the first segment fails
    await expect(first).rejects.toThrow('the disk said no');
    await tick();
    releaseAll(); // so does the batch of two
    await Promise.all(doomed.map((d) => expect(d).rejects.toThrow('the disk said no')));
    state.failing = false;
    state.hold = false;
    const after = await batcher.store(randomBytes(12));
    expect(state.puts.at(-1)).toBe(after.segment);
  });

  it('answers that a segment may go only once every frame in it was given up, each counted once', async () => {
    const { state, releaseAll, batcher, first } = await behindAHeldSegment();
    const three = [0, 1, 2].map(() => batcher.store(randomBytes(10)));
    state.hold = false;
    releaseAll();
    await first;
    const [a, b, c] = await Promise.all(three);
    expect(a!.giveUp()).toBe(false);
    expect(a!.giveUp()).toBe(false); // the same frame twice is still one
    expect(b!.giveUp()).toBe(false);
    expect(c!.giveUp()).toBe(true);
  });
});
