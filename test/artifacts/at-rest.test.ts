/**
 * At rest: no artifact text, entry text or embedding in plain bytes — not in MinIO's
 * data directory, not in the local object store, not in a pg_dump.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { HashingEmbedder } from '../../src/vectors/embedder.js';
import { filesContaining } from '../support/files.js';
import { openTestVault, type TestVault, tempDir } from '../support/vault.js';

function vectorBytes(v: Float32Array): Buffer {
  const out = Buffer.alloc(v.length * 4);
  v.forEach((x, i) => {
    out.writeFloatLE(x, i * 4);
  });
  return out;
}

/** The first 16-byte window of the vector with no zero float in it (a fragment a plain copy would contain). */
function denseWindow(bytes: Buffer): Buffer {
  for (let i = 0; i + 16 <= bytes.length; i += 4) {
    const w = bytes.subarray(i, i + 16);
    if ([0, 4, 8, 12].every((o) => w.readFloatLE(o) !== 0)) return w;
  }
  return bytes.subarray(0, 64);
}

function pgDump(url: string): string {
  const file = path.join(tempDir(), 'dump.sql');
  execFileSync('pg_dump', ['--format=plain', `--file=${file}`, url]);
  return readFileSync(file, 'utf8');
}

for (const store of ['minio', 'local'] as const) {
  describe(`artifacts and embeddings at rest (${store} object store)`, () => {
    let tv: TestVault;
    beforeAll(async () => {
      const minio = inject('minio');
      tv = await openTestVault(
        store === 'minio'
          ? {
              extraEnv: {
                S3_ENDPOINT: minio.endpoint,
                S3_ACCESS_KEY: minio.accessKey,
                S3_SECRET_KEY: minio.secretKey,
                S3_BUCKET: `lethe-rest-${randomBytes(4).toString('hex')}`,
              },
            }
          : {},
      );
    });
    afterAll(async () => {
      await tv?.close();
    });

    it('canaries and embedding vectors are in no plain bytes, and read back through lethe', async () => {
      const v = tv.app;
      const entryCanary = `ENTRY-CANARY-${randomBytes(8).toString('hex')}`;
      const artifactCanary = `ARTIFACT-CANARY-${randomBytes(8).toString('hex')}`;
      const entryText = `remember ${entryCanary} for the weekly summary`;
      const artifactText = `summary: ${artifactCanary} and ${entryCanary}`;
      const e = await v.log.append('user:rest', { text: entryText }, 'writer');
      const s = await v.artifacts.write({ kind: 'summary', text: artifactText, sources: [e.entryId] }, 'writer');
      const d = await v.artifacts.write({ kind: 'digest', text: `digest ${artifactCanary}`, sources: [s.artifactId] }, 'writer');
      await v.artifacts.regenerate([s.artifactId], { actor: 'test' }); // versions 2 as well

      const embedder = new HashingEmbedder(tv.config.embeddingDimensions);
      const vectors = [entryText, artifactText, `digest ${artifactCanary}`].map((t) => vectorBytes(embedder.embedOne(t)));
      const needles: Array<[string, Buffer]> = [
        ['entry canary', Buffer.from(entryCanary)],
        ['artifact canary', Buffer.from(artifactCanary)],
        ...vectors.flatMap(
          (b, i): Array<[string, Buffer]> => [
            [`vector ${i}`, b],
            [`vector ${i} fragment`, denseWindow(b)],
          ],
        ),
      ];

      const dump = pgDump(tv.db!.url);
      expect(dump).toContain('artifact_keys'); // the dump is of the right database
      for (const [name, needle] of needles) {
        expect(dump.includes(needle.toString('latin1')), `${name} in pg_dump (raw)`).toBe(false);
        expect(dump.includes(needle.toString('hex')), `${name} in pg_dump (hex)`).toBe(false);
      }

      const dirs = store === 'minio' ? [inject('minio').dataDir, tv.dataDir] : [tv.dataDir];
      let filesRead = 0;
      for (const dir of dirs) {
        for (const [name, needle] of needles) {
          const found = filesContaining(dir, needle);
          filesRead += found.filesRead;
          expect(found.hits, `${name} under ${dir}`).toEqual([]);
        }
      }
      expect(filesRead).toBeGreaterThan(needles.length * 2);

      // and all of it reads back through lethe
      expect((await v.log.get(e.entryId)).text).toBe(entryText);
      expect((await v.artifacts.get(d.artifactId)).text).toContain(entryCanary);
      const hits = (await v.search.search(`remember ${entryCanary}`, 3, { subjects: ['user:rest'] })).hits;
      expect(hits[0]!.id).toBe(e.entryId);
    });
  });
}
