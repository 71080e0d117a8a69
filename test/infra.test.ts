/** infra/ stays in step with the configuration the code reads (no Docker engine runs here). */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { CONFIG_VARIABLES, loadConfig } from '../src/config/index.js';
import { tempDir } from './support/vault.js';

/** A compose service's environment, with the shared `x-lethe` block merged in (YAML merge keys). */
function composeEnvironment(service: string): Record<string, string> {
  const compose = parse(readFileSync('infra/docker-compose.yml', 'utf8'), { merge: true }) as {
    services: Record<string, { environment?: Record<string, string> }>;
  };
  return compose.services[service]?.environment ?? {};
}

describe('infra', () => {
  it('docker-compose gives lethe only variables the configuration reads, and a configuration that loads', () => {
    const env = composeEnvironment('lethe');
    expect(Object.keys(env).length).toBeGreaterThan(5);
    for (const name of Object.keys(env)) expect(CONFIG_VARIABLES).toContain(name);
    const keyFile = path.join(tempDir(), 'root.key');
    writeFileSync(keyFile, Buffer.alloc(32, 1).toString('base64'));
    const config = loadConfig({ ...env, LETHE_ROOT_KEY_FILE: keyFile, NODE_ENV: 'production' });
    expect(config.databaseUrl).toMatch(/^postgres:\/\/.*@postgres:5432\/lethe$/);
    expect(config.s3?.endpoint).toBe('http://minio:9000');
    expect(config.tokens.map((t) => t.role).sort()).toEqual(['admin', 'approver', 'backup', 'eraser', 'writer']);
  });

  it("docker-compose gives lethe a least-privilege MinIO user (infra/minio/lethe-policy.json), never MinIO's root user", () => {
    const minio = composeEnvironment('minio');
    const lethe = composeEnvironment('lethe');
    expect(lethe.S3_ACCESS_KEY).not.toBe(minio.MINIO_ROOT_USER);
    const compose = parse(readFileSync('infra/docker-compose.yml', 'utf8'), { merge: true }) as {
      services: Record<string, { command?: string[]; volumes?: string[] }>;
    };
    const init = compose.services['minio-init']!;
    const script = (init.command ?? []).join(' ');
    // the user lethe is given is made with lethe's keys and given the policy, as root
    expect(script).toContain(`mc alias set local http://minio:9000 ${minio.MINIO_ROOT_USER} ${minio.MINIO_ROOT_PASSWORD}`);
    expect(script).toContain(`mc admin user add local ${lethe.S3_ACCESS_KEY} ${lethe.S3_SECRET_KEY}`);
    expect(script).toMatch(new RegExp(`mc admin policy attach local lethe --user ${lethe.S3_ACCESS_KEY}`));
    expect(init.volumes).toContain('./minio/lethe-policy.json:/policy/lethe-policy.json:ro');
    const policy = JSON.parse(readFileSync('infra/minio/lethe-policy.json', 'utf8')) as { Statement: Array<{ Effect: string; Action: string[] }> };
    expect(policy.Statement.filter((st) => st.Effect === 'Deny').flatMap((st) => st.Action)).toContain('s3:BypassGovernanceRetention');
  });

  it('the Dockerfile sets only variables the configuration reads and runs the built CLI', () => {
    const dockerfile = readFileSync('infra/Dockerfile', 'utf8');
    const envBlock = /ENV ([\s\S]*?)\nWORKDIR/.exec(dockerfile)?.[1] ?? '';
    const names = [...envBlock.matchAll(/([A-Z_]+)=/g)].map((m) => m[1]!);
    expect(names.length).toBeGreaterThan(2);
    for (const name of names) expect([...CONFIG_VARIABLES, 'NODE_ENV']).toContain(name);
    expect(dockerfile).toContain('ENTRYPOINT ["node", "dist/cli/main.js"]');
    const pkg = JSON.parse(readFileSync('package.json', 'utf8')) as { bin: Record<string, string> };
    expect(pkg.bin.lethe).toBe('dist/cli/bin.js');
  });
});
