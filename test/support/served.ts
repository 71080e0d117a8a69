/** A `lethe serve` on a fresh PostgreSQL database of its own, for tests that call it as clients (the CLI's). */
import { rmSync } from 'node:fs';
import { createTestDatabase } from './pg.js';
import { CLI, type RunningService, startService } from './process.js';
import { tempDir, testEnv } from './vault.js';

export interface Served {
  readonly service: RunningService;
  readonly dataDir: string;
  /** Its database (pg_dump it to look at what is at rest). */
  readonly databaseUrl: string;
  /** Stops the service, drops its database and removes its data folder. */
  close(): Promise<void>;
}

/** `extra`: more of the service's environment (the suite's MinIO: `minioEnv`). */
export async function serveOnPostgres(extra: Record<string, string> = {}): Promise<Served> {
  const db = await createTestDatabase();
  const dataDir = tempDir();
  const service = await startService(
    process.execPath,
    [...CLI, 'serve'],
    testEnv({ databaseUrl: db.url, dataDir, extra: { LETHE_ERASURE_POLL_MS: '100', ...extra } }),
  );
  return {
    service,
    dataDir,
    databaseUrl: db.url,
    async close() {
      await service.stop();
      await db.drop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
