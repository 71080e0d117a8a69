/** The audit log's events: the actions it records, what an event carries, the chain's tip. */

export type AuditAction =
  | 'key.create'
  | 'key.lease'
  | 'key.lease.release'
  | 'key.fence'
  | 'key.unfence'
  | 'key.destroy'
  | 'kek.epoch.create'
  | 'kek.rotate'
  | 'kek.epoch.retire'
  | 'kek.epoch.redestroy'
  | 'kek.epoch.redate'
  | 'certificate.key.rotate'
  | 'artifact.write'
  | 'artifact.regenerate'
  | 'artifact.erase'
  | 'artifact.key.destroy'
  | 'training.exposure'
  | 'backup.restore'
  | 'subject.reinstate'
  | 'erasure.report.link'
  | 'erasure.dismissal.propose'
  | 'erasure.dismissal.approve'
  | 'erasure.dismissal.revoke'
  | 'erasure.redaction.override'
  | 'erasure.certificate.sign'
  | 'erasure.probe.result'
  | 'erasure.certificate.refuse'
  | 'audit.head.anchor';

export type AuditDetail = Readonly<Record<string, string | number | boolean | null>>;

export interface AuditEvent {
  readonly actor: string;
  readonly action: AuditAction;
  readonly keyId?: string | undefined;
  readonly subjectHash?: Uint8Array | undefined;
  readonly epoch?: number | undefined;
  readonly detail?: AuditDetail | undefined;
}

/** The action of the row an append writes when it anchors a head that had no MAC. */
export const ANCHOR_ACTION: AuditAction = 'audit.head.anchor';

/** The chain's tip: the last row's sequence number and MAC (seq 0 and 32 zero bytes before the first row). */
export interface AuditTip {
  readonly seq: number;
  readonly mac: Uint8Array;
}
