import { defineConfig } from 'vitest/config';

/**
 * The checks CI runs as steps of their own, outside `npm test` (test/**\/*.ci.ts):
 * `npm start` in a fresh copy of the repository, and `npm install` of the repository from
 * a git URL (test/cli/git-install.ci.ts), the README followed literally in a fresh copy
 * (test/docs/readme.ci.ts), and the MCP Inspector listing `lethe mcp`'s tools (test/mcp/inspector.ci.ts), install and build everything, which takes
 * minutes and both cores, so they do not share the suite's time. `.ci/run` runs
 * them after the suite and counts them in its final line; `npm run test:ci-steps` runs
 * them by hand. They need no PostgreSQL or MinIO of the suite's.
 */
export default defineConfig({
  test: {
    include: ['test/**/*.ci.ts'],
    testTimeout: 600_000,
    hookTimeout: 120_000,
    pool: 'forks',
    maxWorkers: 1,
  },
});
