/**
 * The container files without a container engine: infra/Dockerfile read instruction by
 * instruction, infra/docker-compose.yml validated against the Compose Specification's
 * JSON schema (as shipped in dclint) — and a broken compose file rejected by the same
 * check, so it cannot pass by checking nothing. .ci/run builds the image when an engine
 * answers.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { DCLinter } from 'dclint';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../support/vault.js';

interface Instruction {
  readonly keyword: string;
  readonly args: string;
}

/** The Dockerfile's instructions in order: comments dropped, continuation lines joined. */
function instructions(text: string): Instruction[] {
  const out: Instruction[] = [];
  let current = '';
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (current === '' && (line === '' || line.startsWith('#'))) continue;
    if (line.startsWith('#')) continue;
    current += (current ? ' ' : '') + line.replace(/\\$/, '').trim();
    if (line.endsWith('\\')) continue;
    const m = /^(\S+)\s*(.*)$/.exec(current)!;
    out.push({ keyword: m[1]!.toUpperCase(), args: m[2]! });
    current = '';
  }
  return out;
}

/** The schema errors dclint finds in a compose file (its style rules off: only the Compose Specification). */
function composeSchemaErrors(file: string): string[] {
  const linter = new DCLinter({ rules: {}, quiet: true, debug: false, exclude: [] });
  const results = linter.lintFiles([file], false) as Array<{ messages: Array<{ type: string; message: string }> }>;
  return results.flatMap((r) => r.messages.filter((m) => m.type === 'error').map((m) => m.message));
}

describe('infra/Dockerfile', () => {
  const steps = instructions(readFileSync('infra/Dockerfile', 'utf8'));
  const final = steps.slice(steps.map((s) => s.keyword).lastIndexOf('FROM'));
  const json = (keyword: string) => JSON.parse(final.find((s) => s.keyword === keyword)!.args) as string[];

  it('pins every base image to one release (x.y.z tag or digest)', () => {
    const froms = steps.filter((s) => s.keyword === 'FROM').map((s) => s.args.split(/\s+/)[0]!);
    expect(froms.length).toBe(2);
    for (const image of froms) expect(image).toMatch(/(:\d+\.\d+\.\d+[^@\s]*|@sha256:[0-9a-f]{64})$/);
  });

  it('copies patches/ before npm ci (the postinstall applies them)', () => {
    const patches = steps.findIndex((s) => s.keyword === 'COPY' && /^patches\s/.test(s.args));
    const ci = steps.findIndex((s) => s.keyword === 'RUN' && /\bnpm ci\b/.test(s.args));
    expect(patches).toBeGreaterThanOrEqual(0);
    expect(ci).toBeGreaterThan(patches);
  });

  it('runs as a non-root user it creates', () => {
    const user = final.find((s) => s.keyword === 'USER')?.args;
    expect(user).toBeDefined();
    expect(user).not.toMatch(/^(root|0)(:|$)/);
    expect(final.some((s) => s.keyword === 'RUN' && new RegExp(`useradd [^&]*\\b${user}\\b`).test(s.args))).toBe(true);
    // the USER comes before the entrypoint: nothing of lethe runs as root
    expect(final.findIndex((s) => s.keyword === 'USER')).toBeLessThan(final.findIndex((s) => s.keyword === 'ENTRYPOINT'));
  });

  it('has a HEALTHCHECK on /healthz', () => {
    const check = final.find((s) => s.keyword === 'HEALTHCHECK');
    expect(check?.args).toMatch(/\/healthz/);
    expect(check?.args).toMatch(/^(--\S+\s+)*CMD\s/);
  });

  it('runs `lethe serve` from the built dist/', () => {
    expect([...json('ENTRYPOINT'), ...json('CMD')]).toEqual(['node', 'dist/cli/main.js', 'serve']);
    // dist/cli/main.js is what `npm run build` makes of src/cli/main.ts
    const build = JSON.parse(readFileSync('tsconfig.build.json', 'utf8')) as { compilerOptions?: { outDir?: string; rootDir?: string } };
    expect(build.compilerOptions?.outDir?.replace(/^\.\//, '')).toBe('dist');
    expect(existsSync('src/cli/main.ts')).toBe(true);
    expect(final.some((s) => s.keyword === 'COPY' && /--from=build \/app\/dist \.\/dist/.test(s.args))).toBe(true);
    expect(final.some((s) => s.keyword === 'COPY' && /^drizzle\s/.test(s.args))).toBe(true);
  });
});

describe('infra/docker-compose.yml', () => {
  const compose = parse(readFileSync('infra/docker-compose.yml', 'utf8'), { merge: true }) as {
    services: Record<string, { command?: string[]; environment?: Record<string, string>; depends_on?: Record<string, { condition: string }>; image?: string }>;
  };

  it('is valid under the Compose Specification schema', () => {
    expect(composeSchemaErrors('infra/docker-compose.yml')).toEqual([]);
  });

  it('the same check rejects a misspelled key and an unknown depends_on condition', () => {
    const broken = path.join(tempDir('lethe-compose-'), 'compose.yml');
    writeFileSync(broken, 'services:\n  lethe:\n    imagee: lethe:local\n');
    expect(composeSchemaErrors(broken).join('\n')).toMatch(/additional properties/);
    writeFileSync(
      broken,
      'services:\n  lethe:\n    image: lethe:local\n    depends_on:\n      migrate:\n        condition: service_done\n  migrate:\n    image: lethe:local\n',
    );
    expect(composeSchemaErrors(broken).length).toBeGreaterThan(0);
  });

  it('runs `lethe migrate` once before lethe starts, with the same image and environment', () => {
    const { migrate, lethe } = compose.services;
    expect(migrate?.command).toEqual(['migrate']);
    expect(lethe?.depends_on).toEqual({ migrate: { condition: 'service_completed_successfully' } });
    expect(migrate?.depends_on?.postgres?.condition).toBe('service_healthy');
    expect(migrate?.image).toBe(lethe?.image);
    expect(migrate?.environment).toEqual(lethe?.environment);
    // the image runs with NODE_ENV=production on PostgreSQL: lethe serve does not migrate by itself
    expect(lethe?.environment?.DATABASE_URL).toMatch(/^postgres:\/\//);
    expect(lethe?.environment?.LETHE_AUTO_MIGRATE).toBeUndefined();
    expect(readFileSync('infra/Dockerfile', 'utf8')).toMatch(/NODE_ENV=production/);
  });
});
