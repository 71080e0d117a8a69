/**
 * The local-filesystem object store (the embedded default): one directory per
 * bucket under a root. A put writes a temporary file, flushes it, renames it into
 * place and flushes the directory, so a stored object is whole or absent.
 *
 * Every operation runs against a deadline (deadline.ts: `timeoutMs` plus the
 * transfer's allowance; a listing, per directory): a disk or mount that stopped
 * answering makes the call `unavailable` instead of hanging it. A filesystem call
 * cannot be cancelled — it is no longer waited for.
 */
import { randomBytes } from 'node:crypto';
import { constants as fsConstants } from 'node:fs';
import { link, mkdir, open, readdir, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { isLetheError, LetheError } from '../errors.js';
import { DEFAULT_STORE_TIMEOUT_MS, StoreTimeout, withDeadline } from './deadline.js';
import { assertObjectKey, type ObjectStore, type StoredObject } from './store.js';

const TMP_SUFFIX = '.lethe-tmp';

/** Flushes a directory: a rename or link in it is durable after this. */
async function syncDir(dir: string): Promise<void> {
  const handle = await open(dir, fsConstants.O_RDONLY);
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** Errors of the folder itself (its disk, its permissions, its layout), each a store outage: retried, never an internal error. */
const STORE_FAULTS: ReadonlyMap<string, string> = new Map([
  ['EIO', 'an input/output error on its disk'],
  ['ENOSPC', 'its disk is full'],
  ['EDQUOT', 'the disk quota is exhausted'],
  ['EROFS', 'its file system is read-only'],
  ['EACCES', 'permission denied'],
  ['EPERM', 'operation not permitted'],
  ['ENOTDIR', 'a part of the path is not a folder'],
  ['EEXIST', 'a part of the path is not a folder'],
  ['EISDIR', 'an object path is a folder'],
  ['EMFILE', 'too many open files'],
  ['ENFILE', 'too many open files on the system'],
  ['EBUSY', 'the resource is busy'],
]);

export class FsObjectStore implements ObjectStore {
  readonly kind = 'fs' as const;
  readonly bucket: string;
  readonly #dir: string;
  readonly #timeoutMs: number;

  /** `timeoutMs`: each operation's base deadline (LETHE_STORE_TIMEOUT_MS; default 10 s). */
  constructor(root: string, bucket: string, options: { timeoutMs?: number } = {}) {
    this.bucket = bucket;
    this.#dir = path.join(path.resolve(root), bucket);
    this.#timeoutMs = options.timeoutMs ?? DEFAULT_STORE_TIMEOUT_MS;
  }

  async ensureBucket(): Promise<void> {
    // Local directories have no versions; versioning is an S3 feature.
    await this.#timed(0, async () => {
      await mkdir(this.#dir, { recursive: true, mode: 0o700 });
    });
  }

  /** A folder cannot retain objects: `retain` is not honoured here (`lockable` says so). */
  async put(key: string, body: Uint8Array): Promise<void> {
    const file = this.#path(key);
    await this.#timed(body.byteLength, async () => {
      await rename(await this.#staged(file, body), file);
      await syncDir(path.dirname(file));
    });
  }

  async putIfAbsent(key: string, body: Uint8Array): Promise<boolean> {
    const file = this.#path(key);
    return this.#timed(body.byteLength, () => this.#putIfAbsent(file, body));
  }

  async #putIfAbsent(file: string, body: Uint8Array): Promise<boolean> {
    const tmp = await this.#staged(file, body);
    try {
      // a hard link never replaces an existing file: the create is atomic
      await link(tmp, file);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'EEXIST') return false;
      throw e;
    } finally {
      await rm(tmp, { force: true });
    }
    await syncDir(path.dirname(file));
    return true;
  }

  /** `body` written and flushed to a temporary file beside `file`: whole, or absent. */
  async #staged(file: string, body: Uint8Array): Promise<string> {
    await mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
    const tmp = `${file}.${randomBytes(6).toString('hex')}${TMP_SUFFIX}`;
    const handle = await open(tmp, 'wx', 0o600);
    try {
      await handle.writeFile(body);
      await handle.sync();
    } finally {
      await handle.close();
    }
    return tmp;
  }

  async get(key: string): Promise<Uint8Array> {
    const file = this.#path(key);
    return this.#timed(0, async (extend) => {
      const handle = await this.#open(key, file);
      try {
        extend((await handle.stat()).size);
        return new Uint8Array(await handle.readFile());
      } finally {
        await handle.close();
      }
    });
  }

  async getRange(key: string, offset: number, length: number): Promise<Uint8Array> {
    const file = this.#path(key);
    return this.#timed(length, async () => {
      const handle = await this.#open(key, file);
      try {
        const out = new Uint8Array(length);
        const { bytesRead } = await handle.read(out, 0, length, offset);
        return out.subarray(0, bytesRead);
      } finally {
        await handle.close();
      }
    });
  }

  async #open(key: string, file: string) {
    try {
      return await open(file, 'r');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') throw new LetheError('not_found', `no object ${key} in ${this.bucket}`);
      throw e;
    }
  }

  async head(key: string): Promise<StoredObject | undefined> {
    const file = this.#path(key);
    return this.#timed(0, async () => {
      try {
        const s = await stat(file);
        return s.isFile() ? { key, size: s.size } : undefined;
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
        throw e;
      }
    });
  }

  async versions(key: string): Promise<Uint8Array[]> {
    const current = await this.get(key).catch((e: unknown) => {
      if (e instanceof LetheError && e.code === 'not_found') return undefined;
      throw e;
    });
    return current ? [current] : [];
  }

  async lockable(): Promise<boolean> {
    return false;
  }

  async delete(key: string): Promise<void> {
    const file = this.#path(key);
    await this.#timed(0, () => rm(file, { force: true }));
  }

  async *list(prefix: string): AsyncIterable<StoredObject> {
    const all: StoredObject[] = [];
    const walk = async (dir: string, rel: string): Promise<void> => {
      // one deadline per directory: a listing of any size is not cut short, a stalled one is
      const subdirs = await this.#timed(0, async () => {
        let entries;
        try {
          entries = await readdir(dir, { withFileTypes: true });
        } catch (e) {
          if ((e as NodeJS.ErrnoException).code === 'ENOENT') return [];
          throw e;
        }
        const below: Array<[string, string]> = [];
        for (const entry of entries) {
          const key = rel ? `${rel}/${entry.name}` : entry.name;
          // prune directories that cannot hold a key with the prefix
          if (!key.startsWith(prefix) && !prefix.startsWith(`${key}/`)) continue;
          if (entry.isDirectory()) below.push([path.join(dir, entry.name), key]);
          else if (entry.isFile() && !entry.name.endsWith(TMP_SUFFIX)) {
            const s = await stat(path.join(dir, entry.name));
            all.push({ key, size: s.size, modifiedAt: s.mtime });
          }
        }
        return below;
      });
      for (const [sub, key] of subdirs) await walk(sub, key);
    };
    await walk(this.#dir, '');
    all.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    yield* all;
  }

  async ping(): Promise<void> {
    const s = await this.#timed(0, () => stat(this.#dir)).catch((e: unknown) => {
      if (isLetheError(e)) throw e;
      return undefined;
    });
    if (!s?.isDirectory()) throw new LetheError('unavailable', `the local object store ${this.#dir} is missing`);
  }

  /** `fn` against its deadline; past it, `unavailable`. */
  async #timed<T>(bytes: number, fn: (extend: (bytes: number) => void) => Promise<T>): Promise<T> {
    try {
      return await withDeadline(this.#timeoutMs, bytes, fn);
    } catch (e) {
      if (e instanceof StoreTimeout) {
        throw new LetheError('unavailable', `the local object store ${this.#dir} did not answer in time (${e.ms} ms; LETHE_STORE_TIMEOUT_MS)`);
      }
      // the folder's disk or permissions failing is an outage to wait out, like an object store that does not answer
      const code = (e as NodeJS.ErrnoException).code;
      if (code && STORE_FAULTS.has(code))
        throw new LetheError('unavailable', `the local object store ${this.#dir} failed: ${code} (${STORE_FAULTS.get(code)})`, { cause: e });
      throw e;
    }
  }

  #path(key: string): string {
    assertObjectKey(key);
    return path.join(this.#dir, ...key.split('/'));
  }
}
