/** The configuration's checks across variables (loadConfig in index.ts runs them beside each variable's own). */
import { isIPv4 } from 'node:net';

/**
 * The checks across variables, on the raw values (`data`: the parsed ones, when every
 * variable parsed): what must come together, what excludes what, what production requires.
 */
export function crossProblems(
  picked: Readonly<Record<string, string>>,
  env: Readonly<Record<string, string | undefined>>,
  data: { readonly S3_BUCKET: string; readonly S3_BACKUP_BUCKET: string } | undefined,
): Array<{ variable: string; message: string }> {
  const problems: Array<{ variable: string; message: string }> = [];
  if (picked.LETHE_ROOT_KEY && picked.LETHE_ROOT_KEY_FILE) {
    problems.push({ variable: 'LETHE_ROOT_KEY_FILE', message: 'set either LETHE_ROOT_KEY or LETHE_ROOT_KEY_FILE, not both' });
  }
  if (picked.LETHE_KEY_PROVIDER?.trim() === 'pkcs11') {
    for (const v of ['LETHE_PKCS11_MODULE', 'LETHE_PKCS11_TOKEN_LABEL'] as const) {
      if (!picked[v]) problems.push({ variable: v, message: 'is required when LETHE_KEY_PROVIDER is pkcs11' });
    }
    if (!picked.LETHE_PKCS11_PIN === !picked.LETHE_PKCS11_PIN_FILE) {
      problems.push({
        variable: 'LETHE_PKCS11_PIN',
        message: 'set exactly one of LETHE_PKCS11_PIN or LETHE_PKCS11_PIN_FILE when LETHE_KEY_PROVIDER is pkcs11',
      });
    }
  }
  // two deployments under one prefix share epoch numbers: one's rotation destroys the other's KEKs
  const production = (picked.NODE_ENV ?? '').trim().toLowerCase() === 'production';
  if (production && picked.LETHE_KEY_PROVIDER?.trim() === 'pkcs11' && !picked.LETHE_PKCS11_KEY_PREFIX) {
    problems.push({ variable: 'LETHE_PKCS11_KEY_PREFIX', message: 'is required in production (one prefix per deployment sharing the token)' });
  }
  if (production && picked.LETHE_KEY_PROVIDER?.trim() === 'aws-kms' && !picked.LETHE_KMS_ALIAS_PREFIX) {
    problems.push({ variable: 'LETHE_KMS_ALIAS_PREFIX', message: 'is required in production (one prefix per deployment sharing the AWS account and region)' });
  }
  if (picked.LETHE_KEY_PROVIDER?.trim() === 'aws-kms' && !picked.LETHE_KMS_REGION && !env.AWS_REGION?.trim()) {
    problems.push({ variable: 'LETHE_KMS_REGION', message: 'is required when LETHE_KEY_PROVIDER is aws-kms (or set AWS_REGION)' });
  }
  // several hosts: only `primary` makes postgres.js pass over a standby (its `read-write` reads
  // default_transaction_read_only, which a hot standby leaves off: writes there fail read-only)
  if (picked.DATABASE_URL && namesSeveralHosts(picked.DATABASE_URL) && !/[?&]target_session_attrs=primary(&|$)/.test(picked.DATABASE_URL)) {
    problems.push({ variable: 'DATABASE_URL', message: 'names several hosts: add target_session_attrs=primary, or connections may land on a standby' });
  }
  if (picked.LETHE_INDEX_SHARDS && Number(picked.LETHE_INDEX_SHARDS) > 1) {
    // the shard leases and the replicas' routing live in a shared database
    if (!picked.DATABASE_URL)
      problems.push({ variable: 'LETHE_INDEX_SHARDS', message: 'above 1 needs DATABASE_URL (replicas share their shards through PostgreSQL)' });
    if (!picked.LETHE_REPLICA_URL)
      problems.push({ variable: 'LETHE_REPLICA_URL', message: 'is required when LETHE_INDEX_SHARDS is above 1 (where the other replicas reach this one)' });
    // searches' queries and erasure probes' fingerprints cross between replicas
    if (production && picked.LETHE_REPLICA_URL && /^http:/i.test(picked.LETHE_REPLICA_URL.trim()) && !onLoopback(picked.LETHE_REPLICA_URL)) {
      problems.push({ variable: 'LETHE_REPLICA_URL', message: 'must be https in production (replicas send each other search queries and probe fingerprints)' });
    }
    if (picked.LETHE_TLS_CLIENT_CA) {
      problems.push({
        variable: 'LETHE_INDEX_SHARDS',
        message: 'above 1 cannot be used with LETHE_TLS_CLIENT_CA yet (replicas do not present client certificates to each other)',
      });
    }
  }
  if (picked.S3_ENDPOINT) {
    for (const v of ['S3_ACCESS_KEY', 'S3_SECRET_KEY'] as const) {
      if (!picked[v]) problems.push({ variable: v, message: 'is required when S3_ENDPOINT is set' });
    }
  }
  // after defaults and trimming: the live bucket's default may be named as the backup bucket, and the other way round
  if (data && data.S3_BUCKET === data.S3_BACKUP_BUCKET) {
    problems.push({ variable: 'S3_BACKUP_BUCKET', message: 'must differ from S3_BUCKET' });
  }
  if (picked.LETHE_EMBEDDINGS_URL && !picked.LETHE_EMBEDDINGS_MODEL) {
    problems.push({ variable: 'LETHE_EMBEDDINGS_MODEL', message: 'is required when LETHE_EMBEDDINGS_URL is set' });
  }
  if (picked.LETHE_EMBEDDINGS_URL && !picked.LETHE_EMBEDDING_DIMENSIONS) {
    problems.push({ variable: 'LETHE_EMBEDDING_DIMENSIONS', message: "is required when LETHE_EMBEDDINGS_URL is set (the model's output size)" });
  }
  if (picked.LETHE_REGENERATOR_URL && !picked.LETHE_REGENERATOR_MODEL) {
    problems.push({ variable: 'LETHE_REGENERATOR_MODEL', message: 'is required when LETHE_REGENERATOR_URL is set' });
  }
  if (!picked.LETHE_TLS_CERT !== !picked.LETHE_TLS_KEY) {
    problems.push({ variable: picked.LETHE_TLS_CERT ? 'LETHE_TLS_KEY' : 'LETHE_TLS_CERT', message: 'set both LETHE_TLS_CERT and LETHE_TLS_KEY, or neither' });
  }
  if (picked.LETHE_TLS_CLIENT_CA && !picked.LETHE_TLS_CERT) {
    problems.push({ variable: 'LETHE_TLS_CLIENT_CA', message: 'needs LETHE_TLS_CERT and LETHE_TLS_KEY (client certificates are verified over HTTPS only)' });
  }
  if (picked.LETHE_TOKENS && picked.LETHE_TOKENS_FILE) {
    problems.push({ variable: 'LETHE_TOKENS_FILE', message: 'set either LETHE_TOKENS or LETHE_TOKENS_FILE, not both' });
  }
  const tokens = (picked.LETHE_TOKENS ?? '')
    .split(',')
    .map((p) => p.trim())
    .filter((p) => p.includes('='));
  const values = tokens.map((p) => p.slice(p.indexOf('=') + 1));
  if (new Set(values).size !== values.length) {
    problems.push({ variable: 'LETHE_TOKENS', message: 'the same token is given for two roles' });
  }
  return problems;
}

/** Whether a postgres:// URL names several hosts (`h1:5432,h2:5432`); the user part ends at its last `@`. */
function namesSeveralHosts(url: string): boolean {
  const rest = url.trim().replace(/^postgres(ql)?:\/\//, '');
  return (rest.slice(rest.lastIndexOf('@') + 1).split(/[/?]/)[0] ?? '').includes(',');
}

/** Whether a URL's host is this machine's loopback (a cluster on one machine). */
function onLoopback(url: string): boolean {
  try {
    const host = new URL(url.trim()).hostname;
    return host === 'localhost' || host === '[::1]' || (isIPv4(host) && host.startsWith('127.'));
  } catch {
    return false;
  }
}
