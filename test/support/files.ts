/** Searching files at rest for bytes that must not be there. */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

/** Files under `dir` (recursively) whose bytes contain `needle`; also how many files were read. */
export function filesContaining(dir: string, needle: string | Uint8Array): { hits: string[]; filesRead: number } {
  const bytes = typeof needle === 'string' ? Buffer.from(needle) : Buffer.from(needle.buffer, needle.byteOffset, needle.byteLength);
  const hits: string[] = [];
  let filesRead = 0;
  // a live server (MinIO) creates and removes its own temporary files meanwhile: one gone between listing and reading held nothing to find
  const gone = (e: unknown) => (e as NodeJS.ErrnoException).code === 'ENOENT';
  const walk = (d: string) => {
    let entries;
    try {
      entries = readdirSync(d, { withFileTypes: true });
    } catch (e) {
      if (gone(e)) return;
      throw e;
    }
    for (const entry of entries) {
      const p = path.join(d, entry.name);
      if (entry.isDirectory()) walk(p);
      else if (entry.isFile()) {
        let content: Buffer;
        try {
          content = readFileSync(p);
        } catch (e) {
          if (gone(e)) continue;
          throw e;
        }
        filesRead += 1;
        if (content.includes(bytes)) hits.push(p);
      }
    }
  };
  walk(dir);
  return { hits, filesRead };
}
