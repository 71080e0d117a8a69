/**
 * The build of `npm start`: each file under src/ transpiled to dist/ by esbuild, types
 * erased and not checked (tsc checks them in `npm test` and CI; `npm run build` still
 * emits declarations for the package). One file in, one file out, so paths read from
 * import.meta.url (drizzle/, package.json, workers) stay where tsc would put them.
 */
import { readdirSync } from 'node:fs';
import path from 'node:path';

/** Every .ts file under `dir`, declaration files left out. */
function sources(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((d) => {
    const p = path.join(dir, d.name);
    if (d.isDirectory()) return sources(p);
    return d.name.endsWith('.ts') && !d.name.endsWith('.d.ts') ? [p] : [];
  });
}

export async function buildDist(root) {
  const { build } = await import('esbuild');
  await build({
    absWorkingDir: root,
    entryPoints: sources(path.join(root, 'src')),
    outdir: path.join(root, 'dist'),
    outbase: path.join(root, 'src'),
    format: 'esm',
    platform: 'node',
    target: 'node20',
    sourcemap: 'linked',
    logLevel: 'warning',
  });
}
