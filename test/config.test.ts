/**
 * loadConfig: defaults, and refusal of bad values with a ConfigError that names each
 * bad variable and never repeats a secret value.
 */
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config/index.js';
import { s3Endpoints } from '../src/storage/s3-endpoint.js';

const ROOT_KEY_32 = Buffer.alloc(32, 7).toString('base64');

function refusal(env: Record<string, string>): ConfigError {
  let caught: unknown;
  try {
    loadConfig(env);
  } catch (e) {
    caught = e;
  }
  expect(caught, `loadConfig(${Object.keys(env).join(', ')}) should throw`).toBeInstanceOf(ConfigError);
  return caught as ConfigError;
}

function variablesOf(e: ConfigError): string[] {
  return [...new Set(e.problems.map((p) => p.variable))].sort();
}

describe('loadConfig defaults', () => {
  it('an empty environment gives the documented defaults', () => {
    const c = loadConfig({});
    expect(c.port).toBe(8787);
    expect(c.host).toBe('127.0.0.1');
    expect(c.leaseTtlSeconds).toBe(300);
    expect(c.probeThreshold).toBe(0.15);
    expect(c.bodyLimitBytes).toBe(1024 * 1024);
    expect(c.tokens).toEqual([]);
    expect(c.tokensFile).toBeUndefined();
    expect(c.databaseUrl).toBeUndefined();
    expect(c.rootKey).toBeUndefined();
    expect(c.production).toBe(false);
    expect(c.dataDir).toMatch(/\.lethe$/);
  });

  it('empty strings count as unset and give the defaults', () => {
    const c = loadConfig({ PORT: '', HOST: '', LETHE_LEASE_TTL_SECONDS: '', LETHE_PROBE_THRESHOLD: '', LETHE_TOKENS: '' });
    expect(c.port).toBe(8787);
    expect(c.host).toBe('127.0.0.1');
    expect(c.leaseTtlSeconds).toBe(300);
    expect(c.probeThreshold).toBe(0.15);
    expect([c.probeSimilarity, c.erasureClaimSeconds, c.erasurePollMs]).toEqual([0.9, 30, 1000]);
    expect(c.tokens).toEqual([]);
  });

  it('reads valid values: port, host, TTL, threshold, body limit, tokens, database URL and root key', () => {
    const c = loadConfig({
      PORT: '9000',
      HOST: '0.0.0.0',
      LETHE_LEASE_TTL_SECONDS: '60',
      LETHE_PROBE_THRESHOLD: '0.3',
      LETHE_BODY_LIMIT_BYTES: '2048',
      LETHE_TOKENS: 'writer=writer-token-1, admin=admin-token-1',
      DATABASE_URL: 'postgresql://u@h/db',
      LETHE_ROOT_KEY: ROOT_KEY_32,
    });
    expect(c).toMatchObject({ port: 9000, host: '0.0.0.0', leaseTtlSeconds: 60, probeThreshold: 0.3, bodyLimitBytes: 2048 });
    expect(c.tokens).toEqual([
      { role: 'writer', token: 'writer-token-1' },
      { role: 'admin', token: 'admin-token-1' },
    ]);
    expect(c.databaseUrl).toBe('postgresql://u@h/db');
    expect(c.rootKey).toHaveLength(32);
    expect(Buffer.from(c.rootKey!).equals(Buffer.alloc(32, 7))).toBe(true);
  });

  it('accepts the root key in base64url as well as base64', () => {
    const bytes = Buffer.alloc(32, 0xfb);
    const c = loadConfig({ LETHE_ROOT_KEY: bytes.toString('base64url') });
    expect(Buffer.from(c.rootKey!).equals(bytes)).toBe(true);
  });
});

describe('loadConfig refuses bad values, naming the variable', () => {
  const CASES: ReadonlyArray<{ name: string; env: Record<string, string>; variable: string; secret?: string }> = [
    {
      name: 'a root key of 16 bytes',
      env: { LETHE_ROOT_KEY: Buffer.alloc(16, 9).toString('base64') },
      variable: 'LETHE_ROOT_KEY',
      secret: Buffer.alloc(16, 9).toString('base64'),
    },
    {
      name: 'a root key of 33 bytes',
      env: { LETHE_ROOT_KEY: Buffer.alloc(33, 9).toString('base64') },
      variable: 'LETHE_ROOT_KEY',
      secret: Buffer.alloc(33, 9).toString('base64'),
    },
    {
      name: 'a token with an unknown role',
      env: { LETHE_TOKENS: 'writer=good-token-aaa1,wizard=supersecrettoken' },
      variable: 'LETHE_TOKENS',
      secret: 'supersecrettoken',
    },
    { name: 'a token entry without a role', env: { LETHE_TOKENS: 'lonely-token-value' }, variable: 'LETHE_TOKENS', secret: 'lonely-token-value' },
    { name: 'a token shorter than 8 characters', env: { LETHE_TOKENS: 'writer=Zq9xK' }, variable: 'LETHE_TOKENS', secret: 'Zq9xK' },
    {
      name: 'the same token for two roles',
      env: { LETHE_TOKENS: 'writer=dupe-token-123,backup=dupe-token-123' },
      variable: 'LETHE_TOKENS',
      secret: 'dupe-token-123',
    },
    { name: 'PORT=abc', env: { PORT: 'abc' }, variable: 'PORT' },
    { name: 'PORT=70000', env: { PORT: '70000' }, variable: 'PORT' },
    { name: 'PORT=-1', env: { PORT: '-1' }, variable: 'PORT' },
    { name: 'a mysql DATABASE_URL', env: { DATABASE_URL: 'mysql://x' }, variable: 'DATABASE_URL' },
    {
      name: 'a non-postgres DATABASE_URL with a password',
      env: { DATABASE_URL: 'mysql://root:hunter2pass@db/x' },
      variable: 'DATABASE_URL',
      secret: 'hunter2pass',
    },
    { name: 'LETHE_PROBE_THRESHOLD=2', env: { LETHE_PROBE_THRESHOLD: '2' }, variable: 'LETHE_PROBE_THRESHOLD' },
    { name: 'LETHE_PROBE_THRESHOLD=-0.1', env: { LETHE_PROBE_THRESHOLD: '-0.1' }, variable: 'LETHE_PROBE_THRESHOLD' },
    { name: 'LETHE_PROBE_THRESHOLD=abc', env: { LETHE_PROBE_THRESHOLD: 'abc' }, variable: 'LETHE_PROBE_THRESHOLD' },
    { name: 'LETHE_PROBE_SIMILARITY=1.5', env: { LETHE_PROBE_SIMILARITY: '1.5' }, variable: 'LETHE_PROBE_SIMILARITY' },
    { name: 'LETHE_ERASURE_CLAIM_SECONDS=0', env: { LETHE_ERASURE_CLAIM_SECONDS: '0' }, variable: 'LETHE_ERASURE_CLAIM_SECONDS' },
    { name: 'LETHE_ERASURE_POLL_MS=5', env: { LETHE_ERASURE_POLL_MS: '5' }, variable: 'LETHE_ERASURE_POLL_MS' },
    { name: 'LETHE_LEASE_TTL_SECONDS=0', env: { LETHE_LEASE_TTL_SECONDS: '0' }, variable: 'LETHE_LEASE_TTL_SECONDS' },
    { name: 'LETHE_LEASE_TTL_SECONDS=1.5', env: { LETHE_LEASE_TTL_SECONDS: '1.5' }, variable: 'LETHE_LEASE_TTL_SECONDS' },
    { name: 'LETHE_BODY_LIMIT_BYTES below 1 KiB', env: { LETHE_BODY_LIMIT_BYTES: '100' }, variable: 'LETHE_BODY_LIMIT_BYTES' },
    { name: 'an unknown log level', env: { LETHE_LOG_LEVEL: 'loud' }, variable: 'LETHE_LOG_LEVEL' },
    {
      name: 'both LETHE_ROOT_KEY and LETHE_ROOT_KEY_FILE',
      env: { LETHE_ROOT_KEY: ROOT_KEY_32, LETHE_ROOT_KEY_FILE: '/etc/lethe/root.key' },
      variable: 'LETHE_ROOT_KEY_FILE',
      secret: ROOT_KEY_32,
    },
    {
      name: 'both LETHE_TOKENS and LETHE_TOKENS_FILE',
      env: { LETHE_TOKENS: 'writer=writer-token-1', LETHE_TOKENS_FILE: '/etc/lethe/tokens' },
      variable: 'LETHE_TOKENS_FILE',
      secret: 'writer-token-1',
    },
  ];

  for (const { name, env, variable, secret } of CASES) {
    const title = secret === undefined ? `${name}: ConfigError naming ${variable}` : `${name}: ConfigError naming ${variable}, without the secret value`;
    it(title, () => {
      const e = refusal(env);
      expect(variablesOf(e)).toEqual([variable]);
      expect(e.message).toContain(variable);
      expect(e.name).toBe('ConfigError');
      if (secret !== undefined) {
        expect(e.message).not.toContain(secret);
        expect(JSON.stringify(e.problems)).not.toContain(secret);
      }
    });
  }

  it('the root-key conflict message tells the operator to pick one of the two variables', () => {
    const e = refusal({ LETHE_ROOT_KEY: ROOT_KEY_32, LETHE_ROOT_KEY_FILE: '/etc/lethe/root.key' });
    expect(e.message).toContain('LETHE_ROOT_KEY ');
    expect(e.message).toContain('LETHE_ROOT_KEY_FILE');
  });

  it("no refusal repeats any other variable's value either", () => {
    const good = { LETHE_TOKENS: 'admin=good-admin-token-zz', LETHE_ROOT_KEY: ROOT_KEY_32 };
    const e = refusal({ ...good, PORT: 'abc' });
    expect(e.message).not.toContain('good-admin-token-zz');
    expect(e.message).not.toContain(ROOT_KEY_32);
  });

  it('a blank LETHE_PROBE_THRESHOLD is refused or treated as unset, never read as 0', () => {
    let threshold: number | undefined;
    try {
      threshold = loadConfig({ LETHE_PROBE_THRESHOLD: '  ' }).probeThreshold;
    } catch (e) {
      expect(e).toBeInstanceOf(ConfigError);
      expect((e as ConfigError).message).toContain('LETHE_PROBE_THRESHOLD');
      return;
    }
    expect(threshold).toBe(0.15);
  });
});

describe('several bad variables at once', () => {
  it('names every bad variable of the schema in one error', () => {
    const e = refusal({
      PORT: 'abc',
      DATABASE_URL: 'mysql://x',
      LETHE_PROBE_THRESHOLD: '2',
      LETHE_LEASE_TTL_SECONDS: '0',
      LETHE_TOKENS: 'wizard=supersecrettoken',
      LETHE_ROOT_KEY: 'dG9vIHNob3J0',
    });
    expect(variablesOf(e)).toEqual(['DATABASE_URL', 'LETHE_LEASE_TTL_SECONDS', 'LETHE_PROBE_THRESHOLD', 'LETHE_ROOT_KEY', 'LETHE_TOKENS', 'PORT']);
    for (const v of variablesOf(e)) expect(e.message).toContain(`${v}:`);
    expect(e.message).not.toContain('supersecrettoken');
    expect(e.message).not.toContain('dG9vIHNob3J0');
  });

  it('names the cross-variable conflicts too when other variables are also bad', () => {
    const e = refusal({
      PORT: 'abc',
      LETHE_TOKENS: 'writer=dupe-token-123,backup=dupe-token-123',
      LETHE_ROOT_KEY: ROOT_KEY_32,
      LETHE_ROOT_KEY_FILE: '/etc/lethe/root.key',
    });
    expect(variablesOf(e)).toEqual(['LETHE_ROOT_KEY_FILE', 'LETHE_TOKENS', 'PORT']);
    expect(e.message).not.toContain('dupe-token-123');
  });
});
describe('object store configuration', () => {
  const problemsOf = (env: Record<string, string>) => {
    try {
      loadConfig(env);
    } catch (e) {
      return (e as ConfigError).problems.map((p) => p.variable);
    }
    return [];
  };

  it('defaults to the local filesystem store with the lethe and lethe-backups buckets', () => {
    const c = loadConfig({});
    expect(c.s3).toBeUndefined();
    expect([c.bucket, c.backupBucket]).toEqual(['lethe', 'lethe-backups']);
  });

  it('switches to MinIO / S3 with an endpoint and both keys', () => {
    const c = loadConfig({ S3_ENDPOINT: 'http://127.0.0.1:9000', S3_ACCESS_KEY: 'ak', S3_SECRET_KEY: 'sk-secret', S3_BUCKET: 'my-bucket' });
    expect(c.s3).toEqual({ endpoint: 'http://127.0.0.1:9000', accessKey: 'ak', secretKey: 'sk-secret', region: 'us-east-1' });
    expect(c.bucket).toBe('my-bucket');
  });

  it('names the missing keys, a bad endpoint, bad bucket names and equal buckets', () => {
    expect(problemsOf({ S3_ENDPOINT: 'http://127.0.0.1:9000' })).toEqual(['S3_ACCESS_KEY', 'S3_SECRET_KEY']);
    expect(problemsOf({ S3_ENDPOINT: 'ftp://x' })).toContain('S3_ENDPOINT');
    expect(problemsOf({ S3_BUCKET: 'Bad_Bucket' })).toContain('S3_BUCKET');
    expect(problemsOf({ S3_BUCKET: 'same-one', S3_BACKUP_BUCKET: 'same-one' })).toContain('S3_BACKUP_BUCKET');
  });

  it('S3_ENDPOINT takes the servers of one cluster, comma-separated, and refuses a list with a path or an empty member', () => {
    const cfg = loadConfig({ S3_ENDPOINT: 'http://a:9000, http://b:9000,http://c:9000', S3_ACCESS_KEY: 'ak', S3_SECRET_KEY: 'sk' });
    expect(s3Endpoints(cfg.s3!.endpoint).map((u) => u.host)).toEqual(['a:9000', 'b:9000', 'c:9000']);
    const refused = (value: string) => {
      try {
        loadConfig({ S3_ENDPOINT: value, S3_ACCESS_KEY: 'ak', S3_SECRET_KEY: 'sk' });
      } catch (e) {
        return (e as Error).message;
      }
      return 'accepted';
    };
    for (const bad of [
      'http://a:9000,',
      'http://a:9000,,http://b:9000',
      'http://a:9000,http://b:9000/bucket',
      'http://a:9000;b:9000',
      'http://a:99999',
      'http://a:9000/?x=1',
    ]) {
      expect(refused(bad)).toMatch(/S3_ENDPOINT.*comma-separated/);
    }
    expect(refused('http://a:9000,https://b:9000')).toMatch(/S3_ENDPOINT.*same scheme/);
    expect(refused('http://a:9000,http://a:9000')).toMatch(/S3_ENDPOINT.*names a server twice/);
    const withSecret = refused('http://user:hunter2-secret@a:9000');
    expect(withSecret).toMatch(/S3_ENDPOINT.*must not carry a user or password/);
    expect(withSecret).not.toContain('hunter2-secret');
    // the KMS endpoint stays one server
    expect(() => loadConfig({ LETHE_KEY_PROVIDER: 'aws-kms', LETHE_KMS_ENDPOINT: 'http://a:4566,http://b:4566' })).toThrow(
      /LETHE_KMS_ENDPOINT: must be http\(s\):\/\/host\[:port\]\n/,
    );
  });

  it('a DATABASE_URL naming several hosts needs target_session_attrs=primary (postgres.js would settle on a hot standby for read-write), and the message never repeats the URL', () => {
    const hosts = 'postgres://lethe:pw-secret-1@db1:5432,db2:5432/lethe';
    for (const url of [hosts, `${hosts}?target_session_attrs=read-write`]) {
      let message = '';
      try {
        loadConfig({ DATABASE_URL: url });
      } catch (e) {
        message = (e as Error).message;
      }
      expect(message).toMatch(/DATABASE_URL: names several hosts: add target_session_attrs=primary/);
      expect(message).not.toContain('pw-secret-1');
    }
    expect(loadConfig({ DATABASE_URL: `${hosts}?target_session_attrs=primary` }).databaseUrl).toContain('db2:5432');
    // one host (a password with ',' or '@' in it included) needs nothing
    expect(loadConfig({ DATABASE_URL: 'postgres://lethe:a,b@c@db1:5432/lethe' }).databaseUrl).toContain('db1');
  });

  it('LETHE_INDEX_SHARDS above 1 needs DATABASE_URL and LETHE_REPLICA_URL (an http(s) origin), and not client certificates; 1 is the default', () => {
    const message = (env: Record<string, string>) => {
      try {
        loadConfig(env);
        return '';
      } catch (e) {
        return (e as Error).message;
      }
    };
    const db = { DATABASE_URL: 'postgres://lethe@db1:5432/lethe' };
    expect(loadConfig(db).indexShards).toBe(1);
    expect(message({ LETHE_INDEX_SHARDS: '4', LETHE_REPLICA_URL: 'http://10.0.0.5:8787' })).toMatch(/LETHE_INDEX_SHARDS: above 1 needs DATABASE_URL/);
    expect(message({ ...db, LETHE_INDEX_SHARDS: '4' })).toMatch(/LETHE_REPLICA_URL: is required when LETHE_INDEX_SHARDS is above 1/);
    for (const url of ['10.0.0.5:8787', 'ftp://10.0.0.5', 'http://u:p@10.0.0.5:8787', 'http://10.0.0.5:8787/path', 'http://10.0.0.5/?x=1']) {
      expect(message({ ...db, LETHE_INDEX_SHARDS: '4', LETHE_REPLICA_URL: url }), url).toMatch(/LETHE_REPLICA_URL: must be the http\(s\) address/);
    }
    expect(message({ ...db, LETHE_INDEX_SHARDS: '0' })).toMatch(/LETHE_INDEX_SHARDS/);
    expect(message({ ...db, LETHE_INDEX_SHARDS: '1025' })).toMatch(/LETHE_INDEX_SHARDS/);
    // in production the replicas' calls are https, unless the cluster is on one machine
    const prod = { ...db, NODE_ENV: 'production', LETHE_INDEX_SHARDS: '4' };
    expect(message({ ...prod, LETHE_REPLICA_URL: 'http://10.0.0.5:8787' })).toMatch(/LETHE_REPLICA_URL: must be https in production/);
    expect(message({ ...prod, LETHE_REPLICA_URL: 'http://127.0.0.1:8787' })).not.toMatch(/LETHE_REPLICA_URL/);
    const ok = loadConfig({ ...db, LETHE_INDEX_SHARDS: '4', LETHE_REPLICA_URL: 'https://replica-1.internal:8787' });
    expect([ok.indexShards, ok.replicaUrl]).toEqual([4, 'https://replica-1.internal:8787']);
  });

  it('never echoes the secret key in a configuration error', () => {
    let message = '';
    try {
      loadConfig({ S3_ENDPOINT: 'nope', S3_ACCESS_KEY: 'ak', S3_SECRET_KEY: 'very-secret-s3-key' });
    } catch (e) {
      message = (e as Error).message;
    }
    expect(message).toContain('S3_ENDPOINT');
    expect(message).not.toContain('very-secret-s3-key');
  });
});

describe('key provider settings', () => {
  it('local by default; pkcs11 and aws-kms parse into their settings', () => {
    expect(loadConfig({}).keyProvider).toEqual({ kind: 'local' });
    expect(
      loadConfig({
        LETHE_KEY_PROVIDER: 'pkcs11',
        LETHE_PKCS11_MODULE: '/usr/lib/softhsm/libsofthsm2.so',
        LETHE_PKCS11_TOKEN_LABEL: 'lethe',
        LETHE_PKCS11_PIN: '1234',
      }).keyProvider,
    ).toEqual({ kind: 'pkcs11', module: '/usr/lib/softhsm/libsofthsm2.so', tokenLabel: 'lethe', pin: '1234', pinFile: undefined, prefix: 'lethe' });
    expect(loadConfig({ LETHE_KEY_PROVIDER: 'aws-kms', LETHE_KMS_REGION: 'eu-west-1', LETHE_KMS_ENDPOINT: 'http://127.0.0.1:4599/' }).keyProvider).toEqual({
      kind: 'aws-kms',
      region: 'eu-west-1',
      endpoint: 'http://127.0.0.1:4599',
      aliasPrefix: 'lethe',
      deletionWindowDays: 7,
    });
    // the region falls back to AWS_REGION, as the AWS SDK's does
    expect(loadConfig({ LETHE_KEY_PROVIDER: 'aws-kms', AWS_REGION: 'us-east-2' }).keyProvider).toMatchObject({ region: 'us-east-2' });
  });

  it('names what a provider is missing, and a bad provider, prefix or deletion window', () => {
    expect(variablesOf(refusal({ LETHE_KEY_PROVIDER: 'pkcs11' }))).toEqual(['LETHE_PKCS11_MODULE', 'LETHE_PKCS11_PIN', 'LETHE_PKCS11_TOKEN_LABEL']);
    const both = {
      LETHE_KEY_PROVIDER: 'pkcs11',
      LETHE_PKCS11_MODULE: '/m.so',
      LETHE_PKCS11_TOKEN_LABEL: 't',
      LETHE_PKCS11_PIN: '1234',
      LETHE_PKCS11_PIN_FILE: '/pin',
    };
    expect(variablesOf(refusal(both))).toEqual(['LETHE_PKCS11_PIN']);
    expect(variablesOf(refusal({ LETHE_KEY_PROVIDER: 'aws-kms' }))).toEqual(['LETHE_KMS_REGION']);
    expect(variablesOf(refusal({ LETHE_KEY_PROVIDER: 'vault' }))).toEqual(['LETHE_KEY_PROVIDER']);
    expect(variablesOf(refusal({ LETHE_KEY_PROVIDER: 'aws-kms', LETHE_KMS_REGION: 'eu-west-1', LETHE_KMS_DELETION_WINDOW_DAYS: '3' }))).toEqual([
      'LETHE_KMS_DELETION_WINDOW_DAYS',
    ]);
    expect(variablesOf(refusal({ LETHE_PKCS11_KEY_PREFIX: 'a b' }))).toEqual(['LETHE_PKCS11_KEY_PREFIX']);
  });

  it('never echoes the PIN', () => {
    const e = refusal({ LETHE_KEY_PROVIDER: 'pkcs11', LETHE_PKCS11_PIN: 'pin-very-secret-9876', LETHE_PKCS11_PIN_FILE: '/pin' });
    expect(e.message).not.toContain('pin-very-secret-9876');
  });
});

describe('key provider namespace in production', () => {
  it("refuses pkcs11 or aws-kms in production without an explicit prefix (two deployments under one would destroy each other's KEKs)", () => {
    const pkcs11 = {
      NODE_ENV: 'production',
      LETHE_KEY_PROVIDER: 'pkcs11',
      LETHE_PKCS11_MODULE: '/m.so',
      LETHE_PKCS11_TOKEN_LABEL: 't',
      LETHE_PKCS11_PIN: '1234',
    };
    expect(variablesOf(refusal(pkcs11))).toEqual(['LETHE_PKCS11_KEY_PREFIX']);
    expect(loadConfig({ ...pkcs11, LETHE_PKCS11_KEY_PREFIX: 'prod-eu' }).keyProvider).toMatchObject({ prefix: 'prod-eu' });
    const kms = { NODE_ENV: 'production', LETHE_KEY_PROVIDER: 'aws-kms', LETHE_KMS_REGION: 'eu-west-1' };
    expect(variablesOf(refusal(kms))).toEqual(['LETHE_KMS_ALIAS_PREFIX']);
    expect(loadConfig({ ...kms, LETHE_KMS_ALIAS_PREFIX: 'prod-eu' }).keyProvider).toMatchObject({ aliasPrefix: 'prod-eu' });
  });
});

describe('variables that look like lethe’s and are not', () => {
  const typos: Array<[string, string]> = [
    ['LETHE_TOKEN', 'LETHE_TOKENS'],
    ['LETHE_LEASE_TTL', 'LETHE_LEASE_TTL_SECONDS'],
    ['LETHE_ROOTKEY', 'LETHE_ROOT_KEY'],
    ['S3_ENDPIONT', 'S3_ENDPOINT'],
    ['DATABASE_URI', 'DATABASE_URL'],
    ['LETHE_ERASER_TOKEN', 'LETHE_TOKENS'],
  ];

  it.each(typos)('%s is said at start with its closest known name, %s', (typo, meant) => {
    const cfg = loadConfig({ [typo]: 'x' });
    expect(cfg.warnings).toEqual([`${typo}: not a variable lethe reads (did you mean ${meant}?)`]);
  });

  it('says nothing of known variables, of the test harness’s, or of other tools’ (DATABASE_URL_ADMIN, PATH)', () => {
    const cfg = loadConfig({
      LETHE_TOKENS: 'admin=0123456789',
      LETHE_URL: 'http://x',
      LETHE_MINIO_BIN: '/bin/x',
      DATABASE_URL_ADMIN: 'postgres://x/y',
      PATH: '/bin',
    });
    expect(cfg.warnings).toEqual([]);
  });

  it('in production an unknown LETHE_* variable stops the start, naming it and its closest known name', () => {
    const e = refusal({ NODE_ENV: 'production', LETHE_TOKEN: 'x', LETHE_ROOT_KEY: ROOT_KEY_32, LETHE_TOKENS: 'admin=0123456789' });
    expect(e.problems).toContainEqual({ variable: 'LETHE_TOKEN', message: 'not a variable lethe reads (did you mean LETHE_TOKENS?)' });
    expect(e.message).not.toContain(ROOT_KEY_32);
  });

  it("in production Kubernetes' service links of a Service named lethe (LETHE_PORT, LETHE_SERVICE_HOST…) are not typos", () => {
    const links = {
      LETHE_SERVICE_HOST: '10.0.0.1',
      LETHE_SERVICE_PORT: '8787',
      LETHE_SERVICE_PORT_HTTP: '8787',
      LETHE_PORT: 'tcp://10.0.0.1:8787',
      LETHE_PORT_8787_TCP: 'tcp://10.0.0.1:8787',
      LETHE_PORT_8787_TCP_PROTO: 'tcp',
      LETHE_PORT_8787_TCP_PORT: '8787',
      LETHE_PORT_8787_TCP_ADDR: '10.0.0.1',
    };
    expect(loadConfig({ ...links, NODE_ENV: 'production', LETHE_ROOT_KEY: ROOT_KEY_32 }).warnings).toEqual([]);
  });

  it('in production an unknown S3_* variable is a warning only (other tools read S3_ names too)', () => {
    const cfg = loadConfig({ NODE_ENV: 'production', S3_ENDPIONT: 'x' });
    expect(cfg.warnings).toEqual(['S3_ENDPIONT: not a variable lethe reads (did you mean S3_ENDPOINT?)']);
  });
});
