/**
 * `npm run build` (and prepack): dist/ from nothing, twice — the ES module build
 * (tsconfig.json → dist/esm) and the CommonJS build (tsconfig.cjs.json → dist/cjs, with
 * a package.json there saying so). package.json's exports send `import` to the one and
 * `require` to the other, each with its declarations.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');

rmSync(path.join(here, 'dist'), { recursive: true, force: true });
for (const project of ['tsconfig.json', 'tsconfig.cjs.json']) execFileSync(process.execPath, [tsc, '-p', path.join(here, project)], { stdio: 'inherit' });
mkdirSync(path.join(here, 'dist', 'cjs'), { recursive: true });
writeFileSync(path.join(here, 'dist', 'cjs', 'package.json'), `${JSON.stringify({ type: 'commonjs' })}\n`);
