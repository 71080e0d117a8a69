/**
 * Variables that look like lethe's but are not (a typo, an old name): `LETHE_*` and `S3_*`
 * names nothing reads, and names close to `DATABASE_URL`. Each comes with the known name it
 * most likely meant. loadConfig refuses them in production; elsewhere they are warnings.
 */
import { distance } from 'fastest-levenshtein';
import { closest } from './closest.js';

/**
 * What else reads a `LETHE_*` variable: the CLI and clients (the service at LETHE_URL and its
 * TLS), the test failpoint, and the scripts that provision the test services.
 */
export const OTHER_VARIABLES = [
  'LETHE_URL',
  'LETHE_CA_FILE',
  'LETHE_CLIENT_CERT',
  'LETHE_CLIENT_KEY',
  'LETHE_FAILPOINT',
  'LETHE_CHROMIUM',
  'LETHE_PYTHON',
  'LETHE_NODE',
  'LETHE_TEST_SUMMARY',
  'LETHE_KEEP_TEST_DATA',
  'LETHE_MINIO_BIN',
  'LETHE_MINIO_VERSION',
  'LETHE_MINIO_CACHE',
  'LETHE_TOXIPROXY_BIN',
  'LETHE_TOXIPROXY_VERSION',
  'LETHE_TOXIPROXY_CACHE',
  'LETHE_LOCAL_KMS_BIN',
  'LETHE_LOCAL_KMS_VERSION',
  'LETHE_LOCAL_KMS_CACHE',
  'LETHE_SOFTHSM_MODULE',
  'LETHE_POSTGRES_BIN_DIR',
  'LETHE_POSTGRES_CACHE',
  'LETHE_POSTGRES_USER',
  'LETHE_PG_URL',
  'LETHE_PG_DATA',
] as const;

/** Names lethe read once, and the one that took their place. */
const FORMER: Readonly<Record<string, string>> = Object.fromEntries(
  ['LETHE_TOKEN', ...['WRITER', 'BACKUP', 'ERASER', 'APPROVER', 'ADMIN'].map((r) => `LETHE_${r}_TOKEN`)].map((n) => [n, 'LETHE_TOKENS']),
);

/** What Kubernetes adds to every pod for a Service named `lethe` (service links): not a typo. */
const SERVICE_LINK = /^LETHE_(SERVICE_(HOST|PORT(_\w+)?)|PORT(_\d+_(TCP|UDP|SCTP)(_(PROTO|PORT|ADDR))?)?)$/;

export interface UnknownVariable {
  readonly variable: string;
  readonly suggestion: string | undefined;
}

/** The variables of `env` that look like lethe's and are not in `known`. */
export function unknownVariables(env: Readonly<Record<string, string | undefined>>, known: readonly string[]): UnknownVariable[] {
  const names = new Set([...known, ...OTHER_VARIABLES]);
  const candidates = [...names];
  const out: UnknownVariable[] = [];
  for (const variable of Object.keys(env).sort()) {
    if (names.has(variable) || env[variable] === undefined || SERVICE_LINK.test(variable)) continue;
    const ours = variable.startsWith('LETHE_') || variable.startsWith('S3_');
    // DATABASE_URI, DATABSE_URL; not DATABASE_URL_ADMIN, which other tools read
    const nearDatabase = !ours && variable !== 'DATABASE_URL' && distance(variable.toUpperCase(), 'DATABASE_URL') <= 2;
    if (!ours && !nearDatabase) continue;
    out.push({ variable, suggestion: FORMER[variable] ?? closest(variable, candidates) });
  }
  return out;
}

/** `not a variable lethe reads (did you mean LETHE_TOKENS?)`. */
export function unknownMessage(u: UnknownVariable): string {
  return `not a variable lethe reads${u.suggestion ? ` (did you mean ${u.suggestion}?)` : ''}`;
}
