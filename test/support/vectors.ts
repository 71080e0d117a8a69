/**
 * A second Vectors service on a test vault's database and keys (it hears no
 * destruction event): what the index-rebuild tests build their own index with.
 * `keys` stands in for the vault's key service (a test may wrap it).
 */
import { createLogger } from '../../src/observability/logger.js';
import { createMetrics } from '../../src/observability/metrics.js';
import type { KeyService } from '../../src/vault/keys.js';
import { Vectors } from '../../src/vectors/service.js';
import { ShingleHasher } from '../../src/vectors/shingles.js';
import type { TestVault } from './vault.js';

export async function vectorsOn(tv: TestVault, keys: KeyService = tv.app.keys): Promise<Vectors> {
  return new Vectors({
    db: tv.app.db.db,
    embedder: tv.app.vectors.embedder,
    keys,
    versionKeys: tv.app.versionKeys,
    shingles: new ShingleHasher(await tv.app.provider.deriveSystemKey('shingle-index')),
    logger: createLogger('silent'),
    metrics: createMetrics(),
  });
}
