/**
 * The keyring's file operations, shared by the epoch KEKs (local.ts) and the
 * certificate-signing keys (signing-keys.ts): flushing a directory, and shredding a
 * key file — overwritten with random bytes and flushed, renamed, unlinked, the
 * directory flushed — so that a crash in between leaves no file under the key's name.
 */
import { randomBytes as nodeRandomBytes } from 'node:crypto';
import { constants as fsConstants } from 'node:fs';
import { open as openFile, rename, unlink } from 'node:fs/promises';
import path from 'node:path';

/** Flushes a directory (a rename or unlink in it is durable after this). */
export async function fsyncDir(dir: string): Promise<void> {
  const handle = await openFile(dir, fsConstants.O_RDONLY);
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/**
 * Overwrites `file` with random bytes, flushes, renames and unlinks it. Answers false
 * when the file was already gone (or another process — a replica — renamed it first:
 * that destruction is its own).
 */
export async function shredFile(file: string): Promise<boolean> {
  let handle;
  try {
    handle = await openFile(file, 'r+');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw e;
  }
  try {
    const { size } = await handle.stat();
    await handle.write(nodeRandomBytes(Math.max(size, 1)), 0, Math.max(size, 1), 0);
    await handle.sync();
  } finally {
    await handle.close();
  }
  const doomed = `${file}.${nodeRandomBytes(6).toString('hex')}.destroyed`;
  try {
    await rename(file, doomed);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw e;
  }
  await unlink(doomed);
  await fsyncDir(path.dirname(file));
  return true;
}
