/** Searching files at rest for bytes that must not be there. */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

/** Files under `dir` (recursively) whose bytes contain `needle`; also how many files were read. */
export function filesContaining(dir: string, needle: string | Uint8Array): { hits: string[]; filesRead: number } {
  const bytes = typeof needle === 'string' ? Buffer.from(needle) : Buffer.from(needle.buffer, needle.byteOffset, needle.byteLength);
  const hits: string[] = [];
  let filesRead = 0;
  const walk = (d: string) => {
    for (const entry of readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, entry.name);
      if (entry.isDirectory()) walk(p);
      else if (entry.isFile()) {
        filesRead += 1;
        if (readFileSync(p).includes(bytes)) hits.push(p);
      }
    }
  };
  walk(dir);
  return { hits, filesRead };
}
