/**
 * The database schema: one table per concept, row types inferred from it; each
 * module's tables in a file of their own under schema/ (the owners: src/db/README.md).
 *
 * Invariants (see src/vault/README.md):
 * - No plaintext subject content and no subject id is stored: subjects are named by
 *   a keyed hash (HMAC-SHA256 under a subkey of the root key).
 * - subject_keys holds only live keys. Destroying a key removes its row; the
 *   destruction ledger records that it happened, never what the key was.
 * - Leases do not write subject_keys: a lease is an audit row (lease id, expiry),
 *   and the lease path takes only shared row locks.
 * - audit_log is append-only and MAC-chained; audit_head holds the chain's tip.
 */
export { bytea } from './schema/columns.js';
export * from './schema/vault.js';
export * from './schema/log.js';
export * from './schema/artifacts.js';
export * from './schema/vectors.js';
export * from './schema/backups.js';
export * from './schema/erasure.js';
