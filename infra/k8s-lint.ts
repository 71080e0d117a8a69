/**
 * Lints the Kubernetes manifests in infra/k8s offline (infra/k8s-validate.ts: the
 * Kubernetes API schema, unknown fields, lethe's own rules). Prints each problem and
 * exits 1 when there is any.
 *
 * Usage: npm run lint:k8s            (tsx infra/k8s-lint.ts)
 */
import { CONFIG_VARIABLES } from '../src/config/index.js';
import { loadManifests, validateManifests } from './k8s-validate.js';

const manifests = loadManifests();
const problems = await validateManifests(manifests, CONFIG_VARIABLES);
for (const p of problems) process.stderr.write(`${p}\n`);
process.stdout.write(`${manifests.length} Kubernetes objects checked: ${problems.length === 0 ? 'no problems' : `${problems.length} problem(s)`}\n`);
process.exitCode = problems.length === 0 ? 0 : 1;
