/**
 * `npx tsx infra/cluster/start.ts [replicas] [shards]`: starts a lethe cluster on this
 * machine (infra/cluster/cluster.ts: the PostgreSQL pair, the MinIO cluster and the
 * replicas), prints where everything is and a token of each role, and stops it all on
 * Ctrl-C. For trying failures by hand; the cluster test suite starts its own.
 */
import { randomBytes } from 'node:crypto';
import { startCluster } from './cluster.js';

const [replicas = 3, shards = replicas * 2] = process.argv.slice(2).map((a) => {
  const n = Number(a);
  if (!Number.isInteger(n) || n < 1 || n > 64) {
    process.stderr.write('usage: npx tsx infra/cluster/start.ts [replicas 1-64] [shards 1-1024]\n');
    process.exit(2);
  }
  return n;
});
const tokens = Object.fromEntries(['writer', 'eraser', 'approver', 'backup', 'admin'].map((role) => [role, `${role}-${randomBytes(12).toString('hex')}`]));
process.stderr.write(`starting ${replicas} replicas over ${shards} index shards, the PostgreSQL pair and the MinIO cluster...\n`);
const cluster = await startCluster({
  replicas,
  shards,
  env: {
    LETHE_TOKENS: Object.entries(tokens)
      .map(([role, token]) => `${role}=${token}`)
      .join(','),
    LETHE_LOG_LEVEL: 'warn',
  },
});
const out = {
  replicas: cluster.replicas.map((r) => ({ url: r.url, pid: r.child.pid })),
  databaseUrl: cluster.pg.url,
  postgres: cluster.pg.nodes,
  minio: cluster.minio.endpoints,
  tokens,
};
process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
process.stderr.write('ready; Ctrl-C stops everything\n');
let stopping = false;
const stop = async () => {
  if (stopping) return;
  stopping = true;
  await cluster.stop();
  process.exit(0);
};
process.on('SIGINT', () => void stop());
process.on('SIGTERM', () => void stop());
