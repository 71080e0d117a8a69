/**
 * How far the database's schema is behind drizzle/: the migrations in the journal that
 * drizzle's migrator would apply now. Read-only: it creates nothing (drizzle's own
 * `migrate` creates its bookkeeping table first), so a service that must not migrate
 * can ask it of a database that was never migrated.
 */
import { sql } from 'drizzle-orm';
import { readMigrationFiles } from 'drizzle-orm/migrator';
import { type Executor, MIGRATIONS_DIR, queryRows } from './client.js';

/** drizzle's bookkeeping table (its defaults, which `Db.migrate` uses). */
const MIGRATIONS_TABLE = 'drizzle.__drizzle_migrations';

/**
 * The number of migrations in drizzle/ not yet applied, by drizzle's own rule: a
 * migration is applied when the newest recorded one was created at or after it.
 */
export async function pendingMigrations(exec: Executor): Promise<number> {
  const journal = readMigrationFiles({ migrationsFolder: MIGRATIONS_DIR });
  const [table] = await queryRows<{ present: string | null }>(exec, sql`select to_regclass(${MIGRATIONS_TABLE})::text as present`);
  if (!table?.present) return journal.length;
  const [last] = await queryRows<{ created_at: string | number | null }>(exec, sql.raw(`select max(created_at) as created_at from ${MIGRATIONS_TABLE}`));
  const applied = last?.created_at === null || last?.created_at === undefined ? undefined : Number(last.created_at);
  return journal.filter((m) => applied === undefined || applied < m.folderMillis).length;
}
