/**
 * Checks lethe's Kubernetes manifests (infra/k8s) offline, in three layers:
 *
 * 1. the Kubernetes API schema: each object through kubernetes-models' validate() (the
 *    JSON schema generated from the Kubernetes OpenAPI document: types, required
 *    fields, formats);
 * 2. no unknown field: each object type-checked by the TypeScript compiler against
 *    kubernetes-models' declarations of the same kind, whose excess-property check
 *    rejects a misspelled or misplaced field (which the API schema alone lets through,
 *    as `kubectl apply` would not) and an enum value that does not exist;
 * 3. lethe's own rules: every container has an image; every environment variable
 *    (env, and the keys of a ConfigMap or Secret passed whole with envFrom) is one
 *    lethe's configuration reads; no object names a namespace; the server's probes,
 *    resources and security context are the ones README.md ("Deploying") states;
 *    kustomization.yaml lists exactly the manifests.
 *
 * Used by infra/k8s-lint.ts (npm run lint:k8s) and test/infra/k8s.test.ts.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { parseAllDocuments } from 'yaml';

export interface Manifest {
  /** The file's name within the folder. */
  readonly file: string;
  /** The object as parsed from YAML. */
  readonly object: Record<string, unknown>;
}

const ROOT = path.resolve(import.meta.dirname, '..');
export const K8S_DIR = path.join(ROOT, 'infra', 'k8s');
const KUSTOMIZATION = 'kustomization.yaml';

/** Every object of every .yaml file in `dir` but the kustomization (YAML syntax errors throw, naming the file). */
export function loadManifests(dir: string = K8S_DIR): Manifest[] {
  const out: Manifest[] = [];
  for (const file of readdirSync(dir)
    .filter((f) => f.endsWith('.yaml') && f !== KUSTOMIZATION)
    .sort()) {
    for (const doc of parseAllDocuments(readFileSync(path.join(dir, file), 'utf8'))) {
      if (doc.errors.length > 0) throw new Error(`${file}: ${doc.errors[0]!.message}`);
      const object = doc.toJS() as unknown;
      if (object === null || object === undefined) continue;
      out.push({ file, object: object as Record<string, unknown> });
    }
  }
  return out;
}

/** `kubernetes-models/<group>/<version>/<Kind>` for an object's apiVersion and kind. */
function modelPath(object: Record<string, unknown>): string | undefined {
  const { apiVersion, kind } = object;
  if (typeof apiVersion !== 'string' || typeof kind !== 'string' || !/^[A-Za-z0-9.]+(\/[A-Za-z0-9]+)?$/.test(apiVersion) || !/^[A-Z][A-Za-z0-9]*$/.test(kind)) {
    return undefined;
  }
  return `kubernetes-models/${apiVersion}/${kind}`;
}

function label(m: Manifest): string {
  const name = (m.object.metadata as { name?: unknown } | undefined)?.name;
  return `${m.file}: ${String(m.object.kind)} ${typeof name === 'string' ? name : '(no name)'}`;
}

/** Layer 1: kubernetes-models' validate() of each object. */
async function schemaProblems(manifests: readonly Manifest[]): Promise<string[]> {
  const problems: string[] = [];
  for (const m of manifests) {
    const module = modelPath(m.object);
    if (!module) {
      problems.push(`${m.file}: an object without a usable apiVersion and kind`);
      continue;
    }
    let Model: new (data: unknown) => { validate(): void };
    try {
      Model = ((await import(module)) as Record<string, new (data: unknown) => { validate(): void }>)[String(m.object.kind)]!;
      if (typeof Model !== 'function') throw new Error('not a model');
    } catch {
      problems.push(`${label(m)}: unknown apiVersion/kind ${String(m.object.apiVersion)} ${String(m.object.kind)}`);
      continue;
    }
    try {
      new Model(m.object).validate();
    } catch (e) {
      problems.push(`${label(m)}: ${(e as Error).message}`);
    }
  }
  return problems;
}

/** Layer 2: the TypeScript compiler's excess-property and literal checks against the declared kinds. */
function typeProblems(manifests: readonly Manifest[]): string[] {
  const file = path.join(ROOT, 'infra', '.k8s-manifests.check.mts');
  const lines: string[] = [];
  const owner: Manifest[] = [];
  manifests.forEach((m, i) => {
    const module = modelPath(m.object);
    if (!module) return;
    const text = `const m${i}: import(${JSON.stringify(module)}).I${String(m.object.kind)} = ${JSON.stringify(m.object, null, 1)};`;
    for (const line of text.split('\n')) {
      lines.push(line);
      owner.push(m);
    }
  });
  lines.push('export {};');
  const source = lines.join('\n');
  const options: ts.CompilerOptions = {
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    types: [],
    lib: ['lib.es2022.d.ts'],
  };
  const host = ts.createCompilerHost(options);
  const getSourceFile = host.getSourceFile.bind(host);
  host.getSourceFile = (name, version, ...rest) =>
    path.resolve(name) === file ? ts.createSourceFile(name, source, version, true) : getSourceFile(name, version, ...rest);
  const fileExists = host.fileExists.bind(host);
  host.fileExists = (name) => path.resolve(name) === file || fileExists(name);
  const readFile = host.readFile.bind(host);
  host.readFile = (name) => (path.resolve(name) === file ? source : readFile(name));
  const program = ts.createProgram({ rootNames: [file], options, host });
  const problems: string[] = [];
  for (const d of ts.getPreEmitDiagnostics(program)) {
    const message = ts.flattenDiagnosticMessageText(d.messageText, ' ');
    if (d.file && path.resolve(d.file.fileName) === file && d.start !== undefined) {
      const { line } = d.file.getLineAndCharacterOfPosition(d.start);
      const m = owner[line];
      problems.push(`${m ? label(m) : 'manifests'}: ${message.replace(/"kubernetes-models\/[^"]*"\)\./g, '').replace(/'"([^"']+)"'/g, "'$1'")}`);
    } else {
      problems.push(`type check: ${message}`);
    }
  }
  return problems;
}

type Obj = Record<string, any>;

/** The pod template of a Deployment or a Job. */
function podSpec(object: Obj): Obj | undefined {
  return object.kind === 'Deployment' || object.kind === 'Job' ? object.spec?.template?.spec : undefined;
}

/** Layer 3: lethe's rules. `variables`: every environment variable lethe's configuration reads. */
function letheProblems(manifests: readonly Manifest[], variables: ReadonlySet<string>, dir: string): string[] {
  const problems: string[] = [];
  const byName = (kind: string, name: string) => manifests.find((m) => m.object.kind === kind && (m.object.metadata as Obj | undefined)?.name === name);
  for (const m of manifests) {
    const o = m.object as Obj;
    if (o.metadata?.namespace !== undefined) problems.push(`${label(m)}: names a namespace (the manifests are namespace-agnostic)`);
    const spec = podSpec(o);
    if (!spec) continue;
    for (const c of [...(spec.initContainers ?? []), ...(spec.containers ?? [])] as Obj[]) {
      const where = `${label(m)} container ${String(c.name)}`;
      if (typeof c.image !== 'string' || c.image.trim() === '') problems.push(`${where}: no image`);
      for (const e of (c.env ?? []) as Obj[]) {
        if (!variables.has(e.name)) problems.push(`${where}: env ${String(e.name)} is not a variable lethe reads`);
      }
      for (const from of (c.envFrom ?? []) as Obj[]) {
        const ref = from.configMapRef ? byName('ConfigMap', from.configMapRef.name) : from.secretRef ? byName('Secret', from.secretRef.name) : undefined;
        if (!ref) {
          problems.push(`${where}: envFrom names ${JSON.stringify(from.configMapRef ?? from.secretRef)}, which is not among the manifests`);
          continue;
        }
        const keys = Object.keys({ ...(ref.object.data as Obj | undefined), ...(ref.object.stringData as Obj | undefined) });
        for (const k of keys) if (!variables.has(k)) problems.push(`${label(ref)}: key ${k} is passed as an environment variable lethe does not read`);
      }
      const sc = (c.securityContext ?? {}) as Obj;
      if (sc.allowPrivilegeEscalation !== false) problems.push(`${where}: allowPrivilegeEscalation must be false`);
      if (sc.readOnlyRootFilesystem !== true) problems.push(`${where}: readOnlyRootFilesystem must be true`);
      if (!(sc.capabilities?.drop ?? []).includes('ALL')) problems.push(`${where}: capabilities must drop ALL`);
      if (!c.resources?.requests || !c.resources?.limits) problems.push(`${where}: resources need requests and limits`);
      if (o.kind === 'Deployment') {
        if (c.readinessProbe?.httpGet?.path !== '/readyz') problems.push(`${where}: readinessProbe must GET /readyz`);
        if (c.livenessProbe?.httpGet?.path !== '/healthz') problems.push(`${where}: livenessProbe must GET /healthz`);
        if (!c.startupProbe) problems.push(`${where}: no startupProbe`);
      }
    }
    if (spec.securityContext?.runAsNonRoot !== true) problems.push(`${label(m)}: the pod must set runAsNonRoot`);
  }
  const kustomization = path.join(dir, KUSTOMIZATION);
  if (!existsSync(kustomization)) {
    problems.push(`${KUSTOMIZATION}: missing`);
  } else {
    const k = parseAllDocuments(readFileSync(kustomization, 'utf8'))[0]?.toJS() as Obj | undefined;
    const listed = new Set<string>((k?.resources ?? []) as string[]);
    const files = new Set(manifests.map((m) => m.file));
    for (const f of files) if (!listed.has(f)) problems.push(`${KUSTOMIZATION}: does not list ${f}`);
    for (const f of listed) if (!files.has(f)) problems.push(`${KUSTOMIZATION}: lists ${f}, which is not a manifest here`);
  }
  return problems;
}

/** Every problem of `manifests`, each naming its file and object; empty when they pass. */
export async function validateManifests(manifests: readonly Manifest[], variables: Iterable<string>, dir: string = K8S_DIR): Promise<string[]> {
  return [...(await schemaProblems(manifests)), ...typeProblems(manifests), ...letheProblems(manifests, new Set(variables), dir)];
}
