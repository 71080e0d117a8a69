/**
 * The probe's result in the audit chain: what certify signs must be what the probe
 * found, not what the erasure's row says it found. The probe's commit appends an
 * `erasure.probe.result` row (MAC'd under the root key's audit subkey) with the SHA-256
 * of its result; certify compares the row's `state.probe` with the newest intact one and,
 * when they differ or none is there (someone edited the row, or skipped the probe by
 * moving the step), probes again itself before signing. It also requires the key it
 * says destroyed to have its `key.destroy` audit row.
 */
import { bytesToHex } from '@noble/hashes/utils.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { canonicalJson, type Json, utf8 } from '../crypto/index.js';
import type { Executor } from '../db/client.js';
import type { AuditEvent } from '../vault/audit.js';
import type { ErasureResources } from './resources.js';
import type { ErasureState } from './state.js';

/** The digest of a probe's result as the state records it (canonical JSON). */
export function probeDigest(probe: ErasureState['probe']): string {
  return bytesToHex(sha256(utf8.encode(canonicalJson(JSON.parse(JSON.stringify(probe ?? null)) as Json))));
}

/** The audit row the probe's commit appends. */
export function probedEvent(erasureId: string, probe: NonNullable<ErasureState['probe']>): AuditEvent {
  return {
    actor: 'erasure',
    action: 'erasure.probe.result',
    keyId: erasureId,
    detail: { erasureId, digest: probeDigest(probe), recovered: probe.recovered, matches: probe.matches.length },
  };
}

/** Whether the row's probe result is the one the audit chain recorded last for this erasure. */
export async function probeAudited(res: Pick<ErasureResources, 'audit'>, exec: Executor, erasureId: string, probe: ErasureState['probe']): Promise<boolean> {
  if (!probe) return false;
  const row = await res.audit.latest(exec, 'erasure.probe.result', erasureId);
  return row !== undefined && row.intact && row.detail.digest === probeDigest(probe);
}

/** Whether the audit chain holds an intact `key.destroy` row for `keyId`. */
export async function destructionAudited(res: Pick<ErasureResources, 'audit'>, exec: Executor, keyId: string): Promise<boolean> {
  const row = await res.audit.latest(exec, 'key.destroy', keyId);
  return row !== undefined && row.intact;
}
