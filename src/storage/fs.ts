/**
 * The local-filesystem object store (the embedded default): one directory per
 * bucket under a root. A put writes a temporary file, flushes it, renames it into
 * place and flushes the directory, so a stored object is whole or absent.
 */
import { randomBytes } from 'node:crypto';
import { constants as fsConstants } from 'node:fs';
import { link, mkdir, open, readdir, readFile, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { LetheError } from '../errors.js';
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

export class FsObjectStore implements ObjectStore {
  readonly kind = 'fs' as const;
  readonly bucket: string;
  readonly #dir: string;

  constructor(root: string, bucket: string) {
    this.bucket = bucket;
    this.#dir = path.join(path.resolve(root), bucket);
  }

  async ensureBucket(): Promise<void> {
    // Local directories have no versions; versioning is an S3 feature.
    await mkdir(this.#dir, { recursive: true, mode: 0o700 });
  }

  /** A folder cannot retain objects: `retain` is not honoured here (`lockable` says so). */
  async put(key: string, body: Uint8Array): Promise<void> {
    const file = this.#path(key);
    await rename(await this.#staged(file, body), file);
    await syncDir(path.dirname(file));
  }

  async putIfAbsent(key: string, body: Uint8Array): Promise<boolean> {
    const file = this.#path(key);
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
    try {
      return new Uint8Array(await readFile(this.#path(key)));
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') throw new LetheError('not_found', `no object ${key} in ${this.bucket}`);
      throw e;
    }
  }

  async getRange(key: string, offset: number, length: number): Promise<Uint8Array> {
    let handle;
    try {
      handle = await open(this.#path(key), 'r');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') throw new LetheError('not_found', `no object ${key} in ${this.bucket}`);
      throw e;
    }
    try {
      const out = new Uint8Array(length);
      const { bytesRead } = await handle.read(out, 0, length, offset);
      return out.subarray(0, bytesRead);
    } finally {
      await handle.close();
    }
  }

  async head(key: string): Promise<StoredObject | undefined> {
    try {
      const s = await stat(this.#path(key));
      return s.isFile() ? { key, size: s.size } : undefined;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw e;
    }
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
    await rm(this.#path(key), { force: true });
  }

  async *list(prefix: string): AsyncIterable<StoredObject> {
    const all: StoredObject[] = [];
    const walk = async (dir: string, rel: string): Promise<void> => {
      let entries;
      try {
        entries = await readdir(dir, { withFileTypes: true });
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code === 'ENOENT') return;
        throw e;
      }
      for (const entry of entries) {
        const key = rel ? `${rel}/${entry.name}` : entry.name;
        // prune directories that cannot hold a key with the prefix
        if (!key.startsWith(prefix) && !prefix.startsWith(`${key}/`)) continue;
        if (entry.isDirectory()) await walk(path.join(dir, entry.name), key);
        else if (entry.isFile() && !entry.name.endsWith(TMP_SUFFIX)) {
          const s = await stat(path.join(dir, entry.name));
          all.push({ key, size: s.size, modifiedAt: s.mtime });
        }
      }
    };
    await walk(this.#dir, '');
    all.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    yield* all;
  }

  async ping(): Promise<void> {
    const s = await stat(this.#dir).catch(() => undefined);
    if (!s?.isDirectory()) throw new LetheError('unavailable', `the local object store ${this.#dir} is missing`);
  }

  #path(key: string): string {
    assertObjectKey(key);
    return path.join(this.#dir, ...key.split('/'));
  }
}
