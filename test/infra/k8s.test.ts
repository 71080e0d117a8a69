/**
 * The Kubernetes manifests in infra/k8s pass the offline validator (infra/k8s-validate.ts),
 * the validator rejects broken ones (so it cannot pass by checking nothing), and the
 * manifests agree with the image infra/Dockerfile builds and with lethe's configuration.
 */
import { readFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { CONFIG_VARIABLES, loadConfig } from '../../src/config/index.js';
import { loadManifests, type Manifest, validateManifests } from '../../infra/k8s-validate.js';

type Obj = Record<string, any>;

let manifests: Manifest[];
const find = (kind: string, name: string): Obj => {
  const m = manifests.find((x) => x.object.kind === kind && (x.object.metadata as Obj).name === name);
  if (!m) throw new Error(`no ${kind} ${name} in infra/k8s`);
  return m.object;
};
/** `manifests` with the one object of this kind replaced by `edit` of a copy of it. */
function withEdit(kind: string, edit: (o: Obj) => void): Manifest[] {
  return manifests.map((m) => {
    if (m.object.kind !== kind) return m;
    const copy = structuredClone(m.object);
    edit(copy);
    return { ...m, object: copy };
  });
}
const container = (o: Obj): Obj => o.spec.template.spec.containers[0];

describe('infra/k8s', () => {
  beforeAll(() => {
    manifests = loadManifests();
  });

  it('every manifest passes the schema, unknown-field and lethe checks', { timeout: 60_000 }, async () => {
    expect(manifests.map((m) => m.object.kind).sort()).toEqual([
      'ConfigMap',
      'Deployment',
      'Job',
      'NetworkPolicy',
      'PersistentVolumeClaim',
      'Secret',
      'Service',
    ]);
    expect(await validateManifests(manifests, CONFIG_VARIABLES)).toEqual([]);
  });

  it('rejects a misspelled field, a wrong type, a Deployment without an image, and an environment variable lethe does not read', {
    timeout: 180_000,
  }, async () => {
    const misspelled = await validateManifests(
      withEdit('Deployment', (o) => {
        o.spec.replicaz = o.spec.replicas;
        delete o.spec.replicas;
      }),
      CONFIG_VARIABLES,
    );
    expect(misspelled.join('\n')).toMatch(/deployment\.yaml: Deployment lethe: .*'replicaz' does not exist/);
    const nested = await validateManifests(
      withEdit('Deployment', (o) => {
        container(o).readinessProbe.httpGet.paht = '/readyz';
      }),
      CONFIG_VARIABLES,
    );
    expect(nested.join('\n')).toMatch(/'paht' does not exist/);
    const wrongType = await validateManifests(
      withEdit('Deployment', (o) => {
        o.spec.replicas = 'two';
      }),
      CONFIG_VARIABLES,
    );
    expect(wrongType.join('\n')).toMatch(/replicas must be integer/);
    const noImage = await validateManifests(
      withEdit('Deployment', (o) => {
        delete container(o).image;
      }),
      CONFIG_VARIABLES,
    );
    expect(noImage).toContain('deployment.yaml: Deployment lethe container lethe: no image');
    const unknownEnv = await validateManifests(
      withEdit('Deployment', (o) => {
        container(o).env.push({ name: 'LETHE_ROOTKEY', value: 'x' });
      }),
      CONFIG_VARIABLES,
    );
    expect(unknownEnv).toContain('deployment.yaml: Deployment lethe container lethe: env LETHE_ROOTKEY is not a variable lethe reads');
    const unknownKey = await validateManifests(
      withEdit('ConfigMap', (o) => {
        o.data.LETHE_AUTOMIGRATE = 'false';
      }),
      CONFIG_VARIABLES,
    );
    expect(unknownKey).toContain('configmap.yaml: ConfigMap lethe: key LETHE_AUTOMIGRATE is passed as an environment variable lethe does not read');
    const badEnum = await validateManifests(
      withEdit('Service', (o) => {
        o.spec.type = 'Public';
      }),
      CONFIG_VARIABLES,
    );
    expect(badEnum).toContain('service.yaml: Service lethe: data/spec/type must be equal to one of the allowed values');
    expect(badEnum.join('\n')).toMatch(/service\.yaml: Service lethe: Type 'Public' is not assignable/);
  });

  it('the Deployment runs the image as infra/Dockerfile builds it, hardened, with LETHE_AUTO_MIGRATE off', () => {
    const dockerfile = readFileSync('infra/Dockerfile', 'utf8');
    const uid = Number(/useradd [^\n]*--uid (\d+)/.exec(dockerfile)?.[1]);
    const port = Number(/EXPOSE (\d+)/.exec(dockerfile)?.[1]);
    expect(dockerfile).toContain('ENTRYPOINT ["node", "dist/cli/main.js"]');
    const deployment = find('Deployment', 'lethe');
    const pod = deployment.spec.template.spec;
    const c = container(deployment);
    expect(deployment.spec.replicas).toBe(2);
    expect(c.args).toEqual(['serve']);
    expect(c.ports).toEqual([{ name: 'http', containerPort: port, protocol: 'TCP' }]);
    expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: uid, runAsGroup: uid });
    expect(c.readinessProbe.httpGet).toEqual({ path: '/readyz', port: 'http' });
    expect(c.livenessProbe.httpGet).toEqual({ path: '/healthz', port: 'http' });
    expect(c.securityContext).toEqual({ allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, privileged: false, capabilities: { drop: ['ALL'] } });
    // lethe writes only under emptyDirs and the keyring volume: the root filesystem stays read-only
    const config = find('ConfigMap', 'lethe').data as Record<string, string>;
    const mounts = (c.volumeMounts as Obj[]).map((v) => v.mountPath as string);
    expect(mounts.some((m) => config.LETHE_DATA_DIR!.startsWith(`${m}/`))).toBe(true);
    expect(mounts.some((m) => config.LETHE_KEYRING_DIR!.startsWith(`${m}/`))).toBe(true);
    expect(mounts.some((m) => config.LETHE_TOKENS_FILE!.startsWith(`${m}/`))).toBe(true);
    expect(config.LETHE_AUTO_MIGRATE).toBe('false');
    expect(Number(config.PORT)).toBe(port);
    // the Secret's placeholders: no key material in the repository
    const secret = find('Secret', 'lethe').stringData as Record<string, string>;
    expect(secret.LETHE_ROOT_KEY).toMatch(/REPLACE_ME/);
    expect(readFileSync('infra/k8s/secret.yaml', 'utf8')).toContain('openssl rand -base64 32');
  });

  it('the migration Job runs `lethe migrate` with the same configuration, secrets and keyring as the Deployment', () => {
    const deployment = container(find('Deployment', 'lethe'));
    const job = find('Job', 'lethe-migrate');
    const c = container(job);
    expect(c.args).toEqual(['migrate']);
    expect(job.spec.template.spec.restartPolicy).toBe('Never');
    expect(c.image).toBe(deployment.image);
    expect(c.env).toEqual(deployment.env);
    expect(c.envFrom).toEqual(deployment.envFrom);
    expect(job.spec.template.spec.volumes).toEqual(find('Deployment', 'lethe').spec.template.spec.volumes);
  });

  it('the ConfigMap with the Secret filled in is a configuration lethe loads, in production without auto-migration', () => {
    const config = find('ConfigMap', 'lethe').data as Record<string, string>;
    const secret = find('Secret', 'lethe').stringData as Record<string, string>;
    const loaded = loadConfig({
      ...config,
      DATABASE_URL: secret.DATABASE_URL,
      S3_ACCESS_KEY: secret.S3_ACCESS_KEY,
      S3_SECRET_KEY: secret.S3_SECRET_KEY,
      LETHE_ROOT_KEY: Buffer.alloc(32, 7).toString('base64'),
    });
    expect(loaded.production).toBe(true);
    expect(loaded.autoMigrate).toBe(false);
    expect(loaded.s3?.endpoint).toBe(config.S3_ENDPOINT);
    expect(loaded.keyringDir).toBe(config.LETHE_KEYRING_DIR);
  });

  it('the NetworkPolicy admits only labelled clients, on the HTTP port', () => {
    const policy = find('NetworkPolicy', 'lethe');
    expect(policy.spec.policyTypes).toEqual(['Ingress', 'Egress']);
    expect(policy.spec.ingress).toEqual([
      { from: [{ podSelector: { matchLabels: { 'lethe.io/client': 'true' } } }], ports: [{ protocol: 'TCP', port: 8787 }] },
    ]);
    const egressPorts = (policy.spec.egress as Obj[]).flatMap((r) => (r.ports as Obj[]).map((p) => p.port as number));
    expect(egressPorts.sort((a, b) => a - b)).toEqual([53, 53, 443, 5432, 9000]);
  });
});
