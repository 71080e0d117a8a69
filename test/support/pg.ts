/** A fresh PostgreSQL database per test file, dropped afterwards. */
import { randomBytes } from 'node:crypto';
import postgres from 'postgres';
import { inject } from 'vitest';

export interface TestDatabase {
  readonly url: string;
  readonly name: string;
  drop(): Promise<void>;
}

export function adminUrl(): string {
  return inject('pgAdminUrl');
}

export async function createTestDatabase(prefix = 'lethe_t'): Promise<TestDatabase> {
  const admin = adminUrl();
  const name = `${prefix}_${randomBytes(6).toString('hex')}`;
  const sql = postgres(admin, { max: 1, onnotice: () => {} });
  try {
    await sql.unsafe(`create database ${name}`);
  } finally {
    await sql.end({ timeout: 1 });
  }
  const url = new URL(admin);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    name,
    async drop() {
      const s = postgres(admin, { max: 1, onnotice: () => {} });
      try {
        await s.unsafe(`drop database if exists ${name} with (force)`);
      } finally {
        await s.end({ timeout: 1 });
      }
    },
  };
}
