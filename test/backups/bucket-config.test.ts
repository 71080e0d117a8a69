/**
 * The backup bucket (or folder) must be another than the live one, whichever of the
 * two names is left to its default: a backup in the live bucket is no backup.
 */
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config/index.js';
import { testEnv } from '../support/vault.js';

describe('the backup bucket must not be the live bucket', () => {
  const problemsOf = (extra: Record<string, string>): string[] => {
    try {
      loadConfig(testEnv({ dataDir: path.join(tmpdir(), 'lethe-config-only-never-created'), extra }));
    } catch (e) {
      if (e instanceof ConfigError) return e.problems.map((p) => p.variable);
      throw e;
    }
    return [];
  };

  it('refuses S3_BACKUP_BUCKET equal to S3_BUCKET when both are given', () => {
    expect(problemsOf({ S3_BUCKET: 'same-bucket', S3_BACKUP_BUCKET: 'same-bucket' })).toContain('S3_BACKUP_BUCKET');
  });

  it("refuses S3_BACKUP_BUCKET equal to the default live bucket 'lethe'", () => {
    expect(problemsOf({ S3_BACKUP_BUCKET: 'lethe' })).toContain('S3_BACKUP_BUCKET');
  });

  it("refuses S3_BUCKET equal to the default backup bucket 'lethe-backups'", () => {
    expect(problemsOf({ S3_BUCKET: 'lethe-backups' })).toContain('S3_BACKUP_BUCKET');
  });
});
