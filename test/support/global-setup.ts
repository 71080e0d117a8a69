/**
 * Runs once before the suite: PostgreSQL must answer (DATABASE_URL_ADMIN, else
 * DATABASE_URL, else 127.0.0.1:5432; npm test starts a private cluster and names it in
 * DATABASE_URL_ADMIN when none answers), and a real MinIO is started (built from source by
 * infra/minio.sh the first time), and a Toxiproxy for the fault-injection tests
 * (infra/toxiproxy.sh). Integration tests never skip: when one is missing, the run
 * stops here and says so plainly.
 */
import postgres from 'postgres';
import type { TestProject } from 'vitest/node';
import { minioBinary, startMinio } from '../../infra/minio-server.js';
import { startToxiproxy, toxiproxyBinary, type ToxiproxyServer } from '../../infra/toxiproxy-server.js';

declare module 'vitest' {
  export interface ProvidedContext {
    pgAdminUrl: string;
    minio: { endpoint: string; accessKey: string; secretKey: string; dataDir: string };
    /** The suite's Toxiproxy API (infra/toxiproxy-client.ts), for the fault-injection tests. */
    toxiproxy: { apiUrl: string };
  }
}

export const DEFAULT_PG_URL = 'postgres://postgres@127.0.0.1:5432/postgres';

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const url = process.env.DATABASE_URL_ADMIN || process.env.DATABASE_URL || DEFAULT_PG_URL;
  const sql = postgres(url, { max: 1, connect_timeout: 5, onnotice: () => {} });
  try {
    const [row] = await sql<{ v: string }[]>`select current_setting('server_version') as v`;
    process.stderr.write(`lethe tests: PostgreSQL ${row?.v} at ${new URL(url).host}\n`);
  } catch (e) {
    throw new Error(
      `lethe tests need PostgreSQL and could not reach it at ${new URL(url).host} (${(e as Error).message}). ` +
        'Run the suite with npm test (it starts a private cluster when none answers), start one (pg_ctlcluster <version> main start), ' +
        'or set DATABASE_URL_ADMIN to a server where this user may CREATE DATABASE.',
    );
  } finally {
    await sql.end({ timeout: 1 });
  }
  project.provide('pgAdminUrl', url);

  const minio = await startMinio(minioBinary());
  process.stderr.write(`lethe tests: MinIO at ${minio.endpoint}\n`);
  project.provide('minio', { endpoint: minio.endpoint, accessKey: minio.accessKey, secretKey: minio.secretKey, dataDir: minio.dataDir });

  // Toxiproxy (built from source by infra/toxiproxy.sh the first time): test/faults put it between lethe and PostgreSQL / MinIO
  let toxiproxy: ToxiproxyServer;
  try {
    toxiproxy = await startToxiproxy(toxiproxyBinary());
  } catch (e) {
    await minio.stop();
    throw e;
  }
  process.stderr.write(`lethe tests: Toxiproxy API at ${toxiproxy.apiUrl}\n`);
  project.provide('toxiproxy', { apiUrl: toxiproxy.apiUrl });
  return async () => {
    await toxiproxy.stop();
    await minio.stop();
  };
}
